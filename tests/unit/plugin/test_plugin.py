"""The pytest plugin, run on a tiny catalog with pytester: collection rules, applicability,
inertness, and the controller -> worker hand-over under xdist (with the cluster stubbed)."""

from __future__ import annotations

import dataclasses
import json
import re
import textwrap
import types
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.file_lease_book import use_file_lease_book
from kube_apiserver.server import ApiServer, unique_name

from conformance.kube.cleanup import SweepResult
from conformance.kube.client import K8sClients
from conformance.model.devices import PublishedDevice
from conformance.model.frozen import FrozenMap
from conformance.run.context import ClusterFacts

pytest_plugins = ["pytester"]

D = "gpu.example.com"
CATALOG = {
    "schema": 1,
    "requirements": [
        {"id": "DRA-CORE-001", "suite": "core", "level": "MUST", "statement": "Registers."},
        {"id": "DRA-CORE-002", "suite": "core", "level": "MUST", "statement": "Publishes."},
        {"id": "DRA-CORE-003", "suite": "core", "level": "SHOULD", "statement": "Nice."},
        {
            "id": "DRA-ALLOC-001",
            "suite": "allocation",
            "level": "MUST",
            "statement": "Sel.",
            "gates": {"capabilities": ["prioritized-list"]},
        },
        {
            "id": "DRA-DRAIN-001",
            "suite": "node_drain",
            "level": "MAY",
            "statement": "Cordon.",
            "disruptive": True,
            "gates": {"min_version": "1.99"},
        },
    ],
}
PROFILE = {
    "apiVersion": "dra-conformance.io/v1alpha1",
    "kind": "DriverProfile",
    "driver": D,
    "deviceClasses": {"default": D},
    "selectors": {"big": {"expression": f'device.attributes["{D}"].model == "big"'}},
    "install": {"method": "preinstalled"},
    "verification": {"method": "env", "nameRegex": "^GPU_", "value": "device"},
}


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    # Load exactly this plugin (and xdist when asked), whether or not the package is installed.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.delenv("DRA_REQUIREMENTS_FILE", raising=False)
    monkeypatch.setenv("DRA_CONFORMANCE_CACHE", str(pytester.path / "cache"))
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios/requirements.yaml").write_text(yaml.safe_dump(CATALOG))
    (pytester.path / "profile.yaml").write_text(yaml.safe_dump(PROFILE))
    use_file_lease_book(pytester.path)  # no cluster: the book's double
    return pytester


def write_tests(pytester: pytest.Pytester, folder: str, body: str) -> None:
    path = pytester.path / "scenarios" / folder
    path.mkdir(parents=True, exist_ok=True)
    (path / f"test_{folder}.py").write_text("import pytest\n\n" + textwrap.dedent(body))


CORE_OK = """
@pytest.mark.dra_requirement("DRA-CORE-001")
def test_registers():
    pass

@pytest.mark.dra_requirement("DRA-CORE-002")
def test_publishes():
    pass
"""
ALLOC_OK = """
@pytest.mark.dra_requirement("DRA-ALLOC-001")
def test_selector():
    pass
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("-p", "conformance.plugin", "-p", "no:cacheprovider", *args)


def usage_errors(result: pytest.RunResult) -> str:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    return result.stderr.str()


def test_complete_catalog_collects(suite: pytest.Pytester) -> None:
    write_tests(suite, "core", CORE_OK)
    write_tests(suite, "allocation", ALLOC_OK)
    result = run(suite, "--collect-only", "-q", "scenarios")
    assert result.ret == 0, result.stderr.str()
    result.stdout.fnmatch_lines(
        [
            "*requirement coverage checked for suites: allocation, claim_deletion, "
            "core, device_loss, driver_update, extended_resource, lifecycle, no_preemption, "
            "node_drain, node_restart, security"
        ]
    )


def test_unknown_id_fails_collection(suite: pytest.Pytester) -> None:
    write_tests(
        suite,
        "core",
        CORE_OK
        + """
