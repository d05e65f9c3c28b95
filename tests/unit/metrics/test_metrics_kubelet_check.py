"""The per-test kubelet check: a kubelet's DRA figures for one driver from its metrics page, and
the judgement of one test's window (conformance/plugin/kubelet_check.py) over scripted reads."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from helpers.metric_pages import DRIVER, V1, V1BETA1, grpc, kubelet_page, operation

from conformance.plugin import kubelet_check
from conformance.plugin.kubelet_check import KubeletWatch, count_per_node, verdict
from conformance.scenario_api.kubelet_dra import (
    KubeletDra,
    call_figures,
    describe_call_figures,
    describe_failures,
    parse_kubelet_dra,
)

NODE = "worker"


def page(unprepare_errors: int = 0, unavailable: int = 0, in_use: int = 0, ok: int = 3) -> str:
    series = [
        grpc(DRIVER, V1 + "NodePrepareResources", "OK", (0, ok, ok, ok, ok), 0.1),
        grpc("other.example.com", V1 + "NodeUnprepareResources", "Internal", (1, 1, 1, 1, 1), 0.1),
        operation("UnprepareResources", "false", (0, 2, 2, 2, 2), 0.2),
        operation("PrepareResources", "true", (1, 1, 1, 1, 1), 0.2),  # not an unprepare
    ]
    if unprepare_errors:
        n = unprepare_errors
        series.append(operation("UnprepareResources", "true", (0, n, n, n, n), 0.2))
    if unavailable:
        n = unavailable
        series.append(grpc(DRIVER, V1BETA1 + "NodeUnprepareResources", "Unavailable", (n,) * 5, 1))
    return kubelet_page(*series, claims_in_use=in_use)


def test_the_drivers_figures_are_read_from_a_kubelet_page() -> None:
    read = parse_kubelet_dra(page(unprepare_errors=2, unavailable=1, in_use=4), NODE, DRIVER)
    assert read.unprepare_errors == 2
    assert read.claims_in_use == 4
    assert read.count("NodePrepareResources") == 3
    assert read.failed_calls() == {("NodeUnprepareResources", "Unavailable"): 1}


def test_a_kubelet_without_the_gauge_says_unknown_not_zero() -> None:
    text = "\n".join(line for line in page().splitlines() if "claims_in_use" not in line)
    assert parse_kubelet_dra(text, NODE, DRIVER).claims_in_use is None


def test_deltas_and_a_restarted_kubelet() -> None:
    start = parse_kubelet_dra(page(unprepare_errors=2, ok=3), NODE, DRIVER)
    later = parse_kubelet_dra(page(unprepare_errors=5, ok=4), NODE, DRIVER)
    delta = later.since(start)
    assert (delta.unprepare_errors, delta.count("NodePrepareResources")) == (3, 1)
    assert describe_failures(delta).startswith("3 failed UnprepareResources")
    restarted = parse_kubelet_dra(page(unprepare_errors=1, ok=1), NODE, DRIVER)
    assert restarted.since(start) == restarted  # counted since the restart
    assert describe_failures(later.since(later)) == ""


def claim(node: str | None, driver: str = DRIVER) -> dict[str, Any]:
    allocation: dict[str, Any] = {"devices": {"results": [{"driver": driver, "device": "d"}]}}
    if node:
        term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        allocation["nodeSelector"] = {"nodeSelectorTerms": [term]}
    return {"status": {"allocation": allocation}}


def test_claims_are_counted_on_the_node_their_allocation_selects() -> None:
    claims = [claim(NODE), claim(NODE), claim("other"), claim(None), claim(NODE, "x.io"), {}]
    assert count_per_node(claims, DRIVER) == {"*": 1, NODE: 2, "other": 1}


class ScriptedCluster:
    """`get_raw` for the kubelet page (the next of `pages` per read) and the claims list."""

    def __init__(self, pages: list[str], claims: list[list[dict[str, Any]]]) -> None:
        self.pages, self.claims = pages, claims
        self.core = SimpleNamespace(list_namespaced_event=self.events)
        self.warning_events: list[Any] = []

    def get_raw(self, path: str, accept: str = "", timeout: float = 0) -> str:
        if path.endswith("/resourceclaims"):
            items = self.claims.pop(0) if len(self.claims) > 1 else self.claims[0]
            return json.dumps({"items": items})
        return self.pages.pop(0) if len(self.pages) > 1 else self.pages[0]

    def events(self, namespace: str, **_: Any) -> Any:
        return SimpleNamespace(items=self.warning_events)


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kubelet_check.time, "sleep", lambda s: None)


def test_a_clean_window_passes_at_the_first_read() -> None:
    cluster = ScriptedCluster([page(in_use=1), page(in_use=1)], [[claim(NODE)]])
    watch = KubeletWatch.begin(cluster, DRIVER, [NODE])  # type: ignore[arg-type]
    assert watch.finish([], errors_expected=False) == []
    assert cluster.pages == [page(in_use=1)]  # one read at the start, one at the end


def test_a_claim_unprepared_late_passes_once_it_settles() -> None:
    # force delete: the claim is gone from the API a few seconds before the kubelet lets go
    pages = [page(in_use=0), page(in_use=1), page(in_use=1), page(in_use=0)]
    watch = KubeletWatch.begin(ScriptedCluster(pages, [[]]), DRIVER, [NODE])  # type: ignore[arg-type]
    assert watch.finish([], errors_expected=False) == []


def test_a_claim_never_unprepared_and_its_failures_are_named(monkeypatch) -> None:
    monkeypatch.setattr(kubelet_check, "SETTLE_S", 0.0)
    pages = [page(in_use=0), page(in_use=2, unprepare_errors=4)]
    watch = KubeletWatch.begin(ScriptedCluster(pages, [[]]), DRIVER, [NODE])  # type: ignore[arg-type]
    problems = watch.finish([], errors_expected=True)  # errors on purpose: the leak still counts
    assert len(problems) == 1
    assert problems[0].startswith(f"the kubelet on node {NODE} still holds 2 claim(s) of {DRIVER}")
    assert "2 claim(s) gone from the API were never unprepared on the node" in problems[0]
    assert "4 failed UnprepareResources" in problems[0]


def test_errors_and_events_count_unless_the_test_caused_them() -> None:
    def window() -> KubeletWatch:
        pages = [page(), page(unavailable=2)]
        return KubeletWatch.begin(ScriptedCluster(pages, [[]]), DRIVER, [NODE])  # type: ignore[arg-type]

    event = "FailedPrepareDynamicResources on pod p: boom"
    problems = window().finish([event], errors_expected=False)
    assert problems == [
        f"event {event}",
        f"the kubelet on node {NODE} reported gRPC NodeUnprepareResources Unavailable x2 "
        "(dra_grpc_operations_duration_seconds)",
    ]
    assert window().finish([event], errors_expected=True) == []
    message = verdict(problems, (NODE,), shared=True)
    assert message.startswith("the kubelet saw DRA failures this test did not cause (node worker")


def test_only_prepare_and_unprepare_failure_events_are_listed() -> None:
    cluster = ScriptedCluster([page()], [[]])
    cluster.warning_events = [
        SimpleNamespace(
            reason=reason, message=" m ", involved_object=SimpleNamespace(kind="Pod", name="p")
        )
        for reason in (
            "FailedPrepareDynamicResources",
            "BackOff",
            "FailedUnprepareDynamicResources",
        )
    ]
    watch = KubeletWatch.begin(cluster, DRIVER, [NODE])  # type: ignore[arg-type]
    assert watch.events("ns") == [
        "FailedPrepareDynamicResources on pod p: m",
        "FailedUnprepareDynamicResources on pod p: m",
    ]


def test_an_unreadable_kubelet_is_left_out() -> None:
    class Down(ScriptedCluster):
        def get_raw(self, path: str, accept: str = "", timeout: float = 0) -> str:
            if "/nodes/" in path:
                raise OSError("connection refused")
            return super().get_raw(path, accept, timeout)

    watch = KubeletWatch.begin(Down([page()], [[]]), DRIVER, [NODE])  # type: ignore[arg-type]
    assert watch.start == {} and watch.finish([], errors_expected=False) == []
    assert isinstance(parse_kubelet_dra(page(), NODE, DRIVER), KubeletDra)


def test_a_restarted_kubelet_counts_no_error_and_unjudged_nodes_are_not_read() -> None:
    pages = [page(unprepare_errors=3, ok=5), page(unprepare_errors=1, ok=1)]
    watch = KubeletWatch.begin(ScriptedCluster(pages, [[]]), DRIVER, [NODE])  # type: ignore[arg-type]
    assert watch.finish([], errors_expected=False) == []  # another test restarted it
    cluster = ScriptedCluster([page(), page(unavailable=1)], [[]])
    watch = KubeletWatch.begin(cluster, DRIVER, [NODE])  # type: ignore[arg-type]
    assert watch.finish([], errors_expected=False, judged={"elsewhere"}) == []
    assert cluster.pages == [page(unavailable=1)]  # never read at the end


def calls_page(prepared: tuple[int, ...], prepare_s: float, failed: int = 0) -> str:
    """A page with the driver's prepares (cumulative buckets) and `failed` Unavailable ones."""
    series = [grpc(DRIVER, V1 + "NodePrepareResources", "OK", prepared, prepare_s)]
    if failed:
        series.append(
            grpc(DRIVER, V1 + "NodePrepareResources", "Unavailable", (0,) * 4 + (failed,), 2.0)
        )
    return kubelet_page(*series)


