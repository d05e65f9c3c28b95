"""The dra-conformance pytest plugin (entry point `pytest11: dra_conformance`).

Inert for every other project: it only registers its `--dra-*` options and `dra_*` markers
(prefixed, so another project's `requirement` marker or `--kubeconfig` option is never taken
for ours). It becomes active when `--dra-profile` is given (`dra-conformance run` passes it):
then it owns the cluster, the run context, the SIGTERM handler, the xdist hand-over and the
report. Without a profile, only tests under the catalog's own folder (`scenarios/`) or marked
`dra_requirement` are looked at, for the collection rules of conformance/collection.py, which
need no cluster: `pytest --collect-only scenarios` validates the catalog offline.

Process roles under xdist: the controller provisions the cluster, installs the driver, reads
the run context and sweeps at the end; workers get the context through `workerinput` and
only run tests. Without xdist the single process does both.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from conformance.collection import (
    CAPABILITY_MARK,
    DEVICES_MARK,
    NODE_EXCLUSIVE_MARK,
    REQUIREMENT_MARK,
    RUN_EARLY_MARK,
    ItemView,
    NodeExclusive,
    Selection,
    check_collection,
    is_scenario,
    lease_rank,
    parse_capabilities,
    parse_devices,
    parse_node_exclusive,
    renamed_marker_problems,
)
from conformance.context import ClusterInfo, RunContext, build_run_context, read_cluster_facts
from conformance.errors import ConformanceError
from conformance.faults import missing_faults_reason, missing_faults_remedy
from conformance.kube.builders import Builders
from conformance.kube.cleanup import (
    NamespaceRegistry,
    create_test_namespace,
    delete_namespace,
    delete_registered,
    release_namespace,
    sweep_run,
)
from conformance.kube.client import K8sClients, load_clients
from conformance.kube.objects import ClusterObjects
from conformance.lease import (
    DeviceLease,
    DeviceLeaseBroker,
    LeaseTimeout,
    cluster_lease_dir,
    pid_alive,
)
from conformance.naming import file_safe, is_label_value, namespace_name, sanitize_label_value
from conformance.not_ready import (
    driver_not_ready_reason,
    fails_on_readiness,
    run_without_driver,
)
from conformance.outcome import not_applicable, not_run
from conformance.placement import PlacementError, node_local_devices
from conformance.profile import SELECTOR_ALIASES, Profile, ProfileError, load_profile
from conformance.report.outcomes import PROP_LEASE_WAIT
from conformance.requirements import (
    Catalog,
    CatalogError,
    Requirement,
    load_catalog,
    missing_capabilities_reason,
    not_applicable_reason,
    not_run_reason,
)

log = logging.getLogger("conformance.plugin")

WORKERINPUT_CONTEXT = "dra_run_context"

CONTEXT_KEY = pytest.StashKey[RunContext]()
REQUIREMENT_KEY = pytest.StashKey[Requirement]()  # on scenario items
NAMESPACE_KEY = pytest.StashKey[str]()  # on items using test_namespace
STARTED_KEY = pytest.StashKey[float]()
_STATE_KEY = pytest.StashKey["_State"]()

MARKERS = (
    f"{REQUIREMENT_MARK}(id): the catalog requirement (scenarios/requirements.yaml) this test "
    "verifies",
    f"{DEVICES_MARK}(kind, count=1, exclusive=False): devices of a profile device kind the test "
    "needs; count may be 'all'; exclusive=True waits until no other test holds any device. "
    "Repeatable.",
    f'{NODE_EXCLUSIVE_MARK}(kind="default", at_least=1): the test leases one node whole (one '
    "with at least at_least node-local devices of kind); device_lease.node names it. "
    f"{DEVICES_MARK}() marks then count what the test uses on other nodes.",
    f"{CAPABILITY_MARK}(name, ...): profile capabilities the test needs beyond its "
    "requirement's gates",
    f"{RUN_EARLY_MARK}(why): start this test before all others: it starts a clock (such as "
    "a kubelet grace period) that the run waits out before it ends",
)


class DRAHarnessWarning(UserWarning):
    """Cleanup that did not complete; the end-of-run sweep retries."""


@dataclass
class _State:
    profile: Profile | None = None
    catalog: Catalog | None = None
    handle: Any = None  # conformance.cluster.provider.ClusterHandle (controller only)
    broker: DeviceLeaseBroker | None = None
    deselected_scenarios: int = 0
    coverage_note: str = ""
    sweep_summary: str = ""
    previous_sigterm: Any = None
    notes: list[str] = field(default_factory=list)


def _state(config: pytest.Config) -> _State:
    return config.stash.setdefault(_STATE_KEY, _State())


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def get_run_context(config: pytest.Config) -> RunContext | None:
    """The run context of this process (None before it is read, or when inactive)."""
    return config.stash.get(CONTEXT_KEY, None)


# --- options and markers ----------------------------------------------------------------------


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
        choices=("kind", "existing"),
        default="kind",
        help="kind: create (or reuse) a kind cluster for the run; existing: use --dra-kubeconfig",
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
        help="device lease book shared by every run against the same cluster "
        "(default: one per cluster under the dra-conformance cache)",
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
        default=None,
        metavar="REF",
        help="workload image reference (default: built locally and loaded into kind)",
    )
    try:
        from conformance.report.options import add_report_options
    except ModuleNotFoundError:
        return
    add_report_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    state = _state(config)
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
    state.catalog = _load_catalog(config)
    config.pluginmanager.register(_InterruptHooks(config), "dra_conformance_interrupt")
    if _is_worker(config):
        data = config.workerinput.get(WORKERINPUT_CONTEXT)  # type: ignore[attr-defined]
        if data:
            context = RunContext.from_json(data, state.profile)
            config.stash[CONTEXT_KEY] = context
            _publish_facts(config, context)
        # Workers too: only they can label and write each test's Allure result.
        _register_report_collector(config)
        return
    _report_run_id(config)
    if hasattr(config.hook, "pytest_configure_node"):  # xdist loaded, under whatever name
        config.pluginmanager.register(_XdistHooks(config), "dra_conformance_xdist")
    _register_report_collector(config)


def _load_catalog(config: pytest.Config) -> Catalog | None:
    path = _catalog_path(config)
    if not path.is_file():
        return None
    try:
        catalog = load_catalog(path)
    except CatalogError as exc:
        raise pytest.UsageError(str(exc)) from None
    try:
        from conformance.report.catalog import set_catalog
    except ModuleNotFoundError:
        return catalog
    set_catalog(config, catalog.requirements)
    return catalog


def _catalog_path(config: pytest.Config) -> Path:
    try:  # one resolution rule for the harness and the report
        from conformance.report.catalog import catalog_path
    except ModuleNotFoundError:
        return Path(config.rootpath) / "scenarios" / "requirements.yaml"
    return catalog_path(config)


def _report_run_id(config: pytest.Config) -> str:
    try:
        from conformance.report.facts import get_run_id
    except ModuleNotFoundError:
        return config.getoption("dra_run_id") or time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    return get_run_id(config)


def _run_dir(config: pytest.Config) -> Path:
    try:
        from conformance.report.options import resolve_run_dir
    except ModuleNotFoundError:
        given = config.getoption("dra_report_dir")
        base = Path(config.invocation_params.dir)
        return Path(given) if given else base / "reports" / _report_run_id(config)
    return resolve_run_dir(config)


def _register_report_collector(config: pytest.Config) -> None:
    try:
        from conformance.report.collector import install_report_collector
    except ModuleNotFoundError as exc:
        _state(config).notes.append(f"reports are not written: {exc}")
        return
    install_report_collector(config)


def _publish_facts(config: pytest.Config, context: RunContext) -> None:
    try:
        from conformance.report.facts import RunFacts, set_run_facts
    except ModuleNotFoundError:
        return
    set_run_facts(config, _run_facts(RunFacts, context))


def _run_facts(facts_type: Any, context: RunContext) -> Any:
    by_node = context.devices_by_node()
    return facts_type(
        driver_name=context.profile.driver,
        profile_path=str(context.profile.source),
        cluster_provider=context.cluster.provider,
        cluster_name=context.cluster.name,
        kubernetes_version=context.git_version,
        nodes=tuple({"name": n, "devices": len(by_node.get(n, ()))} for n in context.nodes),
        feature_gates=dict(context.feature_gates or {}),
        served_dra_apis=tuple(sorted(context.served_resources)),
        capabilities=tuple(sorted(context.profile.capabilities)),
        fault_kinds=context.profile.faults.kinds,
        extra={
            "run_id": context.run_id,
            "workload_image": context.workload_image,
            "devices": [d.to_dict() for d in context.devices],
            "device_kinds": {
                k: (None if v is None else len(v)) for k, v in context.device_sets.items()
            },
            "feature_gates_error": context.feature_gates_error,
        },
        setup_problem=_setup_problem(context),
    )


def _setup_problem(context: RunContext) -> str:
    """What kept the run from testing the driver at all, for the report's header."""
    failure = context.readiness_failure
    return "" if failure is None else f"the driver never became ready: {failure.summary()}"


