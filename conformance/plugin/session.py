"""Run set-up (controller or single process): cluster, driver install, run context; the
xdist hand-over to workers, the report collector, SIGTERM, the report header."""

from __future__ import annotations

import json
import re
import signal
import sys
from collections.abc import Callable
from typing import Any

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from conformance.errors import ConformanceError
from conformance.kube.cleanup import (
    NamespaceRegistry,
    delete_namespace,
)
from conformance.kube.client import load_clients
from conformance.kube.readiness import readiness_state
from conformance.model.naming import is_label_value
from conformance.model.profile import Profile, ProfileError
from conformance.model.profile_parse import load_profile
from conformance.plugin.driver_identity import (
    DRIVER_IDENTITY_KEY,
    INSTALLED_KEY,
    driver_identity,
)
from conformance.plugin.driver_metrics import DriverMetricsRecorder
from conformance.plugin.durations import DurationRecorder
from conformance.plugin.finish import InterruptHooks
from conformance.plugin.leftovers_note import LEFTOVERS_KEY, register_and_find_leftovers
from conformance.plugin.node_identity import NODE_FACTS_KEY, node_identity
from conformance.plugin.options import MARKERS
from conformance.plugin.preflight import check_cluster_block, check_workload_image
from conformance.plugin.run_facts import run_facts
from conformance.plugin.setup_failure import stop_before_testing
from conformance.plugin.state import (
    CONTEXT_KEY,
    WORKERINPUT_CONTEXT,
    WORKERINPUT_DURATIONS,
    PluginState,
    get_run_context,
    is_worker,
    load_run_catalog,
    plugin_state,
)
from conformance.report.collector import install_report_collector
from conformance.report.facts import (
    WORKERINPUT_RUN_DIR,
    WORKERINPUT_RUN_FACTS,
    WORKERINPUT_RUN_ID,
    RunFacts,
    get_run_id,
    set_run_facts,
)
from conformance.report.options import resolve_run_dir
from conformance.run.context import ClusterInfo, RunContext, build_run_context, read_cluster_facts
from conformance.run.durations import load_durations
from conformance.run.lease import (
    pid_alive,
)

DNS_SUBDOMAIN = re.compile(
    r"(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
)


def pytest_configure(config: pytest.Config) -> None:
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    state = plugin_state(config)
    profile_path = config.getoption("dra_profile", None)
    if not profile_path:
        return
    scale = config.getoption("dra_timeout_scale")
    if scale is None or scale <= 0:
        raise pytest.UsageError(f"--dra-timeout-scale must be > 0, got {scale}")
    run_id = config.getoption("dra_run_id")
    if run_id and not is_label_value(run_id):
        raise pytest.UsageError(
            f"--dra-run-id {run_id!r} must be a Kubernetes label value "
            "(<= 63 characters of A-Z a-z 0-9 - _ .)"
        )
    try:
        state.profile = load_profile(profile_path)
    except ProfileError as exc:
        raise pytest.UsageError(f"{exc}\n(see docs/profile.md for the format)") from None
    state.catalog = load_run_catalog(config)
    for dest, flag in (
        ("dra_lease_dir", "--dra-lease-dir"),
        ("dra_lease_book", "--dra-lease-book"),
    ):
        if config.getoption(dest, None) and not is_worker(config):
            state.notes.append(
                f"{flag} is deprecated and ignored: the device lease book is kept in the "
                "cluster under test (ConfigMap dra-conformance/dra-conformance-leases)"
            )
    book_name = config.getoption("dra_lease_book_name", None)
    if book_name is not None and not DNS_SUBDOMAIN.fullmatch(book_name):
        raise pytest.UsageError(
            f"--dra-lease-book-name {book_name!r} is not a ConfigMap name (lower-case letters, "
            "digits, '-' and '.', at most 253 characters)"
        )
    config.pluginmanager.register(InterruptHooks(config), "dra_conformance_interrupt")
    if is_worker(config):
        state.durations = config.workerinput.get(WORKERINPUT_DURATIONS) or {}  # type: ignore[attr-defined]
        data = config.workerinput.get(WORKERINPUT_CONTEXT)  # type: ignore[attr-defined]
        if data:
            context = RunContext.from_json(data, state.profile)
            config.stash[CONTEXT_KEY] = context
            given = config.workerinput.get(WORKERINPUT_RUN_FACTS)  # type: ignore[attr-defined]
            # the controller's facts, with what only it read (the driver's images)
            _publish_facts(config, context, RunFacts.from_dict(given) if given else None)
            # A killed worker (SIGTERM) takes the Ctrl-C path too: InterruptHooks, then the
            # current test's fixtures undo its cordons, taints and faults.
            _install_sigterm_handler(state)
        # Workers too: only they can label and write each test's Allure result.
        install_report_collector(config)
        return
    get_run_id(config)
    state.durations = load_durations(state.profile.driver)
    if getattr(config.option, "maxschedchunk", "absent") is None:
        # xdist's load scheduling sends each worker a chunk of consecutive tests; the run order
        # puts the longest first, so the chunk would give one worker both node restarts. One
        # at a time, workers take tests in the run's order.
        config.option.maxschedchunk = 1
    config.pluginmanager.register(
        DurationRecorder(state.profile.driver), "dra_conformance_durations"
    )
    config.pluginmanager.register(DriverMetricsRecorder(config), "dra_conformance_driver_metrics")
    if hasattr(config.hook, "pytest_configure_node"):  # xdist loaded, under whatever name
        config.pluginmanager.register(_XdistHooks(config), "dra_conformance_xdist")
    install_report_collector(config)


