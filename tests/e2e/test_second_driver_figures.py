"""What Kubernetes measured of a driver nobody here wrote: the Kubernetes e2e DRA test driver in
the fake driver's place, the core suite run with its profile. The kubelets' calls to it appear
under its own name in the run's Driver operations table, in each test's own figures and in the
per-test chart. The whole suite against it runs by hand (test_second_driver.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from second_driver import assert_own_driver_operations, k8s_test_driver_run

from conformance.cluster import kind
from conformance.model.profile import Profile
from conformance.progress import Progress

PER_TEST_CHART = "charts/driver-calls-per-test.svg"


def test_the_second_drivers_own_figures_in_the_run_and_per_test(
    request: pytest.FixtureRequest,
    kind_cluster: kind.KindCluster,
    fake_driver: Profile,
    progress: Progress,
    tmp_path: Path,
) -> None:
    with k8s_test_driver_run(
        request.config,
        kind_cluster,
        fake_driver,
        progress,
        tmp_path / "report",
        "-n",
        "2",
        "scenarios/core",
        run_id=f"e2e-k8s-test-driver-core-{int(time.time())}",
        timeout=1200,
    ) as run:
        summary, output = run["summary"], run["output"]
        # 3: INCOMPLETE, the MUSTs its profile cannot select for (no device attributes)
        assert run["result"].returncode in (0, 3), output[-6000:]
        assert_own_driver_operations(summary, output)
        prepared = {
            t["nodeid"]: r["calls"]
            for t in summary["tests"]
            for r in t.get("driver_calls") or ()
            if r["method"] == "NodePrepareResources"
        }
        assert prepared and all(n > 0 for n in prepared.values()), summary["tests"]
        assert PER_TEST_CHART in summary["artifacts"]["charts"], summary["artifacts"]