# --- cluster and run context (controller / single process) ----------------------------------


class _XdistHooks:
    """Registered only when xdist is loaded (its hooks are unknown otherwise)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_configure_node(self, node: Any) -> None:
        context = get_run_context(self.config)
        node.workerinput[WORKERINPUT_CONTEXT] = context.to_json() if context else None
        try:
            from conformance.report.facts import (
                WORKERINPUT_RUN_DIR,
                WORKERINPUT_RUN_FACTS,
                WORKERINPUT_RUN_ID,
            )
        except ModuleNotFoundError:
            return
        node.workerinput[WORKERINPUT_RUN_ID] = _report_run_id(self.config)
        node.workerinput[WORKERINPUT_RUN_DIR] = str(_run_dir(self.config))
        if context is not None:
            from conformance.report.facts import RunFacts

            node.workerinput[WORKERINPUT_RUN_FACTS] = _run_facts(RunFacts, context).to_dict()

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        # A worker died mid-test: its namespaces hold devices other tests are about to lease.
        context = get_run_context(self.config)
        if error is None or context is None:
            return
        registry = NamespaceRegistry(context.harness_dir / "namespaces")
        k8s = load_clients(context.cluster.kubeconfig, context.cluster.context)
        dead = [r for r in registry.entries() if not pid_alive(r.get("pid", -1))]
        for record in dead:
            delete_namespace(
                k8s, registry, record["namespace"], timeout=context.timeout("namespaceDeleted")
            )


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    state = _state(config)
    if state.profile is None or _is_worker(config) or config.option.collectonly:
        return
    try:
        context = _set_up_run(config, state.profile)
    except (ConformanceError, OSError) as exc:
        pytest.exit(
            f"dra-conformance: could not set up the run: {exc}",
            returncode=pytest.ExitCode.INTERNAL_ERROR,
        )
    except (ApiException, urllib3.exceptions.HTTPError) as exc:
        status = getattr(exc, "status", None)
        detail = f"HTTP {status} {exc.reason}" if status else str(exc)
        pytest.exit(
            f"dra-conformance: could not read the cluster: {detail}\n  -> check "
            "--dra-kubeconfig/--dra-context and that the account may list nodes, "
            "ResourceSlices and DeviceClasses",
            returncode=pytest.ExitCode.INTERNAL_ERROR,
        )
    config.stash[CONTEXT_KEY] = context
    _publish_facts(config, context)
    _install_sigterm_handler(state)


def _set_up_run(config: pytest.Config, profile: Profile) -> RunContext:
    from conformance.cluster import provider

    state = _state(config)
    handle = provider.provision(
        kind=config.getoption("dra_cluster"),
        name=config.getoption("dra_cluster_name"),
        kubeconfig=config.getoption("dra_kubeconfig"),
        context=config.getoption("dra_kube_context"),
        keep=config.getoption("dra_keep_cluster") == "yes",
    )
    state.handle = handle
    from conformance import driver_install

    driver_install.ensure_reachable(handle.kubeconfig, handle.context)
    kind_name = handle.name if handle.provider == "kind" else None
    timeout = profile.timeouts.get("driverReady", config.getoption("dra_timeout_scale"))
    if profile.install.method != "preinstalled" and not config.getoption("dra_skip_install"):
        driver_install.install(
            profile, handle.kubeconfig, handle.context, driver_install.KindTarget(kind_name)
        )
    not_ready: driver_install.DriverNotReady | None = None
    try:
        driver_install.wait_ready(profile, handle.kubeconfig, handle.context, timeout=timeout)
    except driver_install.DriverNotReady as exc:  # still a report: conformance/not_ready.py
        not_ready = exc
    k8s = load_clients(handle.kubeconfig, handle.context)
    workload_image = config.getoption("dra_workload_image")
    if not workload_image and not_ready is None:  # no workload runs without a ready driver
        from conformance.cluster import images

        workload_image = images.workload_image(kind_name)
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
    return build_run_context(
        run_id=_report_run_id(config),
        run_dir=_run_dir(config),
        profile=profile,
        cluster=cluster,
        facts=facts,
        workload_image=workload_image or "",
        timeout_scale=config.getoption("dra_timeout_scale"),
        allow_disruptive=config.getoption("dra_allow_disruptive"),
        readiness_failure=None if not_ready is None else not_ready.failure,
    )


def _install_sigterm_handler(state: _State) -> None:
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
    state = _state(config)
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
        if context.readiness_failure is not None:
            lines.append(
                "dra-conformance: NO TEST RUNS: the driver never became ready: "
                f"{context.readiness_failure.summary()}"
            )
    return lines


# --- collection -------------------------------------------------------------------------------


def _view(item: pytest.Item) -> ItemView:
    marks = [(m.name, tuple(m.args), dict(m.kwargs)) for m in item.iter_markers()]
    return ItemView(item.nodeid, Path(item.path), marks)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _state(config).profile is not None:  # inert otherwise: only a run needs lease order
        # Same order on every xdist worker (the controller schedules by index): a stable sort.
        items.sort(key=lambda item: lease_rank(_view(item)))
    _select_requirements(config, items)  # only when --dra-requirement asks for it


def _select_requirements(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = set(config.getoption("dra_requirements", None) or [])
    if not wanted:
        return
    if _state(config).catalog is not None:
        unknown = sorted(w for w in wanted if w not in _state(config).catalog.by_id)
        if unknown:
            raise pytest.UsageError(
                f"--dra-requirement: unknown requirement(s) {', '.join(unknown)}; "
                "see scenarios/requirements.yaml"
            )
    keep, drop = [], []
    for item in items:
        marker = item.get_closest_marker(REQUIREMENT_MARK)
        (keep if marker and marker.args and marker.args[0] in wanted else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_deselected(items: list[pytest.Item]) -> None:
    if not items:
        return
    config = items[0].config
    root = _catalog_path(config).parent
    _state(config).deselected_scenarios += sum(1 for i in items if is_scenario(_view(i), root))


def _selection(config: pytest.Config, deselected: int, errors: int) -> Selection:
    narrowing = []
    opt = config.option
    for flag, value in (
        ("-k", getattr(opt, "keyword", "")),
        ("-m", getattr(opt, "markexpr", "")),
        ("--lf", getattr(opt, "lf", False)),
        ("--sw", getattr(opt, "stepwise", False)),
        ("--deselect", getattr(opt, "deselect", None)),
        ("--ignore-glob", getattr(opt, "ignore_glob", None)),
    ):
        if value:
            narrowing.append(flag)
    ignored = [Path(p) for p in (getattr(opt, "ignore", None) or [])]
    return Selection(
        tuple(config.args),
        Path(config.invocation_params.dir),
        tuple(narrowing),
        tuple(ignored),
        deselected,
    )


class _CollectionRefused(Exception):
    pass


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reports the collected ids
def pytest_collection_finish(session: pytest.Session) -> None:
    try:
        _check_scenarios(session)
    except _CollectionRefused as exc:
        if not _is_worker(session.config):
            raise pytest.UsageError(str(exc)) from None
        # A UsageError in an xdist worker becomes an INTERNALERROR that loses the message;
        # a failed collect report reaches the controller's terminal and fails the run.
        session.items[:] = []
        session.testsfailed += 1
        report = pytest.CollectReport(nodeid="", outcome="failed", longrepr=str(exc), result=[])
        session.config.hook.pytest_collectreport(report=report)


def _check_scenarios(session: pytest.Session) -> None:
    config = session.config
    state = _state(config)
    root = _catalog_path(config).parent
    views = {item.nodeid: _view(item) for item in session.items}
    active = state.profile is not None
    scenarios = [
        i
        for i in session.items
        # A run refuses the old marker anywhere: such a test was meant as a scenario.
        if is_scenario(views[i.nodeid], root)
        or (active and renamed_marker_problems(views[i.nodeid]))
    ]
    if not scenarios:
        return
    catalog = state.catalog or _load_catalog(config)
    if catalog is None:
        raise _CollectionRefused(
            f"{len(scenarios)} scenario test(s) collected, but the "
            f"requirements catalog {_catalog_path(config)} does not exist"
        )
    kinds = state.profile.device_kinds if state.profile else None
    outcome = check_collection(
        [views[i.nodeid] for i in scenarios],
        catalog,
        root,
        _selection(config, state.deselected_scenarios, session.testsfailed),
        kinds,
    )
    state.coverage_note = outcome.coverage_note
    if outcome.problems:
        lines = "\n".join(f"  {p}" for p in outcome.problems)
        raise _CollectionRefused(
            f"dra-conformance: {len(outcome.problems)} problem(s) with the "
            f"scenario tests ({outcome.coverage_note}):\n{lines}"
        )
    if state.profile is None and not config.option.collectonly:
        raise _CollectionRefused(
            "scenario tests need a driver profile: pass --dra-profile FILE "
            "(the bundled fake driver: --dra-profile drivers/fake/profile.yaml)"
        )
    for item in scenarios:
        req = outcome.requirements[item.nodeid]
        item.stash[REQUIREMENT_KEY] = req
        item.user_properties.append(("requirement", req.id))  # the report's key, not a marker
        leases = item.get_closest_marker(DEVICES_MARK) or item.get_closest_marker(
            NODE_EXCLUSIVE_MARK
        )
        if leases and "device_lease" not in item.fixturenames:
            # Lease before anything else is set up; release after everything is torn down.
            item.fixturenames.insert(0, "device_lease")  # type: ignore[attr-defined]


def pytest_report_collectionfinish(config: pytest.Config) -> list[str]:
    note = _state(config).coverage_note
    return [f"dra-conformance: {note}"] if note else []


# --- applicability ----------------------------------------------------------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    req = item.stash.get(REQUIREMENT_KEY, None)
    context = get_run_context(item.config)
    if req is None or context is None:
        return
    item.stash[STARTED_KEY] = time.time()
    # What the driver or cluster lacks decides first: such a requirement would not apply even
    # where it could run.
    reasons = [
        r
        for r in (
            not_applicable_reason(req, context),
            missing_capabilities_reason(parse_capabilities(_view(item))[0], context),
        )
        if r
    ]
    if reasons:
        not_applicable("; ".join(reasons))
    failure = context.readiness_failure
    if failure is not None and not fails_on_readiness(req, failure):
        not_run(*driver_not_ready_reason(failure))
    # Then what keeps it from running here; each reason with what would make it run.
    cannot_run = [
        not_run_reason(req, context),
        missing_selector_reason(item, context.profile),
        missing_faults(req, context.profile),
    ]
    found = [r for r in cannot_run if r]
    if found:
        not_run("; ".join(r for r, _ in found), "; ".join(m for _, m in found if m))


def missing_faults(req: Requirement, profile: Profile) -> tuple[str, str] | None:
    """Fault kinds the requirement injects and the profile cannot: injecting a fault is the
    harness's job, never a driver feature, so the requirement is not run (never N/A)."""
    reason = missing_faults_reason(req.faults, profile)
    return (reason, missing_faults_remedy(req.faults, profile)) if reason else None


