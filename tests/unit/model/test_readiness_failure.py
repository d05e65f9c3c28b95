"""A driver that never became ready: picking what the cluster said out of driver logs and
events, the failed readiness parts, and the catalog's `readiness:` key (pure logic)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from conformance.kube.readiness import ReadinessState, readiness_problems
from conformance.model.frozen import FrozenMap
from conformance.model.profile_parse import load_profile
from conformance.model.readiness_failure import (
    MAX_LINE_CHARS,
    ReadinessFailure,
    pick_cluster_said,
    rejection_lines,
    shorten,
    warning_event_lines,
)
from conformance.model.requirements import CatalogError, load_catalog, parse_catalog
from conformance.run.context import ClusterFacts, ClusterInfo, RunContext, build_run_context

ROOT = Path(__file__).resolve().parents[3]

DUPLICATE = (
    'ResourceSlice.resource.k8s.io "kind-worker-gpu.example.com-devices-0" is invalid: '
    'spec.devices[1].name: Duplicate value: "gpu-0"'
)
DRIVER_LOG = f"""\
2026-01-01 10:00:00 INFO fakedriver.driver registered with the kubelet
2026-01-01 10:00:01 ERROR fakedriver.driver publishing ResourceSlices failed: HTTP 422: {DUPLICATE}
2026-01-01 10:00:31 ERROR fakedriver.driver publishing ResourceSlices failed: HTTP 422: {DUPLICATE}
2026-01-01 10:00:40 INFO fakedriver.driver resync
"""


def test_rejection_lines_keep_the_api_servers_answer_once() -> None:
    lines = rejection_lines(DRIVER_LOG)
    assert len(lines) == 1
    assert 'spec.devices[1].name: Duplicate value: "gpu-0"' in lines[0]
    assert lines[0].startswith("ERROR fakedriver.driver publishing ResourceSlices failed")
    klog = f"E0101 10:00:01.123456       7 publisher.go:88] create failed: {DUPLICATE}"
    assert rejection_lines(klog) == [f"create failed: {DUPLICATE}"]


def test_rejection_lines_are_the_newest_distinct_ones_in_log_order() -> None:
    text = "\n".join(
        [
            'E1 resourceslices.resource.k8s.io is forbidden: User "x" cannot create',
            "I just a line",
            "E2 spec.devices[0].attributes: Invalid value: a/b/c",
            "E3 admission webhook denied the request: nope",
        ]
    )
    lines = rejection_lines(text)
    assert [line[:2] for line in lines] == ["E2", "E3"]
    assert rejection_lines("all is well\nready") == []


def test_a_long_rejection_is_cut_around_the_rejection_and_redacted() -> None:
    line = "x" * 400 + " token=s3cr3tvalue " + DUPLICATE + " " + "y" * 400
    (short,) = rejection_lines(line)
    assert len(short) <= MAX_LINE_CHARS
    assert short.startswith("…") and short.endswith("…")
    assert "is invalid" in short
    assert "s3cr3tvalue" not in short
    assert shorten("a  b\n c") == "a b c"


def _event(reason: str, message: str, when: str, kind: str = "Pod", type_: str = "Warning"):
    return {
        "type": type_,
        "reason": reason,
        "message": message,
        "lastTimestamp": when,
        "involvedObject": {"kind": kind, "name": "fake-dra-abc"},
    }


def test_warning_events_newest_first_recent_only_distinct() -> None:
    events = [
        _event("BackOff", "Back-off restarting failed container", "2026-01-01T10:00:05Z"),
        _event("Started", "Started container", "2026-01-01T10:00:06Z", type_="Normal"),
        _event("Unhealthy", "Readiness probe failed: not ready", "2026-01-01T10:00:09Z"),
        _event("Unhealthy", "Readiness probe failed: not ready", "2026-01-01T10:00:08Z"),
        _event("FailedMount", "old news", "2025-12-31T10:00:00Z"),
    ]
    since = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
    assert warning_event_lines(events, since=since) == [
        "Unhealthy Pod/fake-dra-abc: Readiness probe failed: not ready",
        "BackOff Pod/fake-dra-abc: Back-off restarting failed container",
    ]
    assert "old news" in " ".join(warning_event_lines(events, since=None, limit=5))


def test_the_api_servers_rejection_comes_before_events() -> None:
    assert pick_cluster_said(["R1"], ["W1", "W2"]) == ("R1", "W1")
    assert pick_cluster_said([], ["W1"]) == ("W1",)
    assert pick_cluster_said(["R1", "R1"], []) == ("R1",)


def test_readiness_problems_name_the_failed_parts() -> None:
    ready = ReadinessState("ready", {"w1": 1, "w2": 1}, ())
    assert readiness_problems(ready) == {}
    slices = ReadinessState("ready", {"w1": 1}, ("w2",))
    assert readiness_problems(slices) == {"slices": "no ResourceSlices (or too few) on w2"}
    both = ReadinessState("0/2 ready, 2/2 updated", {}, ("w1", "w2"))
    assert readiness_problems(both) == {
        "plugin": "kubelet-plugin DaemonSet: 0/2 ready, 2/2 updated",
        "slices": "no ResourceSlices (or too few) on w1, w2",
    }


FAILURE = ReadinessFailure(
    problems=FrozenMap({"slices": "no ResourceSlices (or too few) on w2"}),
    cluster_said=(DUPLICATE,),
    waited_s=45.2,
    last_seen="daemonset: ready; slices per node: w1=1",
    driver="gpu.example.com",
)


def test_reasons_name_the_part_and_what_the_cluster_said() -> None:
    assert FAILURE.failed_parts == {"slices"}
    assert FAILURE.reason_for("slices") == (
        "the driver never became ready (no ResourceSlices (or too few) on w2, after 45s); "
        f"the cluster said: {DUPLICATE}"
    )
    assert FAILURE.summary().startswith("driver gpu.example.com never became ready after 45s")
    assert FAILURE.remedy().startswith("fix the driver's readiness first: ResourceSlice.")
    long = ReadinessFailure(
        FrozenMap({"slices": "none on w2"}), cluster_said=("E publishing failed: " * 8 + DUPLICATE,)
    )
    assert long.remedy().endswith('is invalid: spec.devices[1].name: Duplicate value: "gpu-0"')
    silent = ReadinessFailure(FrozenMap({"plugin": "DaemonSet x/y not found"}), driver="d")
    assert "nothing (no API rejection" in silent.reason_for("plugin")
    assert silent.remedy() == "fix the driver's readiness first: DaemonSet x/y not found"


def test_the_failure_reaches_xdist_workers_through_the_context(tmp_path: Path) -> None:
    profile = load_profile(ROOT / "drivers" / "fake" / "profile.yaml")
    cluster = ClusterInfo("existing", "c", "/k", None, False)
    facts = ClusterFacts("v1.37.2", {}, None, "no metrics", (), (), {})

    def context(failure: ReadinessFailure | None) -> RunContext:
        return build_run_context(
            run_id="r",
            run_dir=tmp_path,
            profile=profile,
            cluster=cluster,
            facts=facts,
            workload_image="",
            readiness_failure=failure,
        )

    again = RunContext.from_json(context(FAILURE).to_json(), profile)
    assert again.readiness_failure == FAILURE
    assert RunContext.from_json(context(None).to_json(), profile).readiness_failure is None


CATALOG = {
    "schema": 1,
    "requirements": [
        {"id": "DRA-CORE-001", "suite": "core", "level": "MUST", "statement": "R."},
        {"id": "DRA-CORE-002", "suite": "core", "level": "MUST", "statement": "S."},
        {"id": "DRA-CORE-003", "suite": "core", "level": "MUST", "statement": "A."},
    ],
}


CATALOG["requirements"][0]["readiness"] = "plugin"
CATALOG["requirements"][1]["readiness"] = "slices"


def test_the_catalog_says_which_requirement_readiness_proves() -> None:
    catalog = parse_catalog(CATALOG, source=Path("r.yaml"))
    assert [r.readiness for r in catalog.requirements] == ["plugin", "slices", None]
    bad = {**CATALOG, "requirements": [{**CATALOG["requirements"][0], "readiness": "slice"}]}
    with pytest.raises(CatalogError) as err:
        parse_catalog(bad, source=Path("r.yaml"))
    assert "requirements[0].readiness: expected one of plugin, slices" in str(err.value)
    assert "did you mean 'slices'?" in str(err.value)


def test_the_shipped_catalog_marks_core_001_and_002() -> None:
    catalog = load_catalog(ROOT / "scenarios" / "requirements.yaml")
    marked = {r.id: r.readiness for r in catalog.requirements if r.readiness}
    assert marked == {"DRA-CORE-001": "plugin", "DRA-CORE-002": "slices"}