def test_a_windows_calls_are_its_own_latency_figures() -> None:
    # before: 3 prepares of 0.06 s in all; after: 2 more of 0.02 s and 0.08 s, one failed call
    start = calls_page((1, 2, 3, 3, 3), 0.06)
    end = calls_page((2, 3, 4, 5, 5), 0.16, failed=1)
    cluster = ScriptedCluster([start, end], [[]])
    watch = KubeletWatch.begin(cluster, DRIVER, [NODE])  # type: ignore[arg-type]
    watch.finish([], errors_expected=True)
    assert watch.call_figures() == [
        {
            "method": "NodePrepareResources",
            "calls": 3,
            "errors": 1,
            "mean_s": round((0.1 + 2.0) / 3, 6),
            "p95": {"gt": 1.0},  # the failed call is beyond the last bucket
            "nodes": [NODE],
        }
    ]


def test_no_call_in_the_window_no_figures_and_two_nodes_add_up() -> None:
    same = calls_page((1, 2, 3, 3, 3), 0.06)
    watch = KubeletWatch.begin(ScriptedCluster([same, same], [[]]), DRIVER, [NODE])  # type: ignore[arg-type]
    watch.finish([], errors_expected=False)
    assert watch.call_figures() == []
    start = parse_kubelet_dra(same, "a", DRIVER)
    later = parse_kubelet_dra(calls_page((2, 3, 4, 4, 4), 0.1), "a", DRIVER)
    other = parse_kubelet_dra(calls_page((0, 1, 1, 1, 1), 0.03), "b", DRIVER)
    rows = call_figures([later.since(start), other])  # `other` counts since its kubelet started
    assert [(r["calls"], r["nodes"], r["p95"]) for r in rows] == [(2, ["a", "b"], {"le": 0.05})]
    text = describe_call_figures(rows, DRIVER, "; shared")
    assert "NodePrepareResources" in text and "≤ 0.05 s" in text and "; shared" in text


