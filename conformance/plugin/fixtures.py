"""The fixtures scenario tests use: run context, clients, builders, device lease,
test namespace, tracked cluster-scoped objects."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from conformance.kube.builders import Builders, Placement
from conformance.kube.cleanup import (
    NamespaceRegistry,
    create_test_namespace,
    release_namespace,
)
from conformance.kube.client import K8sClients, load_clients
from conformance.kube.objects import ClusterObjects
from conformance.metrics.spool import spool_in
from conformance.model.naming import namespace_name, sanitize_label_value
from conformance.model.outcome import not_run
from conformance.node_access import NodeAccess
from conformance.node_access.choose import node_access_for
from conformance.plugin.collection import item_view
from conformance.plugin.driver_calls import record_driver_calls
from conformance.plugin.kubelet_check import KubeletWatch
from conformance.plugin.kubelet_check import verdict as kubelet_verdict
from conformance.plugin.markers import (
    KUBELET_ERRORS_MARK,
    NodeExclusive,
    across_nodes_wanted,
    parse_devices,
    parse_node_exclusive,
)
from conformance.plugin.state import (
    CALL_FAILED_KEY,
    NAMESPACE_KEY,
    DRAHarnessWarning,
    get_run_context,
    plugin_state,
)
from conformance.report.outcomes import PROP_LEASE_WAIT
from conformance.run.context import RunContext
from conformance.run.durations import duration_key
from conformance.run.lease import (
    DeviceLease,
    DeviceLeaseBroker,
    LeaseRequest,
    LeaseTimeout,
    reclaim,
)
from conformance.run.lease_book import LeaseBook
from conformance.scenario_api.placement import (
    PlacementError,
    node_local_devices,
    whole_node_candidates,
)
from conformance.scenario_api.pods import node_selector_for


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


@pytest.fixture(scope="session")
def node_access(dra_context: RunContext) -> NodeAccess:
    """What a test may do to a node (restart its kubelet, read its files, ...), the same way
    on every cluster; an operation the run cannot do raises NodeOperationUnavailable."""
    return node_access_for(dra_context)


@pytest.fixture
def build(
    request: pytest.FixtureRequest, dra_context: RunContext, k8s: K8sClients, device_lease: Any
) -> Builders:
    """Object builders labelled with this run and test; when the test's devices were leased on
    one node, every pod it builds goes there unless it names its own placement."""
    home = None
    if device_lease is not None and device_lease.node and not device_lease.whole:
        node = k8s.to_dict(k8s.core.read_node(device_lease.node))
        home = Placement(device_lease.node, node_selector_for(node))
    return Builders(
        dra_context.run_id,
        sanitize_label_value(request.node.nodeid),
        dra_context.profile.verification,
        home=home,
    )


@pytest.fixture
def device_lease(request: pytest.FixtureRequest, dra_context: RunContext) -> Any:
    """The devices this test declared with @pytest.mark.dra_devices, and the node it leased
    whole with @pytest.mark.dra_node_exclusive (`.node`); None when it declared neither."""
    view = item_view(request.node)
    needs, exclusive, _ = parse_devices(view, dra_context.profile.device_kinds)
    whole_node, _ = parse_node_exclusive(view, dra_context.profile.device_kinds)
    # Devices on one node, the test's pods pinned there: it then runs beside tests that take
    # another node whole. Only tests whose pods must span nodes lease devices anywhere.
    pin = whole_node is None and not across_nodes_wanted(view)
    if not needs and not exclusive and whole_node is None:
        yield None
        return
    broker = _broker(request.config, dra_context)
    nodes = None if whole_node is None else node_candidates(dra_context, whole_node)
    try:
        lease: DeviceLease = broker.acquire(
            LeaseRequest(
                request.node.nodeid,
                needs,
                exclusive=exclusive,
                nodes=nodes,
                pin=pin,
                avoid_marked=whole_node is not None and whole_node.restarts_kubelet,
                expected_s=plugin_state(request.config).durations.get(
                    duration_key(request.node.nodeid)
                ),
            ),
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
    is cheapest). When it grants, the broker gives a node with a no-kubelet-restart mark first to
    a test that restarts no kubelet, and never to one that does."""
    try:
        fit = whole_node_candidates(context, whole_node.kind, whole_node.at_least)
        by_node = {} if fit else node_local_devices(context, whole_node.kind)  # the reason
    except PlacementError as exc:
        not_run(str(exc), "write the profile's selector as == comparisons")
    if not fit:
        not_run(
            f"no node holds >= {whole_node.at_least} node-local device(s) of kind "
            f"{whole_node.kind!r}; per node: "
            + ", ".join(f"{n}={len(d)}" for n, d in sorted(by_node.items())),
            "add devices (or nodes) to the cluster",
        )
    return fit


