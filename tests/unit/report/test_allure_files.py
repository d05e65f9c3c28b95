"""Allure labels per test, environment.properties and categories.json."""

from __future__ import annotations

import json
import re

from conformance.report.allure import CATEGORIES, environment_properties

pytest_plugins = ["pytester"]

AWAITED = (
    "AssertionError: timed out after 60s waiting for claim t1/c allocated\n"
    "awaited: status.allocation set; last state: {'reservedFor': []}"
)
MESSAGES = {
    "Not applicable": ("skipped", "not applicable: feature gate X is disabled"),
    "Not run": ("skipped", "not run: not applicable: a plain skip (to run it: remove it)"),
    "Timeouts": ("failed", AWAITED),
    "Product defects": ("failed", "AssertionError: expected 1 result, got 2"),
    "Test defects": ("broken", "RuntimeError: cannot reach the cluster"),
}


def categorise(status: str, message: str, *, java: bool) -> str | None:
    """Which category Allure picks: the first match (Java matches whole messages, JS searches)."""
    for category in CATEGORIES:
        if status not in category["matchedStatuses"]:
            continue
        regex = category.get("messageRegex")
        if regex is None:
            return category["name"]
        match = re.fullmatch if java else re.search
        if match(regex, message):
            return category["name"]
    return None


def test_categories_sort_messages_in_both_allure_generations() -> None:
    for name, (status, message) in MESSAGES.items():
        assert categorise(status, message, java=True) == name
        assert categorise(status, message, java=False) == name
    assert categorise("passed", "", java=False) is None


def test_environment_properties_from_the_summary() -> None:
    summary = {
        "verdict": "CONFORMANT",
        "run": {"id": "r1", "xdist_workers": 4, "python": "3.11.7"},
        "driver": {"name": "gpu.example.com", "profile_path": "/p.yaml", "capabilities": []},
        "cluster": {
            "kubernetes_version": "v1.37.2",
            "provider": "kind",
            "nodes": [{"name": "w1"}, {"name": "w2"}],
            "feature_gates": {"B": True, "A": True, "C": False},
            "served_dra_apis": ["resource.k8s.io/v1"],
        },
    }
    props = environment_properties(summary)
    assert props["Verdict"] == "CONFORMANT"
    assert props["Driver"] == "gpu.example.com"
    assert props["Kubernetes.version"] == "v1.37.2"
    assert props["Cluster.nodes"] == "w1, w2"
    assert props["FeatureGates.enabled"] == "A, B"
    assert props["FeatureGates.disabled"] == "C"
    assert props["Pytest.workers"] == "4"
    assert "Driver.capabilities" not in props  # empty values are left out
    assert "Driver.profile.digest" not in props


def test_allure_results_of_a_run(fake_suite) -> None:
    fake_suite.write_tests()
    run = fake_suite.run()
    results = {r["name"]: r for r in run.allure_results()}
    assert len(results) == 7

    labels = {(x["name"], x["value"]) for x in results["test_publishes_slices"]["labels"]}
    assert {
        ("epic", "core"),
        ("feature", "DRA-CORE-002"),
        ("story", "The driver publishes ResourceSlices."),
        ("severity", "critical"),
        ("tag", "MUST"),
        ("driver", "gpu.example.com"),
        ("kubernetes_version", "v1.37.2"),
    } <= labels
    severities = {
        name: next(x["value"] for x in r["labels"] if x["name"] == "severity")
        for name, r in results.items()
        if name != "test_unmarked_setup_error"
    }
    assert severities["test_allocation_mode_all"] == "normal"  # SHOULD
    assert severities["test_prioritized_list"] == "minor"  # MAY
    # a test skipped as not applicable in its body is still labelled
    assert ("feature", "DRA-LOSS-003") in {
        (x["name"], x["value"]) for x in results["test_withdrawn_device"]["labels"]
    }

    allure_dir = run.run_dir / "allure-results"
    categories = json.loads((allure_dir / "categories.json").read_text())
    assert [c["name"] for c in categories] == [
        "Known platform issues",
        "Not applicable",
        "Not run",
        "Timeouts",
        "Product defects",
        "Test defects",
    ]
    env = dict(
        line.split("=", 1)
        for line in (allure_dir / "environment.properties").read_text().splitlines()
    )
    assert env["Verdict"] == "MODIFIED"  # without the harness: never the suite
    assert env["Driver"] == "gpu.example.com"
    assert env["Kubernetes.version"] == "v1.37.2"
    assert env["Cluster.provider"] == "kind"
    assert env["FeatureGates.enabled"] == "DRADeviceTaintRules"
    assert env["Driver.profile.digest"].startswith("sha256:")


def test_a_user_alluredir_is_kept(fake_suite, pytester) -> None:
    fake_suite.write_tests()
    own = pytester.path / "my-allure"
    run = fake_suite.run(f"--alluredir={own}")
    assert not (run.run_dir / "allure-results").exists()
    assert (own / "categories.json").is_file()
    assert len(list(own.glob("*-result.json"))) == 7
    assert run.summary["artifacts"]["allure_results"] == str(own)
