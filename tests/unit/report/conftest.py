"""A tiny fake conformance suite, run in a subprocess with only the report collector loaded.

The conformance plugin is disabled in those runs (`-p no:dra_conformance`): its conftest stand-in
below does what the contract says the plugin does — tells the report which requirement each
suite test proves (`mark_suite_test`), stores the run facts — so the report is tested against
the contract, not against the plugin's implementation.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers.judged import judged

DRIVER = "gpu.example.com"
K8S_VERSION = "v1.37.2"

CATALOG = """\
schema: 1
requirements:
  - id: DRA-CORE-001
    suite: core
    level: MUST
    statement: The driver registers with the kubelet.
  - id: DRA-CORE-002
    suite: core
    level: MUST
    statement: The driver publishes ResourceSlices.
  - id: DRA-LOSS-003
    suite: device_loss
    level: MUST
    statement: A withdrawn device is never allocated.
    gates: {faults: [withdraw]}
  - id: DRA-ALLOC-005
    suite: allocation
    level: SHOULD
    statement: allocationMode All allocates every matching device.
  - id: DRA-ALLOC-007
    suite: allocation
    level: MAY
    statement: A prioritized list falls back to the second subrequest.
"""

# Emulates conformance/plugin/'s side of the contract (docs/CONTRACTS.md).
CONFTEST = f"""\
import pytest
from conformance.report import RunFacts, set_run_facts
from conformance.report.outcomes import mark_suite_test


def pytest_configure(config):
    set_run_facts(config, RunFacts(
        driver_name={DRIVER!r},
        profile_path=str(config.rootpath / "profile.yaml"),
        cluster_provider="kind",
        cluster_name="dra-conformance",
        kubernetes_version={K8S_VERSION!r},
        nodes=({{"name": "worker-1"}}, {{"name": "worker-2"}}),
        feature_gates={{"DRADeviceTaintRules": True, "DRAPartitionableDevices": False}},
        served_dra_apis=("resource.k8s.io/v1",),
        capabilities=("health-reporting",),
        fault_kinds=("taint", "withdraw"),
    ))


def pytest_collection_modifyitems(items):
    for item in items:
        for mark in item.iter_markers("dra_requirement"):
            mark_suite_test(item, mark.args[0])


@pytest.fixture
def broken_fixture():
    raise RuntimeError("cannot reach the cluster")
"""

# One test per kind of outcome. DRA-ALLOC-007 (MAY) is skipped with a bare pytest.skip (not
# run); the unmarked test errors in setup.
BASE_TESTS = """\
import pytest
from conformance.model.outcome import not_applicable
from conformance.report import add_inventory, record_metric


@pytest.mark.dra_requirement("DRA-CORE-001")
def test_registers(request):
    record_metric(request, "claim_allocated", 0.5)
    record_metric(request, "claim_allocated", 1.5, node="worker-1")
    record_metric(request.config, "driver_start_to_first_slice", 2.0)
    add_inventory(request, "devices", {"worker-1": ["gpu-0", "gpu-1"]})


@pytest.mark.dra_requirement("DRA-CORE-002")
def test_publishes_slices(request):
    record_metric(request, "claim_allocated", 1.0)


@pytest.mark.dra_requirement("DRA-CORE-002")
def test_publishes_slices_again():
    pass


@pytest.mark.dra_requirement("DRA-LOSS-003")
def test_withdrawn_device():
    not_applicable("the driver profile does not declare capability withdraw-device")


@pytest.mark.dra_requirement("DRA-ALLOC-005")
def test_allocation_mode_all():
    assert 2 == 3, "expected every matching device"


@pytest.mark.dra_requirement("DRA-ALLOC-007")
def test_prioritized_list():
    pytest.skip("needs two nodes with different devices")


def test_unmarked_setup_error(broken_fixture):
    pass
"""


@dataclass
class SuiteRun:
    result: pytest.RunResult
    run_dir: Path

    @property
    def summary(self) -> dict[str, Any]:
        return judged(json.loads((self.run_dir / "summary.json").read_text()))

    def requirement(self, req_id: str) -> dict[str, Any]:
        return next(r for r in self.summary["requirements"] if r["id"] == req_id)

    def allure_results(self) -> list[dict[str, Any]]:
        results = self.run_dir / "allure-results"
        return [json.loads(p.read_text()) for p in sorted(results.glob("*-result.json"))]


class FakeSuite:
    """Writes the fake suite into a pytester dir and runs it with the report collector."""

    def __init__(self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
        self.pytester = pytester
        self.catalog = pytester.path / "requirements.yaml"
        self.catalog.write_text(CATALOG)
        (pytester.path / "profile.yaml").write_text(f"driver: {DRIVER}\n")
        pytester.makeconftest(CONFTEST)
        monkeypatch.setenv("DRA_REQUIREMENTS_FILE", str(self.catalog))
        monkeypatch.delenv("DRA_CONFORMANCE_RUN_ID", raising=False)

    def write_tests(self, source: str = BASE_TESTS, name: str = "test_fake_suite") -> None:
        self.pytester.makepyfile(**{name: textwrap.dedent(source)})

    def add_requirement(self, req_id: str, level: str, suite: str = "core") -> None:
        with self.catalog.open("a") as f:
            f.write(f"  - {{id: {req_id}, suite: {suite}, level: {level}, statement: Added.}}\n")

    def run(
        self,
        *args: str,
        run_name: str = "run",
        html: str = "never",
        plugin: str = "conformance.report.standalone",
    ) -> SuiteRun:
        run_dir = self.pytester.path / "reports" / run_name
        result = self.pytester.runpytest_subprocess(
            "-p",
            "no:dra_conformance",
            "-p",
            "no:cacheprovider",
            "-p",
            plugin,
            "--dra-report-dir",
            str(run_dir),
            f"--dra-html-report={html}",
            *args,
        )
        assert (run_dir / "summary.json").is_file(), result.stdout.str() + result.stderr.str()
        return SuiteRun(result, run_dir)


@pytest.fixture
def fake_suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> FakeSuite:
    return FakeSuite(pytester, monkeypatch)
