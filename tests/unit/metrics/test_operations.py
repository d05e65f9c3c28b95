"""conformance.metrics.operations: two snapshots -> the report's driver operations."""

from __future__ import annotations

import pytest
from helpers.metric_pages import DRIVER, V1, V1BETA1, grpc, kubelet_page, operation, scheduler_page

from conformance.metrics.operations import driver_operations
from conformance.metrics.parse import parse_metrics
from conformance.metrics.scrape import CONTROLLER_MANAGER, Snapshot

PREPARE, UNPREPARE = V1 + "NodePrepareResources", V1 + "NodeUnprepareResources"


def _source(keyword: str) -> str:
    """kubelet_a_worker -> "kubelet a-worker", kube_scheduler -> "kube-scheduler"."""
    if keyword.startswith("kubelet_"):
        return "kubelet " + keyword.removeprefix("kubelet_").replace("_", "-")
    return keyword.replace("_", "-")


def _snapshot(taken: float, unavailable: dict[str, str] | None = None, **pages: str) -> Snapshot:
    sources = {_source(name): parse_metrics(text) for name, text in pages.items()}
    return Snapshot(taken, sources, dict(unavailable or {}))


START = _snapshot(
    1000.0,
    kubelet_a_worker=kubelet_page(
        grpc(DRIVER, PREPARE, "OK", (1, 2, 2, 2, 2), 0.05),
        operation("PrepareResources", "false", (1, 2, 2, 2, 2), 0.06),
        claims_in_use=0,
    ),
    kubelet_b_worker=kubelet_page(),
)
END = _snapshot(
    1090.0,
    kubelet_a_worker=kubelet_page(
        grpc(DRIVER, PREPARE, "OK", (3, 9, 10, 11, 11), 1.5),  # +9 calls
        grpc(DRIVER, PREPARE, "Unknown", (0, 0, 0, 2, 2), 1.2),  # +2 failed calls
        grpc(DRIVER, UNPREPARE, "OK", (4, 4, 4, 4, 4), 0.02),
        operation("PrepareResources", "false", (3, 9, 10, 11, 11), 1.6),
        operation("PrepareResources", "true", (0, 0, 0, 2, 2), 1.3),
        claims_in_use=1,
    ),
    kubelet_b_worker=kubelet_page(
        grpc(DRIVER, V1BETA1 + "NodePrepareResources", "OK", (1, 1, 1, 1, 1), 0.004),
        claims_in_use=0,
    ),
)


def _by(rows: list[dict], *keys: str) -> dict[tuple, dict]:
    return {tuple(r[k] for k in keys): r for r in rows}


def test_grpc_calls_per_driver_and_method_over_nodes_and_api_versions() -> None:
    grpc_rows = _by(driver_operations(START, END)["grpc"], "driver", "method")
    prepare = grpc_rows[(DRIVER, "NodePrepareResources")]
    # node a: 9 OK and 2 failed since the start; node b: 1 through v1beta1
    assert (prepare["count"], prepare["errors"]) == (12, 2)
    assert prepare["mean_s"] == round((1.45 + 1.2 + 0.004) / 12, 6)
    # cumulative over the 12 calls: <=0.01: 3, <=0.05: 8, <=0.1: 9, <=1: 12
    assert prepare["p50"] == {"le": 0.05}
    assert prepare["p95"] == {"le": 1.0}
    assert prepare["p99"] == {"le": 1.0}
    assert prepare["buckets"] == {"le": [0.01, 0.05, 0.1, 1.0], "counts": [3, 5, 1, 3, 0]}
    unprepare = grpc_rows[(DRIVER, "NodeUnprepareResources")]
    assert (unprepare["count"], unprepare["errors"], unprepare["p99"]) == (4, 0, {"le": 0.01})


def test_kubelet_operations_count_errors_by_is_error() -> None:
    ops = _by(driver_operations(START, END)["kubelet_operations"], "operation")
    assert (ops[("PrepareResources",)]["count"], ops[("PrepareResources",)]["errors"]) == (11, 2)


