"""The driver operations and the cluster inventory in summary.md, JUnit and Allure."""

from __future__ import annotations

import json
from pathlib import Path

from conformance.report.allure_run import FIXTURE_NAME, write_run_attachments
from conformance.report.driver_markdown import (
    cluster_inventory_section,
    driver_operations_section,
)
from conformance.report.junit import driver_operation_properties

DRIVER = "gpu.example.com"
PREPARE = {
    "driver": DRIVER,
    "method": "NodePrepareResources",
    "count": 40,
    "errors": 2,
    "mean_s": 0.0123,
    "p50": {"le": 0.01},
    "p95": {"le": 0.05},
    "p99": {"gt": 10.0},
}
OPERATIONS = {
    "window": {"start": "2026-01-01T00:00:00Z", "end": "2026-01-01T00:05:00Z", "duration_s": 300},
    "quantiles": "from histogram buckets",
    "sources": {
        "kubelet node-1": "read",
        "kubelet node-2": "read",
        "kube-scheduler": "not available (HTTP 503: connection refused)",
    },
    "grpc": [PREPARE],
    "kubelet_operations": [
        {
            "operation": "PrepareResources",
            "count": 40,
            "errors": 2,
            "mean_s": 0.02,
            "p50": {"le": 0.025},
            "p95": {"le": 0.1},
            "p99": {"le": 0.1},
        },
    ],
    "scheduler": None,
    "scheduler_note": None,
    "claims_in_use": {DRIVER: {"start": 0.0, "end": 1.0}},
    "claim_controller": [],
    "counter_resets": ["kubelet node-2: dra_grpc_operations_duration_seconds was reset"],
}
INVENTORY = {
    "claims": {"in use": 1, "allocated, not in use": 0, "pending": 2, "deleting": 0, "total": 3},
    "pools": [
        {"driver": DRIVER, "pool": "node-1", "devices": 4, "allocated": 1, "free": 3, "tainted": 1}
    ],
}
SUMMARY = {"driver_operations": OPERATIONS, "cluster_inventory": INVENTORY}


def test_the_table_shows_each_operation_with_bucket_estimates() -> None:
    text = "\n".join(driver_operations_section(SUMMARY))
    assert (
        f"| kubelet → driver (gRPC) | {DRIVER} | NodePrepareResources | 40 | 2 | 0.0123 s "
        "| ≤ 0.01 s | ≤ 0.05 s | > 10 s |" in text
    )
    assert "| kubelet DRA manager |  | PrepareResources | 40 | 2 | 0.0200 s |" in text
    assert "- kube-scheduler: not available (HTTP 503: connection refused)" in text
    assert "- read: kubelet node-1, kubelet node-2" in text
    assert f"- claims in use ({DRIVER}, all kubelets): 0 at the start, 1 at the end" in text
    assert "- restart: kubelet node-2: dra_grpc_operations_duration_seconds" in text


def test_figures_not_available_or_not_measured_are_said_never_zero() -> None:
    gone = {"driver_operations": {"not_available": "the run was interrupted: not measured"}}
    assert "Not available (the run was interrupted: not measured)." in driver_operations_section(
        gone
    )
    assert driver_operations_section({"driver_operations": None})[2].startswith("Not measured")
    assert cluster_inventory_section({})[2].startswith("Not measured")


def test_kubelet_figures_that_could_not_be_read_are_not_available_with_why() -> None:
    why = "kubelet node-1: not available (forbidden (HTTP 403): nodes/proxy)"
    forbidden = OPERATIONS | {
        "grpc": None,
        "kubelet_operations": None,
        "unavailable": {"grpc": why, "kubelet_operations": why},
    }
    text = "\n".join(driver_operations_section({"driver_operations": forbidden}))
    assert f"- kubelet → driver (gRPC): not available ({why})" in text
    assert f"- kubelet DRA manager: not available ({why})" in text
    assert "| count |" not in text and "No DRA operation was measured" not in text
    props = driver_operation_properties({"driver_operations": forbidden})
    assert props["dra_driver_operations:grpc"] == f"not available ({why})"
    assert not any(name.startswith("dra_op:") for name in props)


def test_the_inventory_table() -> None:
    text = "\n".join(cluster_inventory_section(SUMMARY))
    assert (
        "ResourceClaims: 1 in use, 0 allocated, not in use, 2 pending, 0 deleting (total 3)" in text
    )
    assert f"| {DRIVER} | node-1 | 4 | 1 | 3 | 1 |" in text


def test_junit_properties_one_per_operation_and_unread_sources() -> None:
    props = driver_operation_properties(SUMMARY)
    assert props[f"dra_op:grpc:{DRIVER}:NodePrepareResources"] == (
        "count 40, errors 2, mean 0.0123 s, p50 ≤ 0.01 s, p95 ≤ 0.05 s, p99 > 10 s"
    )
    assert "dra_op:kubelet:-:PrepareResources" in props
    assert props["dra_metrics_source:kube-scheduler"].startswith("not available")
    assert "dra_metrics_source:kubelet node-1" not in props
    assert driver_operation_properties({"driver_operations": {"not_available": "x"}}) == {
        "dra_driver_operations": "not available (x)"
    }
    assert driver_operation_properties({"driver_operations": None}) == {}


def test_allure_container_attaches_the_figures_to_every_test_of_the_run(tmp_path: Path) -> None:
    for name, uid in (("f1", "aaa"), ("f2", "bbb")):  # allure-pytest's file names differ
        (tmp_path / f"{name}-result.json").write_text(json.dumps({"uuid": uid}))
    chart = tmp_path.parent / "latency.svg"
    chart.write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    path = write_run_attachments(tmp_path, SUMMARY, [chart])
    container = json.loads(path.read_text())
    assert container["children"] == ["aaa", "bbb"]
    (fixture,) = container["afters"]
    assert fixture["name"] == FIXTURE_NAME
    names = [a["name"] for a in fixture["attachments"]]
    assert names == [
        "Driver operations and cluster inventory",
        "driver_operations.json",
        "latency.svg",
    ]
    text = (tmp_path / fixture["attachments"][0]["source"]).read_text()
    assert "NodePrepareResources | 40 | 2" in text
    figures = json.loads((tmp_path / fixture["attachments"][1]["source"]).read_text())
    assert figures == SUMMARY
    assert fixture["attachments"][2]["type"] == "image/svg+xml"