def missing_selector_reason(item: pytest.Item, profile: Profile) -> tuple[str, str] | None:
    """A test that leases `selector:kind-a|b` cannot run on a profile with fewer selectors
    (a driver whose devices carry no attributes to tell kinds apart): not run, with the fix."""
    needs, _, _ = parse_devices(_view(item), profile.device_kinds)
    for need in needs:
        if need.kind in SELECTOR_ALIASES and profile.aliased_selector(need.kind) is None:
            return (
                f"the test needs device kind {need.kind} (the profile's selector number "
                f"{SELECTOR_ALIASES.index(need.kind) + 1}), and the profile defines "
                f"{len(profile.selectors)} selector(s)",
                "give the profile two disjoint selectors (docs/profile.md, selectors)",
            )
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """A driver that never became ready: report every scenario test without running it."""
    context = get_run_context(item.config)
    req = item.stash.get(REQUIREMENT_KEY, None)
    if context is None or context.readiness_failure is None or req is None:
        return None
    run_without_driver(item, nextitem, req, context.readiness_failure)
    return True


# --- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def dra_context(request: pytest.FixtureRequest) -> RunContext:
    """The immutable run context: profile, cluster facts, published devices, workload image."""
    context = get_run_context(request.config)
    if context is None:
        raise pytest.UsageError(
            "this test needs the DRA harness: pass --dra-profile FILE "
            "(e.g. --dra-profile drivers/fake/profile.yaml)"
        )
    return context


