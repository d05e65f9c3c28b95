"""The driver's build runs beside the cluster's creation: both at once, the build's error
raised as its own once the cluster is up, a failed cluster reported after the build is
awaited and said."""

from __future__ import annotations

import io
import threading
import time

import pytest

from conformance.errors import BuildError, ClusterError
from conformance.install.prebuild import Prebuilt, overlap_line, provision_while_building
from conformance.progress import Progress


def _slow(seconds: float, value: object, seen: list[str], name: str):
    def step() -> object:
        seen.append(f"{name} start {threading.current_thread().name}")
        time.sleep(seconds)
        seen.append(f"{name} end")
        return value

    return step


def test_the_build_and_the_cluster_overlap() -> None:
    # Each step waits for the other at a barrier: one after the other, the first never passes it.
    meet = threading.Barrier(2, timeout=60)
    seen: list[str] = []

    def step(name: str, value: object):
        def run() -> object:
            seen.append(f"{name} start {threading.current_thread().name}")
            meet.wait()
            return value

        return run

    handle, built = provision_while_building(
        step("build", Prebuilt("img:1")), step("cluster", "cluster")
    )
    assert (handle, built) == ("cluster", Prebuilt("img:1"))
    assert any(s.startswith("build start driver-build") for s in seen)


def test_nothing_to_build_is_the_provisioning_alone() -> None:
    assert provision_while_building(None, lambda: "cluster") == ("cluster", None)


def test_a_build_error_is_the_builds_own_after_the_cluster() -> None:
    seen: list[str] = []

    def build() -> Prebuilt:
        raise BuildError("docker build of x:1 failed: no space left on device", "free space")

    with pytest.raises(BuildError, match="docker build of x:1 failed"):
        provision_while_building(build, _slow(0.2, "cluster", seen, "cluster"))
    assert seen == ["cluster start MainThread", "cluster end"]  # the cluster was finished


def test_a_failed_cluster_waits_for_the_build_and_says_both() -> None:
    out = io.StringIO()

    def build() -> Prebuilt:
        time.sleep(0.3)
        raise BuildError("docker build of x:1 failed: boom")

    def provision() -> str:
        raise ClusterError("cluster c did not come up: kind create failed")

    with pytest.raises(ClusterError, match="cluster c did not come up"):
        provision_while_building(build, provision, Progress(out, None))
    text = out.getvalue()
    assert "the cluster failed; waiting for the driver build beside it to end" in text
    assert "the driver build beside the cluster failed too: docker build of x:1 failed" in text


def test_the_overlap_is_said() -> None:
    assert overlap_line(95.0, 240.0) == (
        "driver build beside the cluster: 95.0 s, cluster 240.0 s; the install waited 0.0 s "
        "for the build (one after the other: 95.0 s more)"
    )
    assert "the install waited 60.0 s for the build" in overlap_line(300.0, 240.0)
