"""End-to-end tier: one real kind cluster per session (created or reused), never skipped.

`DRA_CONFORMANCE_E2E_CLUSTER` names another kind cluster (a developer's) to run against; the
tier's last test (test_cluster_down.py) deletes the cluster, so run a subset (e.g.
tests/e2e/broken) against yours.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from conformance.cluster import kind, kind_images
from conformance.images import harness
from conformance.install import installer
from conformance.kube.client import K8sClients, load_clients
from conformance.model.profile import SUITE_ROOT, Profile
from conformance.model.profile_parse import load_profile
from conformance.progress import Progress
from conformance.run.cluster_lease_book import ClusterLeaseBook

CLUSTER = os.environ.get("DRA_CONFORMANCE_E2E_CLUSTER", "dra-conformance-e2e")
FAKE_PROFILE = SUITE_ROOT / "drivers/fake/profile.yaml"


@pytest.fixture(scope="session")
def progress() -> Progress:
    return Progress()


@pytest.fixture(scope="session")
def kind_cluster(progress: Progress) -> kind.KindCluster:
    return kind.up(name=CLUSTER, workers=2, kubernetes="v1.37.2", progress=progress)


@pytest.fixture(scope="session")
def workload_image(kind_cluster: kind.KindCluster, progress: Progress) -> str:
    ref = harness.build_workload_image(progress)
    kind_images.load_into_cluster(
        kind_cluster.kind, kind_cluster.name, kind_cluster.nodes(), ref, progress
    )
    return ref


@pytest.fixture(scope="session")
def fake_profile() -> Profile:
    return load_profile(FAKE_PROFILE)


@pytest.fixture(scope="session")
def fake_driver(
    kind_cluster: kind.KindCluster, fake_profile: Profile, progress: Progress, workload_image: str
) -> Profile:
    """The bundled fake driver installed on the e2e cluster and ready, with the workload image
    on its nodes, as `dra-conformance driver install` leaves a kind cluster: a
    `run --cluster existing` on it passes the workload-image preflight."""
    kubeconfig = str(kind_cluster.kubeconfig)
    installer.install(
        fake_profile, kubeconfig, None, installer.KindTarget(kind_cluster.name), progress
    )
    installer.wait_ready(fake_profile, kubeconfig, None, progress=progress)
    return fake_profile


@pytest.fixture(scope="session")
def k8s(kind_cluster: kind.KindCluster) -> K8sClients:
    return load_clients(str(kind_cluster.kubeconfig), None)


@pytest.fixture(scope="session")
def lease_book(k8s: K8sClients) -> Iterator[ClusterLeaseBook]:
    """The cluster's device lease book, as runs use it: a check that breaks the driver takes
    its lease here, so a run against the cluster meanwhile waits."""
    book = ClusterLeaseBook(k8s.core).start()
    yield book
    book.close()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `e2e_last` (the cluster's deletion) run after every other test of the
    session, whatever the file names and the selection."""
    last = [item for item in items if item.get_closest_marker("e2e_last")]
    if last:
        items[:] = [item for item in items if item not in last] + last


# --- stage wall times in the CI log -----------------------------------------------------------

_STAGE_SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Sum each e2e file's phases (the cluster's creation is in its first test's setup)."""
    stage = report.nodeid.split("::")[0]
    _STAGE_SECONDS[stage] = _STAGE_SECONDS.get(stage, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _STAGE_SECONDS:
        return
    terminalreporter.section("e2e stage wall times")
    for stage, seconds in _STAGE_SECONDS.items():
        terminalreporter.write_line(f"{seconds:8.0f} s  {stage}")
    terminalreporter.write_line(f"{sum(_STAGE_SECONDS.values()):8.0f} s  e2e total")