@pytest.fixture(scope="session")
def k8s(dra_context: RunContext) -> K8sClients:
    """API clients for the run's cluster."""
    return load_clients(dra_context.cluster.kubeconfig, dra_context.cluster.context)


@pytest.fixture
def build(request: pytest.FixtureRequest, dra_context: RunContext) -> Builders:
    """Object builders labelled with this run and test."""
    return Builders(
        dra_context.run_id,
        sanitize_label_value(request.node.nodeid),
        dra_context.profile.verification,
    )


@pytest.fixture
def device_lease(request: pytest.FixtureRequest, dra_context: RunContext) -> Any:
    """The devices this test declared with @pytest.mark.dra_devices, and the node it leased
    whole with @pytest.mark.dra_node_exclusive (`.node`); None when it declared neither."""
    view = _view(request.node)
    needs, exclusive, _ = parse_devices(view, dra_context.profile.device_kinds)
    whole_node, _ = parse_node_exclusive(view, dra_context.profile.device_kinds)
    if not needs and not exclusive and whole_node is None:
        yield None
        return
    broker = _broker(request.config, dra_context)
    nodes = None if whole_node is None else node_candidates(dra_context, whole_node)
    try:
        lease: DeviceLease = broker.acquire(
            request.node.nodeid,
            needs,
            exclusive=exclusive,
            nodes=nodes,
            timeout=dra_context.timeout("lease"),
        )
    except LeaseTimeout as exc:  # other tests held the devices: nothing was learnt of the driver
        not_run(exc.problem, exc.remedy)
    request.node.user_properties.append((PROP_LEASE_WAIT, round(lease.waited_s, 3)))
    try:
        yield lease
    finally:
        broker.release(lease)