def lease_book(config: pytest.Config, context: RunContext) -> LeaseBook:
    """This process's handle on the cluster's lease book (one book per cluster, not per run:
    two runs against it, from any machine, must not oversubscribe its devices either); it
    renews this process's heartbeat until the run ends."""
    state = plugin_state(config)
    if state.book is None:
        from conformance.run.cluster_lease_book import CONFIG_MAP, ClusterLeaseBook

        state.book = config.hook.pytest_dra_lease_book(config=config, context=context)
        if state.book is None:
            core = load_clients(context.cluster.kubeconfig, context.cluster.context).core
            name = config.getoption("dra_lease_book_name", None) or CONFIG_MAP
            state.book = ClusterLeaseBook(core, name=name).start()
        worker = getattr(config, "workerinput", {}).get("workerid")
        if worker:  # for the controller, should this worker die holding a lease
            _owners_dir(context).mkdir(parents=True, exist_ok=True)
            (_owners_dir(context) / worker).write_text(state.book.owner)
    return state.book


def lease_book_if_reachable(config: pytest.Config, context: RunContext) -> LeaseBook | None:
    """The book for what only orders tests (the scheduler's node marks): None, with a warning,
    when the cluster does not answer; a test's lease then reports the problem itself."""
    try:
        return lease_book(config, context)
    except Exception as exc:  # noqa: BLE001 - the order of tests is not worth a crash
        warnings.warn(DRAHarnessWarning(f"the cluster's lease book: {exc}"), stacklevel=1)
        return None


def _owners_dir(context: RunContext) -> Path:
    return context.harness_dir / "lease-owners"


def reclaim_worker_leases(config: pytest.Config, context: RunContext, worker: str) -> None:
    """A worker of this run died (SIGKILL, OOM): its leases go now, not at their expiry."""
    try:
        owner = (_owners_dir(context) / worker).read_text().strip()
    except OSError:
        return  # it never leased
    reclaim(lease_book(config, context), owner)


def _broker(config: pytest.Config, context: RunContext) -> DeviceLeaseBroker:
    state = plugin_state(config)
    if state.broker is None:
        state.broker = DeviceLeaseBroker(
            lease_book(config, context),
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
    nodes, shared = _watched_nodes(dra_context, device_lease)
    watch = KubeletWatch.begin(
        k8s, dra_context.profile.driver, nodes, spool_in(dra_context.harness_dir)
    )
    yield name
    events = watch.events(name)
    judged = None if device_lease is not None and device_lease.node else watch.pod_nodes(name)
    # The lease ends once the devices are free; the namespace deletes in the background and
    # the end-of-run sweep waits for it.
    problem = release_namespace(k8s, name, timeout=dra_context.timeout("namespaceDeleted"))
    if problem:
        warnings.warn(DRAHarnessWarning(f"{problem}\n(the end-of-run sweep retries)"), stacklevel=1)
    expected = request.node.get_closest_marker(KUBELET_ERRORS_MARK) is not None
    # The settle wait gives a passing test's force-deleted claims time to be unprepared; a
    # test that already failed has failed its requirement: its kubelets are read once.
    failed = request.node.stash.get(CALL_FAILED_KEY, False)
    scale = 0.0 if failed else dra_context.timeout_scale
    problems = watch.finish(events, expected, scale, judged)
    record_driver_calls(request.node, watch.call_figures(), dra_context.profile.driver, shared)
    if problems:
        pytest.fail(kubelet_verdict(problems, watch.nodes, shared), pytrace=False)


def _watched_nodes(context: RunContext, lease: Any) -> tuple[list[str], bool]:
    """The nodes whose kubelets judge a test (its pinned or leased node, else every node of the
    driver, of which those its pods were on at its end), and whether other tests may use them
    meanwhile."""
    if lease is not None and lease.node:
        return [lease.node], not lease.whole
    return sorted({d.node for d in context.devices if d.node}), True


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