@pytest.mark.dra_requirement("DRA-CORE-01")
def test_typo():
    pass
""",
    )
    write_tests(suite, "allocation", ALLOC_OK)
    err = usage_errors(run(suite, "--collect-only", "scenarios"))
    catalog = suite.path / "scenarios/requirements.yaml"
    assert (
        f"scenarios/core/test_core.py::test_typo: requirement DRA-CORE-01 is not in "
        f"{catalog.resolve()} (did you mean DRA-CORE-001?)"
    ) in err


def test_missing_and_duplicate_markers(suite: pytest.Pytester) -> None:
    write_tests(
        suite,
        "core",
        CORE_OK
        + """
def test_unmarked():
    pass

@pytest.mark.dra_requirement("DRA-CORE-001")
@pytest.mark.dra_requirement("DRA-CORE-002")
def test_two():
    pass
""",
    )
    err = usage_errors(run(suite, "--collect-only", "scenarios/core"))
    assert (
        "scenarios/core/test_core.py::test_unmarked: no dra_requirement marker; add "
        '@pytest.mark.dra_requirement("<ID>") with an ID from'
    ) in err
    assert (
        "scenarios/core/test_core.py::test_two: 2 dra_requirement markers ['DRA-CORE-002', "
        "'DRA-CORE-001']; a test verifies exactly one requirement (split it)"
    ) in err


def test_an_old_marker_name_in_our_scenarios_fails_collection_with_the_new_name(
    suite: pytest.Pytester,
) -> None:
    write_tests(
        suite,
        "core",
        """
@pytest.mark.requirement("DRA-CORE-001")
@pytest.mark.devices("default")
def test_registers():
    pass

@pytest.mark.dra_requirement("DRA-CORE-002")
def test_publishes():
    pass
""",
    )
    # Elsewhere, without a profile, a `requirement` marker is someone else's business.
    suite.makepyfile(test_theirs="import pytest\n@pytest.mark.requirement('X')\ndef test_x(): pass")
    err = usage_errors(run(suite, "--collect-only", "scenarios/core", "test_theirs.py"))
    nodeid = "scenarios/core/test_core.py::test_registers"
    problems = [line.strip() for line in err.splitlines() if line.startswith("  ")]
    assert sorted(problems) == [  # one line each, and nothing else about that test
        f"{nodeid}: marker 'devices' was renamed: use @pytest.mark.dra_devices(...)",
        f"{nodeid}: marker 'requirement' was renamed: use @pytest.mark.dra_requirement(...)",
    ]


def test_a_run_refuses_an_old_marker_name_anywhere(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_extra="import pytest\n@pytest.mark.requirement('DRA-CORE-003')\ndef test_x(): pass"
    )
    err = usage_errors(
        run(suite, "--collect-only", "--dra-profile", "profile.yaml", "test_extra.py")
    )
    assert (
        "test_extra.py::test_x: marker 'requirement' was renamed: use "
        "@pytest.mark.dra_requirement(...)"
    ) in err


def test_must_without_test_fails_when_the_whole_catalog_is_collected(
    suite: pytest.Pytester,
) -> None:
    write_tests(suite, "core", CORE_OK)
    err = usage_errors(run(suite, "--collect-only", "scenarios"))
    assert (
        "MUST requirement DRA-ALLOC-001 (suite allocation) has no test: add one to "
        'scenarios/allocation/ marked @pytest.mark.dra_requirement("DRA-ALLOC-001")'
    ) in err
    assert "DRA-CORE-003" not in err  # SHOULD
    assert "DRA-DRAIN-001" not in err  # MAY


def test_suite_folder_checks_only_that_suite(suite: pytest.Pytester) -> None:
    write_tests(
        suite,
        "core",
        """