def node_candidates(context: RunContext, whole_node: NodeExclusive) -> list[str]:
    """The nodes a dra_node_exclusive test can lease, best first: fewest devices (disrupting them
    is cheapest). The broker puts nodes with a no-kubelet-restart mark last when it grants."""
    try:
        by_node = node_local_devices(context, whole_node.kind)
    except PlacementError as exc:
        not_run(str(exc), "write the profile's selector as == comparisons")
    fit = [n for n, devices in by_node.items() if len(devices) >= whole_node.at_least]
    if not fit:
        not_run(
            f"no node holds >= {whole_node.at_least} node-local device(s) of kind "
            f"{whole_node.kind!r}; per node: "
            + ", ".join(f"{n}={len(d)}" for n, d in sorted(by_node.items())),
            "add devices (or nodes) to the cluster",
        )
    return sorted(fit, key=lambda n: (len(by_node[n]), n))


def lease_dir(config: pytest.Config, context: RunContext) -> Path:
    """One lease book per cluster, not per run: two runs against the same cluster (a second
    terminal, a broken-driver check) must not oversubscribe its devices either."""
    given = config.getoption("dra_lease_dir", None)
    if given:
        return Path(given)
    return cluster_lease_dir(context.cluster.name, context.cluster.context)


def _broker(config: pytest.Config, context: RunContext) -> DeviceLeaseBroker:
    state = _state(config)
    if state.broker is None:
        state.broker = DeviceLeaseBroker(
            lease_dir(config, context),
            context.device_sets,
            device_nodes={d.id: d.node for d in context.devices},
        )
    return state.broker