def test_a_counter_reset_is_named_and_never_negative() -> None:
    restarted = _snapshot(
        1100.0,
        kubelet_a_worker=kubelet_page(grpc(DRIVER, PREPARE, "OK", (1, 1, 1, 1, 1), 0.001)),
        kubelet_b_worker=kubelet_page(),
    )
    doc = driver_operations(END, restarted)
    # its series are gone: only a restart takes a series away
    assert doc["counter_resets"] == [
        "kubelet a-worker: restarted at an unknown time, between the reads at 00:18:10Z and "
        "00:18:20Z (a dra_grpc_operations_duration_seconds series vanished); its counters are "
        "summed across it",
        "kubelet b-worker: restarted at an unknown time, between the reads at 00:18:10Z and "
        "00:18:20Z (a dra_grpc_operations_duration_seconds series vanished); its counters are "
        "summed across it",
    ]
    # what a-worker counted since it started again: one call
    assert _by(doc["grpc"], "driver", "method")[(DRIVER, "NodePrepareResources")]["count"] == 1
    assert all(r["count"] >= 0 for r in doc["grpc"])


def _prepares(count: int, *, started: float) -> str:
    return kubelet_page(grpc(DRIVER, PREPARE, "OK", (count,) * 5, 0.01 * count), started=started)


def test_a_restart_whose_counter_climbs_back_above_its_start_is_summed_across() -> None:
    """5 calls before the restart, 7 after it: the end reads 7 > 5, no counter went down."""
    start = _snapshot(1000.0, kubelet_a_worker=_prepares(0, started=900.0))
    before_restart = _snapshot(1040.0, kubelet_a_worker=_prepares(5, started=900.0))
    before_restart.partial = True
    end = _snapshot(1090.0, kubelet_a_worker=_prepares(7, started=1045.0))
    doc = driver_operations(start, end, [before_restart])
    assert _by(doc["grpc"], "driver", "method")[(DRIVER, "NodePrepareResources")]["count"] == 12
    assert doc["counter_resets"] == [
        "kubelet a-worker: restarted at 00:17:25Z, between the reads at 00:17:20Z and 00:18:10Z "
        "(process start time); its counters are summed across it"
    ]
    assert doc["reads"] == {"whole": 2, "around_restarts": 1}
    # read at the two ends only, the same restart goes unseen but for the start time
    ends_only = driver_operations(start, end)
    assert (
        _by(ends_only["grpc"], "driver", "method")[(DRIVER, "NodePrepareResources")]["count"] == 7
    )


def test_without_a_start_time_a_climbing_counter_is_taken_as_no_restart() -> None:
    start = _snapshot(
        1000.0, kubelet_a_worker=kubelet_page(grpc(DRIVER, PREPARE, "OK", (5,) * 5, 0.05))
    )
    end = _snapshot(
        1090.0, kubelet_a_worker=kubelet_page(grpc(DRIVER, PREPARE, "OK", (7,) * 5, 0.07))
    )
    doc = driver_operations(start, end)
    assert doc["counter_resets"] == []
    assert _by(doc["grpc"], "driver", "method")[(DRIVER, "NodePrepareResources")]["count"] == 2


def test_the_timeline_has_one_point_per_step_between_whole_reads() -> None:
    start = _snapshot(1000.0, kubelet_a_worker=_prepares(0, started=900.0))
    middle = _snapshot(1030.0, kubelet_a_worker=_prepares(4, started=900.0))
    around = _snapshot(1040.0, kubelet_a_worker=_prepares(5, started=900.0))
    around.partial = True  # a restart's read: counted in its step, not a point of its own
    end = _snapshot(1090.0, kubelet_a_worker=_prepares(2, started=1045.0))
    points = driver_operations(start, end, [middle, around])["timeline"]["points"]
    assert points == [
        {"t_s": 30.0, "prepare": 4, "unprepare": 0, "errors": 0, "claims_in_use": 0},
        {"t_s": 90.0, "prepare": 3, "unprepare": 0, "errors": 0, "claims_in_use": 0},
    ]


def test_a_source_without_a_start_figure_is_not_counted_from_zero() -> None:
    start = _snapshot(
        1000.0,
        {"kubelet a-worker": "forbidden (HTTP 403): nodes/proxy"},
        kubelet_b_worker=kubelet_page(),
    )
    doc = driver_operations(start, END)
    assert doc["sources"] == {
        "kubelet a-worker": "not available at the start (forbidden (HTTP 403): nodes/proxy)",
        "kubelet b-worker": "read",
    }
    assert [(r["method"], r["count"]) for r in doc["grpc"]] == [("NodePrepareResources", 1)]