@pytest.mark.dra_requirement("DRA-CORE-001")
def test_registers():
    pass
""",
    )
    err = usage_errors(run(suite, "--collect-only", "scenarios/core"))
    assert "MUST requirement DRA-CORE-002 (suite core) has no test" in err
    assert "DRA-ALLOC-001" not in err


@pytest.mark.parametrize(
    "args,note",
    [
        (("scenarios", "-k", "registers"), "selection narrowed by -k"),
        (("scenarios/core/test_core.py",), "no whole suite folder was collected"),
        (("scenarios/core/test_core.py::test_registers",), "no whole suite folder was collected"),
        (
            ("scenarios", "--deselect", "scenarios/core/test_core.py::test_publishes"),
            "selection narrowed by --deselect",
        ),
    ],
)
def test_subset_selection_skips_the_coverage_check(
    suite: pytest.Pytester, args: tuple[str, ...], note: str
) -> None:
    write_tests(suite, "core", CORE_OK)  # allocation's MUST has no test
    result = run(suite, "--collect-only", "-q", *args)
    assert result.ret == 0, result.stderr.str()
    result.stdout.fnmatch_lines([f"*requirement coverage not checked: {note}"])


def test_requirement_must_live_in_its_suite_folder(suite: pytest.Pytester) -> None:
    write_tests(suite, "core", CORE_OK + ALLOC_OK)
    err = usage_errors(run(suite, "--collect-only", "scenarios/core"))
    assert (
        "scenarios/core/test_core.py::test_selector: DRA-ALLOC-001 belongs to suite allocation, "
        "but the test is in the core folder; move it to scenarios/allocation/"
    ) in err


def test_unknown_device_kind_with_a_profile(suite: pytest.Pytester) -> None:
    write_tests(
        suite,
        "core",
        CORE_OK
        + """
@pytest.mark.dra_requirement("DRA-CORE-003")
@pytest.mark.dra_devices("huge", 2)
@pytest.mark.dra_devices("big", 0)
def test_needs():
    pass
""",
    )
    err = usage_errors(
        run(suite, "--collect-only", "--dra-profile", "profile.yaml", "scenarios/core")
    )
    assert (
        "scenarios/core/test_core.py::test_needs: dra_devices('huge'): the profile has no such "
        "device kind; it names: default, big"
    ) in err
    assert (
        "scenarios/core/test_core.py::test_needs: dra_devices('big', count=0): count must be "
        "an integer >= 1 or 'all'"
    ) in err


GATED_ON_A_KIND = """
@pytest.mark.dra_requirement("DRA-ALLOC-001")
@pytest.mark.dra_devices("extended-resource")
@pytest.mark.dra_node_exclusive("extended-resource")
def test_selector():
    pass
"""


def test_a_kind_of_a_capability_the_profile_lacks_is_no_collection_problem(
    suite: pytest.Pytester,
) -> None:
    # DRA-ALLOC-001 needs prioritized-list, which the profile does not declare: the test is
    # not applicable when it runs, so the device kind that capability brings need not exist.
    write_tests(suite, "allocation", GATED_ON_A_KIND)
    result = run(suite, "--collect-only", "--dra-profile", "profile.yaml", "scenarios/allocation")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()


def test_a_kind_missing_while_its_capability_is_declared_is_a_profile_problem(
    suite: pytest.Pytester,
) -> None:
    (suite.path / "profile.yaml").write_text(
        yaml.safe_dump({**PROFILE, "capabilities": ["prioritized-list"]})
    )
    write_tests(suite, "allocation", GATED_ON_A_KIND)
    err = usage_errors(
        run(suite, "--collect-only", "--dra-profile", "profile.yaml", "scenarios/allocation")
    )
    assert (
        "scenarios/allocation/test_allocation.py::test_selector: dra_devices('extended-resource'):"
        " the profile has no such device kind; it names: default, big"
    ) in err


def test_bad_profile_is_a_usage_error(suite: pytest.Pytester) -> None:
    (suite.path / "bad.yaml").write_text(yaml.safe_dump({**PROFILE, "drivr": "x"}))
    err = usage_errors(run(suite, "--collect-only", "--dra-profile", "bad.yaml"))
    assert "profile bad.yaml: drivr: unknown field; did you mean 'driver'?" in err


def test_scenarios_need_a_profile_to_run(suite: pytest.Pytester) -> None:
    write_tests(suite, "core", CORE_OK)
    err = usage_errors(run(suite, "scenarios/core"))
    assert (
        "scenario tests need a driver profile: pass --dra-profile FILE (the bundled fake "
        "driver: --dra-profile drivers/fake/profile.yaml)"
    ) in err


@pytest.mark.parametrize(
    "profile,order", [((), ["a", "b"]), (("--dra-profile", "profile.yaml"), ["b", "a"])]
)
def test_only_a_run_reorders_tests_by_lease(
    suite: pytest.Pytester, profile: tuple[str, ...], order: list[str]
) -> None:
    write_tests(
        suite,
        "core",
        """