@pytest.fixture
def test_namespace(
    request: pytest.FixtureRequest,
    dra_context: RunContext,
    k8s: K8sClients,
    build: Builders,
    device_lease: Any,
) -> Any:
    """A namespace of this test only; deleted after it (waited for until its pods and claims
    are gone)."""
    registry = NamespaceRegistry(dra_context.harness_dir / "namespaces")
    name = namespace_name(dra_context.run_id, request.node.nodeid)
    create_test_namespace(k8s, build, registry, name, request.node.nodeid)
    request.node.stash[NAMESPACE_KEY] = name
    yield name
    # The lease ends once the devices are free; the namespace deletes in the background and
    # the end-of-run sweep waits for it.
    problem = release_namespace(k8s, name, timeout=dra_context.timeout("namespaceDeleted"))
    if problem:
        warnings.warn(DRAHarnessWarning(f"{problem}\n(the end-of-run sweep retries)"), stacklevel=1)


@pytest.fixture
def cluster_objects(k8s: K8sClients, device_lease: Any) -> Any:
    """Create cluster-scoped objects (DeviceClass, DeviceTaintRule, PriorityClass) through
    this; they are deleted when the test ends, before its device lease is released."""
    tracker = ClusterObjects(k8s)
    yield tracker
    errors = tracker.delete_all()
    if errors:
        warnings.warn(DRAHarnessWarning("could not delete: " + "; ".join(errors)), stacklevel=1)


