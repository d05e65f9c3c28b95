"""The `--dra-*` options and the `dra_*` markers: all the plugin registers when inactive."""

from __future__ import annotations

import contextlib
import os
from typing import Any

import pytest

from conformance.plugin.markers import (
    CAPABILITY_MARK,
    DEVICES_MARK,
    KUBELET_ERRORS_MARK,
    NODE_EXCLUSIVE_MARK,
    REQUIREMENT_MARK,
    RUN_EARLY_MARK,
)
from conformance.report.options import add_report_options

MARKERS = (
    f"{REQUIREMENT_MARK}(id): the catalog requirement (scenarios/requirements.yaml) this test "
    "verifies",
    f"{DEVICES_MARK}(kind, count=1, exclusive=False, across_nodes=False, guard=False): devices "
    "of a profile device kind the test needs; count may be 'all'. They are leased on one node "
    "that publishes enough of them, and the test's pods are pinned there (device_lease.node), "
    "unless across_nodes=True (the pods must span nodes). exclusive=True waits until no other "
    "test holds any device (such tests run last). guard=True: no other test may be allocated a "
    "device of the kind where this test's pods go (a device reuse probe). Repeatable.",
    f'{NODE_EXCLUSIVE_MARK}(kind="default", at_least=1, restarts_kubelet=False): the test leases '
    "one node whole (one with at least at_least node-local devices of kind); device_lease.node "
    "names it. restarts_kubelet=True: never a node with a no-kubelet-restart mark. "
    f"{DEVICES_MARK}() marks then count what the test uses on other nodes.",
    f"{CAPABILITY_MARK}(name, ...): profile capabilities the test needs beyond its "
    "requirement's gates",
    f"{RUN_EARLY_MARK}(why): start this test before all others: it starts a clock (such as "
    "a kubelet grace period) that the run waits out before it ends",
    f"{KUBELET_ERRORS_MARK}(why): the test causes kubelet DRA errors on purpose (a prepare "
    "fault, a kubelet or driver restart): the per-test kubelet check then counts no error and "
    "no FailedPrepare/FailedUnprepareDynamicResources event against it",
)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from conformance.plugin import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def _add(group: Any, *flags: str, **kwargs: Any) -> None:
    # The report's standalone mode (conformance.report.standalone) may have defined it first.
    with contextlib.suppress(ValueError):
        group.addoption(*flags, **kwargs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dra-conformance", "DRA conformance")
    _add(
        group,
        "--dra-profile",
        dest="dra_profile",
        metavar="FILE",
        default=None,
        help="driver profile (e.g. drivers/fake/profile.yaml); activates the harness",
    )
    _add(
        group,
        "--dra-cluster",
        dest="dra_cluster",
        choices=("kind", "existing", "in-cluster"),
        default="kind",
        help="kind: create (or reuse) a kind cluster for the run; existing: use "
        "--dra-kubeconfig; in-cluster: the pod's service account (the driver must be installed)",
    )
    _add(
        group,
        "--dra-kubeconfig",
        dest="dra_kubeconfig",
        metavar="PATH",
        default=None,
        help="kubeconfig of an existing cluster (default $KUBECONFIG)",
    )
    _add(
        group,
        "--dra-context",
        dest="dra_kube_context",
        metavar="NAME",
        default=None,
        help="kubeconfig context of an existing cluster",
    )
    _add(
        group,
        "--dra-cluster-name",
        dest="dra_cluster_name",
        default="dra-conformance",
        help="name of the kind cluster (default dra-conformance)",
    )
    _add(
        group,
        "--dra-k8s",
        dest="dra_k8s",
        default="v1.37.2",
        metavar="VERSION",
        help="Kubernetes version of a kind cluster the run creates (default v1.37.2)",
    )
    _add(
        group,
        "--dra-keep-cluster",
        dest="dra_keep_cluster",
        nargs="?",
        const="yes",
        default="yes",
        choices=("yes", "no"),
        help="keep the kind cluster after the run (default yes, so the next run starts fast); "
        "--dra-keep-cluster=no deletes it",
    )
    _add(
        group,
        "--dra-report-dir",
        dest="dra_report_dir",
        metavar="DIR",
        default=None,
        help="run directory for reports and diagnostics (default reports/<run-id>)",
    )
    _add(
        group,
        "--dra-timeout-scale",
        dest="dra_timeout_scale",
        type=float,
        default=1.0,
        metavar="FACTOR",
        help="multiply every profile timeout (slow machines: 2 or 3)",
    )
    _add(
        group,
        "--dra-allow-disruptive",
        dest="dra_allow_disruptive",
        action="store_true",
        help="run disruptive requirements (drain, taints, driver restart, PriorityClasses) on "
        "an existing cluster; they always run on a cluster the run created",
    )
    _add(
        group,
        "--dra-run-id",
        dest="dra_run_id",
        default=None,
        metavar="ID",
        help="run id (a label value); default <UTC time>-<random>",
    )
    _add(
        group,
        "--dra-requirement",
        dest="dra_requirements",
        action="append",
        default=[],
        metavar="ID",
        help="run only the scenario tests of this requirement (repeatable), e.g. DRA-ALLOC-002",
    )
    _add(
        group,
        "--dra-lease-dir",
        dest="dra_lease_dir",
        default=None,
        metavar="DIR",
        help="deprecated, ignored: the device lease book is kept in the cluster under test",
    )
    _add(
        group,
        "--dra-lease-book-name",
        dest="dra_lease_book_name",
        default=None,
        metavar="NAME",
        help="the ConfigMap (namespace dra-conformance) of the device lease book, shared by "
        "every run against the cluster (default dra-conformance-leases); only a run nested "
        "inside another holder's exclusive lease (a broken-driver check) takes its own",
    )
    _add(
        group,
        "--dra-lease-book",
        dest="dra_lease_book",
        choices=("file", "cluster"),
        default=None,
        help="deprecated, ignored: the device lease book is always kept in the cluster under "
        "test (a ConfigMap in namespace dra-conformance, shared by runs from any machine; "
        "holders renew, a killed one expires in 60 s)",
    )
    _add(
        group,
        "--dra-probe-capabilities",
        dest="dra_probe_capabilities",
        action="store_true",
        help="also run the requirements of capabilities the profile does not declare, and "
        "report per capability what was declared and what was observed (outside the verdict)",
    )
    _add(
        group,
        "--dra-skip-install",
        dest="dra_skip_install",
        action="store_true",
        help="do not install the driver even if the profile says how (already done)",
    )
    _add(
        group,
        "--dra-workload-image",
        dest="dra_workload_image",
        # The suite's image names the workload image loaded beside it (no Docker in a pod).
        default=os.environ.get("DRA_WORKLOAD_IMAGE") or None,
        metavar="REF",
        help="workload image reference: any image with sh, env and sleep that the nodes can "
        "pull (default: built locally; loaded into a kind cluster the run makes, or by "
        "`cluster up` and `driver install`)",
    )
    _add(
        group,
        "--dra-upgrade-to",
        dest="dra_upgrade_to",
        default=None,
        metavar="VERSION",
        help="rehearse an in-place upgrade of the run's kind cluster to this Kubernetes "
        "version with live claims (the upgrade suite, scenarios/upgrade, which the gate command "
        "runs when asked to rehearse); without it that suite is neither collected nor in the "
        "catalog",
    )
    add_report_options(parser)