@pytest.mark.dra_requirement("DRA-CORE-001")
@pytest.mark.dra_devices("default", exclusive=True)
def test_a():
    pass

@pytest.mark.dra_requirement("DRA-CORE-002")
@pytest.mark.dra_node_exclusive()
def test_b():
    pass
""",
    )
    result = run(suite, "--collect-only", "-q", *profile, "scenarios/core")
    assert result.ret == 0, result.stderr.str()
    names = [line.rsplit("::", 1)[1] for line in result.stdout.lines if "::test_" in line]
    assert names == [f"test_{n}" for n in order]


def test_inert_for_ordinary_tests(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_plain="""
        import pytest

        @pytest.mark.dra_devices("anything")
        def test_plain():
            pass
    """
    )
    result = run(suite, "test_plain.py", "--strict-markers")
    result.assert_outcomes(passed=1)
    assert "dra-conformance" not in result.stdout.str()


# --- with a stubbed cluster ---------------------------------------------------------------


class FakeHandle:
    kubeconfig = "/nonexistent/kubeconfig"
    context = None
    name = "stub"
    provisioned = False
    provider = "existing"
    node_containers: dict[str, str] = {}
    torn_down = False

    def teardown(self) -> None:
        FakeHandle.torn_down = True


def stub_cluster(monkeypatch: pytest.MonkeyPatch, calls: dict[str, Any]) -> None:
    from conformance.cluster import provider
    from conformance.install import installer
    from conformance.plugin import finish, fixtures, session

    def provision(**kwargs: Any) -> FakeHandle:
        calls["provision"] = kwargs
        return FakeHandle()

    facts = ClusterFacts(
        git_version="v1.37.2",
        served_resources=FrozenMap({"resource.k8s.io/v1": ("deviceclasses", "resourceslices")}),
        feature_gates=FrozenMap({"DRADeviceTaintRules": True}),
        feature_gates_error=None,
        nodes=("w1",),
        devices=(
            PublishedDevice("w1", "gpu-0", "w1", FrozenMap({f"{D}/model": "big"})),
            PublishedDevice("w1", "gpu-1", "w1", FrozenMap({f"{D}/model": "small"})),
        ),
        device_classes=FrozenMap(
            {D: {"spec": {"selectors": [{"cel": {"expression": f'device.driver == "{D}"'}}]}}}
        ),
    )

    def sweep(*args: Any, **kwargs: Any) -> SweepResult:
        calls["sweep"] = args[1]
        return SweepResult(namespaces=["ns-a"])

    # calls["stale_reads"]: how many first reads of the facts miss the devices (a node's
    # slices gone since the readiness wait); readiness says so until a read has them.
    calls.setdefault("stale_reads", 0)
    calls["facts_reads"] = calls["wait_ready"] = 0

    def read_facts(k8s: Any, profile: Any) -> ClusterFacts:
        calls["facts_reads"] += 1
        stale = calls["facts_reads"] <= calls["stale_reads"]
        return dataclasses.replace(facts, devices=()) if stale else facts

    def wait_ready(*args: Any, **kwargs: Any) -> None:
        calls["wait_ready"] += 1

    def readiness_state(k8s: Any, profile: Any) -> Any:
        return types.SimpleNamespace(ready=calls["facts_reads"] > calls["stale_reads"])

    monkeypatch.setattr(provider, "provision", provision)
    monkeypatch.setattr(installer, "ensure_reachable", lambda *a: None)
    monkeypatch.setattr(installer, "wait_ready", wait_ready)
    monkeypatch.setattr(session, "read_cluster_facts", read_facts)
    monkeypatch.setattr(session, "readiness_state", readiness_state)
    # the workload-image preflight runs a pod: tests/apiserver/plugin/test_preflight.py
    monkeypatch.setattr(session, "check_workload_image", lambda c: calls.update(preflight=c))
    for module in (session, fixtures, finish):
        monkeypatch.setattr(module, "load_clients", lambda *a: object())
    monkeypatch.setattr(finish, "sweep_run", sweep)


STUBBED_TESTS = """
@pytest.mark.dra_requirement("DRA-CORE-001")
def test_registers(dra_context):
    assert dra_context.git_version == "v1.37.2"
    assert dra_context.device_sets["big"] == {"w1/gpu-0"}
    assert dra_context.device_sets["default"] == {"w1/gpu-0", "w1/gpu-1"}