def test_a_test_whose_pods_are_gone_has_its_figures_from_every_watched_node() -> None:
    start = calls_page((1, 2, 3, 3, 3), 0.06)
    end = calls_page((2, 3, 4, 4, 4), 0.1)
    watch = KubeletWatch.begin(ScriptedCluster([start, end], [[]]), DRIVER, [NODE])  # type: ignore[arg-type]
    assert watch.finish(["x"], errors_expected=False, judged=set()) == ["event x"]
    assert [(r["method"], r["calls"]) for r in watch.call_figures()] == [
        ("NodePrepareResources", 1)
    ]


def _prepares(ok: int, started: float) -> KubeletDra:
    series = grpc(DRIVER, V1 + "NodePrepareResources", "OK", (0, ok, ok, ok, ok), 0.1)
    return parse_kubelet_dra(kubelet_page(series, started=started), NODE, DRIVER)


def test_a_restart_is_seen_by_the_process_start_time_though_counters_climbed_back() -> None:
    start, restarted = _prepares(3, started=100.0), _prepares(5, started=200.0)
    assert restarted.restarted_since(start)
    assert restarted.since(start).count("NodePrepareResources") == 5
    assert not _prepares(5, started=100.0).restarted_since(start)


def test_a_window_through_a_restart_counts_the_calls_on_both_sides() -> None:
    """3 calls at the start, 6 right before the restart, 1 right after, 4 at the end: 3 + 4."""
    start = _prepares(3, started=100.0)
    before, after = _prepares(6, started=100.0), _prepares(1, started=200.0)
    end = _prepares(4, started=200.0)
    assert end.through(start, [before, after]).count("NodePrepareResources") == 3 + 4
    assert end.since(start).count("NodePrepareResources") == 4  # the two ends alone
    rows = call_figures([end.through(start, [before, after])])
    assert [(r["method"], r["calls"]) for r in rows] == [("NodePrepareResources", 7)]
