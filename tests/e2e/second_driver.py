"""The Kubernetes e2e DRA test driver (k8s.io/kubernetes v1.37.2 test/e2e/dra/test-driver,
built offline, installed from docs/examples/k8s-test-driver/) in the fake driver's place on an
e2e cluster, for one run of the suite with its profile; the fake driver is put back (and ready)
afterwards for the tests that follow on that cluster. Cheaper than a second cluster on a 2-core
CI machine: about a minute less."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from runs import run_cli

from conformance.cluster import kind
from conformance.install import installer
from conformance.model.profile import SUITE_ROOT, Profile
from conformance.model.profile_parse import load_profile
from conformance.progress import Progress

PROFILE = "docs/examples/k8s-test-driver/profile.yaml"


def k8s_test_driver_profile() -> Profile:
    return load_profile(SUITE_ROOT / PROFILE)


@contextmanager
def k8s_test_driver_run(
    config: pytest.Config,
    kind_cluster: kind.KindCluster,
    fake_driver: Profile,
    progress: Progress,
    report: Path,
    *run_args: str,
    run_id: str,
    timeout: float,
) -> Iterator[dict[str, Any]]:
    """The fake driver swapped out, `dra-conformance run` with the test driver's profile and
    `run_args`, then the fake driver restored: {result, output, summary (None: not written),
    wall_s}."""
    kubeconfig = str(kind_cluster.kubeconfig)
    profile = k8s_test_driver_profile()
    start = time.monotonic()
    installer.uninstall(fake_driver, kubeconfig, None, progress)
    try:
        result = run_cli(
            kind_cluster.name, report, *run_args, run_id=run_id, profile=PROFILE, timeout=timeout
        )
        wall_s = time.monotonic() - start
        summary_file = report / "summary.json"
        yield {
            "result": result,
            "output": result.stdout + result.stderr,
            "summary": json.loads(summary_file.read_text()) if summary_file.is_file() else None,
            "wall_s": wall_s,
        }
    finally:
        restore_start = time.monotonic()
        installer.uninstall(profile, kubeconfig, None, progress)
        installer.install(
            fake_driver, kubeconfig, None, installer.KindTarget(kind_cluster.name), progress
        )
        installer.wait_ready(fake_driver, kubeconfig, None, progress=progress)
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:  # a measurement for bench/suite.md, not an assertion
            reporter.write_line(
                f"\nsecond driver: swap + run {wall_s:.0f} s, "
                f"restore fake driver {time.monotonic() - restore_start:.0f} s"
            )


def assert_own_driver_operations(summary: dict[str, Any] | None, output: str) -> None:
    """What the kubelets measured of the test driver, under its own name: its run prepared and
    released claims, so neither count can be zero."""
    assert summary is not None, output[-6000:]
    driver = k8s_test_driver_profile().driver
    ops = summary["driver_operations"]
    assert ops.get("grpc") is not None, ops
    counts = {r["method"]: r["count"] for r in ops["grpc"] if r["driver"] == driver}
    for method in ("NodePrepareResources", "NodeUnprepareResources"):
        assert counts.get(method, 0) > 0, (method, ops["grpc"], ops.get("sources"))