@pytest.mark.dra_requirement("DRA-CORE-002")
@pytest.mark.dra_devices("big")
def test_publishes(request):
    lease = request.getfixturevalue("device_lease")
    assert lease.needs[0].kind == "big"
"""
STUBBED_ALLOC = """
@pytest.mark.dra_requirement("DRA-ALLOC-001")
def test_selector():
    pass
"""
STUBBED_DRAIN = """
@pytest.mark.dra_requirement("DRA-DRAIN-001")
def test_cordon():
    pass
"""


def stubbed_suite(suite: pytest.Pytester) -> None:
    write_tests(suite, "core", STUBBED_TESTS)
    write_tests(suite, "allocation", STUBBED_ALLOC)
    write_tests(suite, "node_drain", STUBBED_DRAIN)


def _junit(path: Path) -> dict[str, dict[str, Any]]:
    cases = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        skipped = case.find("skipped")
        cases[case.get("name")] = {
            "props": props,
            "skip": skipped.get("message") if skipped is not None else None,
        }
    return cases


def _stubbed_run(suite: pytest.Pytester) -> list[str]:
    """The options of a run against the stubbed cluster (`stub_cluster`)."""
    return [
        "--dra-profile",
        "profile.yaml",
        "--dra-cluster",
        "existing",
        "--dra-workload-image",
        "localhost/w:1",
        "--dra-report-dir",
        str(suite.path / "run"),
    ]


@pytest.mark.parametrize("workers", [None, "2"])
def test_run_with_stubbed_cluster(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: str | None
) -> None:
    calls: dict[str, Any] = {}
    stub_cluster(monkeypatch, calls)
    stubbed_suite(suite)
    args = [*_stubbed_run(suite), "--dra-run-id", "run-1", "--junitxml", "junit.xml", "scenarios"]
    if workers:
        args = ["-p", "xdist.plugin", "-n", workers, *args]
    result = run(suite, *args)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=2, skipped=2)
    assert calls["provision"]["kind"] == "existing"
    assert calls["sweep"] == "run-1"
    assert calls["preflight"].workload_image == "localhost/w:1"  # before the tests ran
    cases = _junit(suite.path / "junit.xml")
    assert cases["test_registers"]["props"] == {"requirement": "DRA-CORE-001"}
    assert cases["test_selector"]["props"]["dra_outcome"] == "not-applicable"
    assert cases["test_selector"]["skip"] == (
        "not applicable: the driver profile does not declare capability prioritized-list "
        "(add prioritized-list to capabilities in profile.yaml "  # relative to the run's dir
        "if the driver supports it)"
    )
    # Not applicable wins over not run: it would not apply even where it could run.
    assert cases["test_cordon"]["skip"] == (
        "not applicable: introduced in Kubernetes 1.99 (the cluster runs 1.37)"
    )
    result.stdout.fnmatch_lines(["cleaned up 1 namespace(s)"])


def test_the_inventory_is_read_again_when_slices_went_after_the_readiness_wait(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: dict[str, Any] = {"stale_reads": 1}
    stub_cluster(monkeypatch, calls)
    write_tests(suite, "core", STUBBED_TESTS)
    result = run(suite, *_stubbed_run(suite), "scenarios/core")
    # test_registers checks the device sets: sized on the second read, not on the empty one
    result.assert_outcomes(passed=2)
    assert (calls["wait_ready"], calls["facts_reads"]) == (2, 2)


def test_collection_problems_fail_an_xdist_run_with_the_message(suite: pytest.Pytester) -> None:
    write_tests(
        suite,
        "core",
        """