# --- diagnostics on failure -------------------------------------------------------------------


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    namespace = item.stash.get(NAMESPACE_KEY, None)
    context = get_run_context(item.config)
    if report.failed and report.when in ("setup", "call") and namespace and context:
        summary = _take_diagnostics(item, context, namespace)
        report.sections.append(("dra-conformance diagnostics", summary))
    return report


def _take_diagnostics(item: pytest.Item, context: RunContext, namespace: str) -> str:
    from conformance.kube.diagnostics import (
        DiagnosticsRequest,
        attach_to_allure,
        collect_diagnostics,
    )

    profile = context.profile
    request = DiagnosticsRequest(
        namespace=namespace,
        out_dir=context.run_dir / "diagnostics" / file_safe(item.nodeid),
        driver=profile.driver,
        since=item.stash.get(STARTED_KEY, time.time() - 600),
        driver_namespace=profile.readiness.daemonset_namespace,
        driver_daemonset=profile.readiness.daemonset_name,
        cluster_provider=context.cluster.provider,
        node_containers=context.cluster.node_containers,
    )
    try:
        result = collect_diagnostics(
            load_clients(context.cluster.kubeconfig, context.cluster.context), request
        )
        attach_to_allure(result)
    except Exception as exc:  # diagnostics must never mask the test's own failure
        return f"diagnostics failed: {type(exc).__name__}: {exc}"
    return result.summary()


# --- interruption and the end-of-run sweep ----------------------------------------------------


class _InterruptHooks:
    """Ctrl-C / SIGTERM: delete this process's namespaces now (the hook gets no config)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        context = get_run_context(self.config)
        if context is None:
            return
        try:
            k8s = load_clients(context.cluster.kubeconfig, context.cluster.context)
            delete_registered(
                k8s, NamespaceRegistry(context.harness_dir / "namespaces"), pid=os.getpid()
            )
        except Exception as exc:  # noqa: BLE001 - best effort while being interrupted
            log.warning("could not delete this process's namespaces: %s", exc)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    state = _state(config)
    context = get_run_context(config)
    if context is None or _is_worker(config):
        return
    try:
        k8s = load_clients(context.cluster.kubeconfig, context.cluster.context)
        result = sweep_run(
            k8s,
            context.run_id,
            NamespaceRegistry(context.harness_dir / "namespaces"),
            timeout=context.timeout("namespaceDeleted"),
            api_versions=list(context.served_resources),
        )
        state.sweep_summary = result.summary()
        restored = _restore_deleted_nodes(k8s, context)
        if restored:
            state.sweep_summary += "; restored deleted node(s) " + ", ".join(restored)
    except Exception as exc:  # noqa: BLE001 - report, do not turn a verdict into a crash
        state.sweep_summary = (
            f"end-of-run sweep failed: {type(exc).__name__}: {exc}; delete "
            f"leftovers with: kubectl delete ns -l "
            f"dra-conformance.io/run={context.run_id}"
        )


def _restore_deleted_nodes(k8s: K8sClients, context: RunContext) -> list[str]:
    """Nodes a killed test deleted (DRA-DRAIN-005) and could not bring back itself."""
    from conformance.kube.nodes import (
        DELETED_NODES_DIR,
        DeletedNodeRegistry,
        restore_recorded_nodes,
    )

    registry = DeletedNodeRegistry(context.harness_dir / DELETED_NODES_DIR)
    return restore_recorded_nodes(k8s, registry, timeout=context.timeout("driverReady"))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = _state(config)
    lines = [n for n in (state.coverage_note, state.sweep_summary, *state.notes) if n]
    if lines:
        terminalreporter.section("dra-conformance")
        for line in lines:
            terminalreporter.write_line(line)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = _state(config)
    if state.previous_sigterm is not None:
        signal.signal(signal.SIGTERM, state.previous_sigterm)
        state.previous_sigterm = None
    handle, state.handle = state.handle, None
    if handle is not None and config.getoption("dra_keep_cluster") == "no":
        handle.teardown()
