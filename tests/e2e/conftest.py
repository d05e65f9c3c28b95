"""End-to-end tier: one real kind cluster per session (created or reused), never skipped."""

from __future__ import annotations

import pytest

from conformance.cluster import images, kind
from conformance.progress import Progress

CLUSTER = "dra-conformance-e2e"


@pytest.fixture(scope="session")
def progress() -> Progress:
    return Progress()


@pytest.fixture(scope="session")
def kind_cluster(progress: Progress) -> kind.KindCluster:
    return kind.up(name=CLUSTER, workers=2, kubernetes="v1.37.2", progress=progress)


@pytest.fixture(scope="session")
def workload_image(kind_cluster: kind.KindCluster, progress: Progress) -> str:
    ref = images.build_workload_image(progress)
    images.load_into_cluster(kind_cluster.kind, kind_cluster.name, kind_cluster.nodes(), ref,
                             progress)
    return ref