@pytest.mark.dra_requirement("DRA-CORE-01")
def test_typo():
    pass
""",
    )
    result = run(suite, "-p", "xdist.plugin", "-n", "2", "scenarios/core")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*scenarios/core/test_core.py::test_typo: requirement DRA-CORE-01 is not in "
            "*requirements.yaml (did you mean DRA-CORE-001?)"
        ]
    )
    result.assert_outcomes(errors=1)


# --- against the test API server: namespaces, diagnostics, sweep ----------------------------

E2E_TESTS = """
@pytest.mark.dra_requirement("DRA-CORE-001")
def test_registers(test_namespace, k8s, build, cluster_objects):
    labels = k8s.core.read_namespace(test_namespace).metadata.labels
    assert labels["dra-conformance.io/run"] == "@RUN_ID@"
    cluster_objects.create(build.priority_class("prio-" + test_namespace, 10))

@pytest.mark.dra_requirement("DRA-CORE-002")
def test_publishes(test_namespace, k8s, build):
    k8s.core.create_namespaced_pod(test_namespace, build.pod("p", test_namespace, image="w"))
    assert False, "boom"
"""


def test_namespaces_diagnostics_and_sweep(
    suite: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    kube_apiserver: ApiServer,
    apiserver_k8s: K8sClients,
) -> None:
    from conformance.cluster import provider
    from conformance.install import installer
    from conformance.model.naming import RUN_LABEL

    run_id = unique_name("run")  # the run's sweep deletes all that carries it, cluster-wide
    handle = FakeHandle()
    handle.kubeconfig = str(kube_apiserver.kubeconfig)
    monkeypatch.setattr(provider, "provision", lambda **kw: handle)
    # No driver runs on the test API server; readiness is tested in the e2e tier.
    monkeypatch.setattr(installer, "wait_ready", lambda *a, **k: None)
    write_tests(suite, "core", E2E_TESTS.replace("@RUN_ID@", run_id))
    run_dir = suite.path / "run"
    result = run(
        suite,
        "--dra-profile",
        "profile.yaml",
        "--dra-cluster",
        "existing",
        "--dra-workload-image",
        "w",
        "--dra-run-id",
        run_id,
        "--dra-report-dir",
        str(run_dir),
        "scenarios/core",
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*dra-conformance diagnostics*",
            f"diagnostics: {run_dir}/diagnostics/*test_publishes*",
        ]
    )
    diag = next((run_dir / "diagnostics").glob("*test_publishes*"))
    tail = run_id.rsplit("-", 1)[-1]  # a namespace names the run by its random tail
    assert f"Name:         dra-{tail}-test-publishes-" in (diag / "pods.txt").read_text()
    # Nothing of the run is left: namespaces (finished by the namespace controller), the
    # PriorityClass, the registry.
    selector = f"{RUN_LABEL}={run_id}"
    assert not apiserver_k8s.core.list_namespace(label_selector=selector).items
    assert not apiserver_k8s.scheduling.list_priority_class(label_selector=selector).items
    assert not list((run_dir / ".harness/namespaces").glob("*.json"))
    # The tests' namespaces may still be terminating when the sweep starts; it waits for them.
    sweep = [line for line in result.outlines if line.startswith(("cleaned up", "nothing left"))]
    assert len(sweep) == 1 and "STILL PRESENT" not in sweep[0], sweep


def test_a_cluster_that_cannot_be_set_up_stops_the_run_with_the_reason(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conformance.cluster import provider
    from conformance.errors import ClusterError

    def provision(**kwargs: Any) -> None:
        raise ClusterError("kubeconfig /x does not exist", "pass --kubeconfig PATH")

    monkeypatch.setattr(provider, "provision", provision)
    write_tests(suite, "core", CORE_OK)
    result = run(
        suite,
        "--dra-profile",
        "profile.yaml",
        "--dra-cluster",
        "existing",
        "--dra-report-dir",
        str(suite.path / "run"),
        "scenarios/core",
    )
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    output = result.stdout.str() + result.stderr.str()
    line = "dra-conformance: error: kubeconfig /x does not exist; pass --kubeconfig PATH"
    assert [x for x in output.splitlines() if "kubeconfig /x" in x] == [line], output
    assert "_pytest.outcomes.Exit" not in output
    # No test ran (pytest prints "no tests ran" only when no warning was recorded either).
    pytest_summary = result.stdout.lines[-1]
    assert not re.search(r"\d+ (passed|failed|errors?)\b", pytest_summary), output
    summary = json.loads((suite.path / "run" / "summary.json").read_text())
    assert (summary["verdict"], summary["exit_code"]) == ("NO-VERDICT", 2)
    assert summary["no_verdict_reason"] == "the run could not be set up"
    assert summary["no_verdict_detail"] == "kubeconfig /x does not exist; pass --kubeconfig PATH"


UPGRADE_OK = """
@pytest.mark.dra_requirement("DRA-UPG-001")
def test_keeps_running():
    pass