def _publish_facts(
    config: pytest.Config, context: RunContext, given: RunFacts | None = None
) -> None:
    identity = config.stash.get(DRIVER_IDENTITY_KEY, None)
    nodes = config.stash.get(NODE_FACTS_KEY, None)
    set_run_facts(config, given or run_facts(context, identity, nodes))


# --- cluster and run context (controller / single process) ----------------------------------


class _XdistHooks:
    """Registered only when xdist is loaded (its hooks are unknown otherwise)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_configure_node(self, node: Any) -> None:
        context = get_run_context(self.config)
        node.workerinput[WORKERINPUT_CONTEXT] = context.to_json() if context else None
        node.workerinput[WORKERINPUT_DURATIONS] = plugin_state(self.config).durations
        node.workerinput[WORKERINPUT_RUN_ID] = get_run_id(self.config)
        node.workerinput[WORKERINPUT_RUN_DIR] = str(resolve_run_dir(self.config))
        if context is not None:
            stash = self.config.stash
            facts = run_facts(
                context, stash.get(DRIVER_IDENTITY_KEY, None), stash.get(NODE_FACTS_KEY, None)
            )
            node.workerinput[WORKERINPUT_RUN_FACTS] = facts.to_dict()

    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        """Lease-aware load scheduling for `--dist load` (xdist's default with -n)."""
        context = get_run_context(config)
        if context is None or config.getvalue("dist") != "load":
            return None  # xdist's own
        from conformance.plugin.fixtures import lease_book_if_reachable
        from conformance.plugin.scheduling import LeaseAwareScheduling

        return LeaseAwareScheduling(
            config,
            log,
            harness_dir=context.harness_dir,
            nodes=context.nodes,
            book=lease_book_if_reachable(config, context),
        )

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        # A worker died mid-test: its namespaces hold devices other tests are about to lease.
        context = get_run_context(self.config)
        if error is None or context is None:
            return
        from conformance.plugin.fixtures import reclaim_worker_leases

        reclaim_worker_leases(self.config, context, node.gateway.id)
        registry = NamespaceRegistry(context.harness_dir / "namespaces")
        k8s = load_clients(context.cluster.kubeconfig, context.cluster.context)
        dead = [r for r in registry.entries() if not pid_alive(r.get("pid", -1))]
        for record in dead:
            delete_namespace(
                k8s, registry, record["namespace"], timeout=context.timeout("namespaceDeleted")
            )


def _api_message(exc: Exception) -> str:
    """What the API server said (e.g. which verb on which resource was forbidden), if JSON."""
    try:
        return str(json.loads(getattr(exc, "body", None) or "{}").get("message") or "")
    except (ValueError, AttributeError):
        return ""


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    state = plugin_state(config)
    if state.profile is None or is_worker(config) or config.option.collectonly:
        return
    try:
        context = _set_up_run(config, state.profile)
        check_workload_image(context)  # before any requirement runs: exit 2, never "failed"
    except ConformanceError as exc:
        stop_before_testing(config, exc.problem, exc.remedy)
        return
    except OSError as exc:
        stop_before_testing(config, f"could not set up the run: {exc}")
        return
    except (ApiException, urllib3.exceptions.HTTPError) as exc:
        status = getattr(exc, "status", None)
        detail = f"HTTP {status} {exc.reason}" if status else str(exc)
        detail += f" ({_api_message(exc)})" if _api_message(exc) else ""
        stop_before_testing(
            config,
            f"could not read the cluster: {detail}",
            "check --kubeconfig/--context and that the account may list nodes, "
            "ResourceSlices and DeviceClasses",
        )
        return
    config.stash[CONTEXT_KEY] = context
    # The driver is installed and awaited: name what runs (never stops the run).
    config.stash[DRIVER_IDENTITY_KEY] = driver_identity(
        context, config.stash.get(INSTALLED_KEY, None)
    )
    config.stash[NODE_FACTS_KEY] = node_identity(context)
    _publish_facts(config, context)
    _install_sigterm_handler(state)
    note = config.stash[LEFTOVERS_KEY] = register_and_find_leftovers(config, context)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if note and reporter is not None and config.get_verbosity() < 0:
        reporter.write_line(note)  # -q (as `dra-conformance run` calls pytest) shows no header


def _provision(config: pytest.Config, profile: Profile, wants_install: bool) -> tuple[Any, Any]:
    """(cluster handle, what was built beside it): the driver's image and helm are built while
    a kind cluster is created, not after it."""
    from conformance.cluster import provider
    from conformance.install.prebuild import build_inputs, provision_while_building

    background = wants_install and config.getoption("dra_cluster") == "kind"
    return provision_while_building(
        (lambda: build_inputs(profile)) if background else None,
        lambda: provider.provision(
            kind=config.getoption("dra_cluster"),
            name=config.getoption("dra_cluster_name"),
            kubernetes=config.getoption("dra_k8s"),
            kubeconfig=config.getoption("dra_kubeconfig"),
            context=config.getoption("dra_kube_context"),
            keep=config.getoption("dra_keep_cluster") == "yes",
            requirements=profile.cluster,
        ),
    )


def _set_up_run(config: pytest.Config, profile: Profile) -> RunContext:
    state = plugin_state(config)
    wants_install = profile.install.method != "preinstalled" and not config.getoption(
        "dra_skip_install"
    )
    handle, prebuilt = _provision(config, profile, wants_install)
    state.handle = handle
    from conformance.install import installer

    installer.ensure_reachable(handle.kubeconfig, handle.context)
    if handle.provider != "kind":  # a kind cluster made here was made with the block
        check_cluster_block(profile, handle.kubeconfig, handle.context, _say(config))
    kind_name = handle.name if handle.provider == "kind" else None
    timeout = profile.timeouts.get("driverReady", config.getoption("dra_timeout_scale"))
    if wants_install and getattr(handle, "installs_driver", True):
        config.stash[INSTALLED_KEY] = installer.install(
            profile,
            handle.kubeconfig,
            handle.context,
            installer.KindTarget(kind_name),
            built_image=prebuilt.image if prebuilt else None,
        )

    def wait_ready() -> installer.DriverNotReady | None:
        try:
            installer.wait_ready(profile, handle.kubeconfig, handle.context, timeout=timeout)
        except installer.DriverNotReady as exc:  # still a report: conformance/plugin/not_ready.py
            return exc
        return None

    not_ready = wait_ready()
    k8s = load_clients(handle.kubeconfig, handle.context)
    workload_image = config.getoption("dra_workload_image")
    if not workload_image and not_ready is None:  # no workload runs without a ready driver
        from conformance.cluster import kind_images

        workload_image = kind_images.workload_image(kind_name)
    cluster = ClusterInfo(
        provider=getattr(handle, "provider", config.getoption("dra_cluster")),
        name=handle.name,
        kubeconfig=handle.kubeconfig,
        context=handle.context,
        provisioned=bool(handle.provisioned),
        node_containers=dict(getattr(handle, "node_containers", {}) or {}),
    )
    try:
        facts = read_cluster_facts(k8s, profile)
    except Exception as exc:
        if not_ready is None:
            raise
        raise not_ready from exc  # neither ready nor readable: stop with the readiness reason
    if not_ready is None and not readiness_state(k8s, profile).ready:
        # The inventory must come from a ready driver: a node's slices can go between the
        # readiness wait and the read (the kubelet deletes them 30 s after the plugin
        # deregisters), and a run sized on that gap would call every lease unsatisfiable.
        not_ready = wait_ready()
        facts = read_cluster_facts(k8s, profile)
    return build_run_context(
        run_id=get_run_id(config),
        run_dir=resolve_run_dir(config),
        profile=profile,
        cluster=cluster,
        facts=facts,
        workload_image=workload_image or "",
        timeout_scale=config.getoption("dra_timeout_scale"),
        allow_disruptive=config.getoption("dra_allow_disruptive"),
        readiness_failure=None if not_ready is None else not_ready.failure,
    )


def _say(config: pytest.Config) -> Callable[[str], None]:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        return reporter.write_line
    return lambda line: print(line, file=sys.stderr)


def _install_sigterm_handler(state: PluginState) -> None:
    """SIGTERM (CI cancel, `timeout`) takes the Ctrl-C path, so teardown and sweep run."""
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return  # someone else handles it; do not override

    def on_sigterm(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    try:
        state.previous_sigterm = signal.signal(signal.SIGTERM, on_sigterm)
    except ValueError:  # not the main thread
        state.previous_sigterm = None


def pytest_report_header(config: pytest.Config) -> list[str]:
    state = plugin_state(config)
    if state.profile is None:
        return []
    lines = [f"dra-conformance: driver {state.profile.driver} (profile {state.profile.source})"]
    context = get_run_context(config)
    if context is not None:
        kinds = ", ".join(
            f"{k}={'?' if v is None else len(v)}" for k, v in context.device_sets.items()
        )
        lines.append(
            f"dra-conformance: run {context.run_id} on {context.cluster.provider} "
            f"cluster {context.cluster.name} ({context.git_version}); devices: {kinds}"
        )
        lines.append(f"dra-conformance: run directory {context.run_dir}")
        if config.stash.get(LEFTOVERS_KEY, ""):
            lines.append(config.stash[LEFTOVERS_KEY])
        if context.readiness_failure is not None:
            lines.append(
                "dra-conformance: NO TEST RUNS: the driver never became ready: "
                f"{context.readiness_failure.summary()}"
            )
    return lines


# --- collection -------------------------------------------------------------------------------