def test_the_scheduler_rows_are_the_dra_plugin_only_and_absent_when_not_read() -> None:
    why = "HTTP 503: dial tcp 172.18.0.2:10259: connect: connection refused"
    doc = driver_operations(START, _snapshot(1090.0, {"kube-scheduler": why}))
    assert doc["scheduler"] is None
    assert doc["sources"]["kube-scheduler"] == f"not available ({why})"
    start = _snapshot(1000.0, kube_scheduler=scheduler_page((1, 1, 1, 1, 1), (0, 0, 0, 0, 0)))
    end = _snapshot(1090.0, kube_scheduler=scheduler_page((5, 8, 8, 8, 8), (0, 1, 1, 1, 3)))
    rows = _by(driver_operations(start, end)["scheduler"], "extension_point")
    assert set(rows) == {("PreFilter",), ("Filter",)}
    assert (rows[("PreFilter",)]["count"], rows[("PreFilter",)]["errors"]) == (7, 0)
    assert (rows[("Filter",)]["count"], rows[("Filter",)]["errors"]) == (3, 3)
    assert rows[("Filter",)]["p95"] == {"gt": 1.0}


def test_claims_in_use_per_driver_then_and_now() -> None:
    in_use = driver_operations(START, END)["claims_in_use"]
    assert in_use[DRIVER] == {"start": 0.0, "end": 1.0}
    assert in_use["<any>"] == {"start": 0.0, "end": 1.0}


def test_no_kubelet_read_leaves_the_kubelet_sections_not_available_never_empty() -> None:
    forbidden = {
        "kubelet a-worker": "forbidden (HTTP 403): nodes/proxy",
        "kubelet b-worker": "forbidden (HTTP 403): nodes/proxy",
    }
    doc = driver_operations(_snapshot(1000.0, forbidden), _snapshot(1090.0, forbidden))
    assert doc["grpc"] is None and doc["kubelet_operations"] is None
    why = "kubelet a-worker: not available (forbidden (HTTP 403): nodes/proxy)"
    assert doc["unavailable"]["grpc"] == why + " (and 1 more kubelet source(s) alike)"
    assert doc["unavailable"]["kubelet_operations"] == doc["unavailable"]["grpc"]
    assert doc["unavailable"]["scheduler"] == "kube-scheduler: not read"


def test_one_kubelet_read_is_enough_for_the_kubelet_sections() -> None:
    doc = driver_operations(START, END)
    assert doc["grpc"] and "grpc" not in doc["unavailable"]
    assert set(doc["unavailable"]) == {"scheduler"}


def _controller_manager_page(prefix: str, creates: str, created: int, allocated: int) -> str:
    """kube-controller-manager's claim-controller families under `prefix` (1.36's names or
    1.37's), beside a family of another controller."""
    return "\n".join(
        [
            f"# TYPE {prefix}_{creates}_total counter",
            f'{prefix}_{creates}_total{{admin_access="false",status="success"}} {created}',
            f"# TYPE {prefix}_resource_claims gauge",
            f'{prefix}_resource_claims{{admin_access="false",allocated="true",source=""}} '
            f"{allocated}",
            "# TYPE workqueue_adds_total counter",
            'workqueue_adds_total{name="resource_claim"} 9',
        ]
    )


@pytest.mark.parametrize(
    ("prefix", "creates"),
    [
        ("resourceclaim_controller", "creates"),  # up to 1.36
        ("dynamic_resource_allocation", "resourceclaim_creates"),  # 1.37
    ],
)
def test_the_claim_controllers_counters_then_and_now_under_either_releases_names(
    prefix: str, creates: str
) -> None:
    def snapshot(taken: float, created: int, allocated: int) -> Snapshot:
        page = _controller_manager_page(prefix, creates, created, allocated)
        metrics = parse_metrics(page, CONTROLLER_MANAGER.families)
        return Snapshot(taken, {"kube-controller-manager": metrics})

    rows = driver_operations(snapshot(1000.0, 2, 0), snapshot(1090.0, 7, 1))["claim_controller"]
    assert sorted((r["metric"], r["start"], r["end"]) for r in rows) == sorted(
        [(f"{prefix}_{creates}", 2.0, 7.0), (f"{prefix}_resource_claims", 0.0, 1.0)]
    )