"""


def test_the_upgrade_suite_is_collected_only_by_a_rehearsal(suite: pytest.Pytester) -> None:
    catalog = {
        **CATALOG,
        "requirements": [
            *CATALOG["requirements"],
            {"id": "DRA-UPG-001", "suite": "upgrade", "level": "MUST", "statement": "Keeps."},
        ],
    }
    (suite.path / "scenarios/requirements.yaml").write_text(yaml.safe_dump(catalog))
    write_tests(suite, "core", CORE_OK)
    write_tests(suite, "allocation", ALLOC_OK)
    write_tests(suite, "upgrade", UPGRADE_OK)
    # an ordinary run neither collects it nor misses its MUST
    result = run(suite, "--collect-only", "-q", "scenarios")
    assert result.ret == 0, result.stderr.str()
    assert "test_keeps_running" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*checked for suites: *security", "3 tests collected*"])
    # named on its own, it says what it needs
    err = usage_errors(run(suite, "--collect-only", "scenarios/upgrade"))
    assert "rehearses a Kubernetes upgrade of the cluster; run it with --dra-upgrade-to" in err
    # a rehearsal collects it, judged against the upgrade requirements
    result = run(suite, "--collect-only", "-q", "--dra-upgrade-to", "v1.37.2", "scenarios/upgrade")
    assert result.ret == 0, result.stderr.str()
    result.stdout.fnmatch_lines(["*test_keeps_running*", "*checked for suites: upgrade*"])
