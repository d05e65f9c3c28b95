"""scenarios/requirements.yaml against the specification it comes from (spec/requirements.md)."""

from __future__ import annotations

import re

import pytest

from conformance.model.capabilities import CAPABILITIES
from conformance.model.requirements import load_catalog
from conformance.report.catalog import DEFAULT_CATALOG, catalog_from

# ID -> level as in spec/requirements.md; "MUST when ..." is MUST with a capability gate.
SPEC_LEVELS = {
    **{f"DRA-CORE-00{i}": "MUST" for i in range(1, 10)},
    "DRA-CORE-010": "MAY",  # device-metadata, KEP-5304 (not in spec/requirements.md)
    "DRA-ALLOC-001": "MUST",
    "DRA-ALLOC-002": "MUST",  # when the profile names a capacity
    "DRA-ALLOC-003": "MUST",
    "DRA-ALLOC-004": "MUST",
    "DRA-ALLOC-005": "SHOULD",
    "DRA-ALLOC-006": "SHOULD",
    "DRA-ALLOC-007": "MAY",
    "DRA-ALLOC-008": "MUST",
    "DRA-ALLOC-009": "MUST",
    "DRA-ALLOC-010": "MUST",  # shared-claims
    "DRA-ALLOC-011": "MUST",
    "DRA-ALLOC-012": "SHOULD",
    "DRA-ALLOC-013": "MAY",
    "DRA-ALLOC-014": "MAY",
    "DRA-ALLOC-015": "SHOULD",
    "DRA-ALLOC-016": "SHOULD",  # partitionable-devices
    "DRA-ALLOC-017": "MAY",
    "DRA-ALLOC-018": "SHOULD",  # binding-conditions
    "DRA-ALLOC-019": "SHOULD",  # binding-conditions, fault fail-binding
    "DRA-LOSS-001": "MUST",
    "DRA-LOSS-002": "MUST",
    "DRA-LOSS-003": "MUST",
    "DRA-LOSS-004": "MAY",
    "DRA-LOSS-005": "SHOULD",
    "DRA-LOSS-006": "MUST",
    "DRA-LOSS-007": "SHOULD",
    "DRA-LOSS-008": "SHOULD",
    "DRA-LOSS-009": "SHOULD",
    "DRA-LOSS-010": "SHOULD",  # device-taints, the driver's own taints
    "DRA-LOSS-011": "SHOULD",
    "DRA-LOSS-012": "MUST",  # stale state after a plugin restart
    "DRA-LOSS-013": "SHOULD",  # an informational (None) taint the driver publishes
    "DRA-DEL-001": "MUST",
    "DRA-DEL-002": "MUST",
    "DRA-DEL-003": "MUST",
    "DRA-DEL-004": "MUST",
    "DRA-DEL-005": "SHOULD",
    "DRA-DEL-006": "SHOULD",
    "DRA-DRAIN-001": "MUST",
    "DRA-DRAIN-002": "MUST",
    "DRA-DRAIN-003": "SHOULD",
    "DRA-DRAIN-004": "MUST",
    "DRA-DRAIN-005": "SHOULD",
    "DRA-PREEMPT-001": "MUST",
    "DRA-PREEMPT-002": "MUST",
    "DRA-PREEMPT-003": "SHOULD",
    "DRA-EXT-001": "MUST",
    "DRA-EXT-002": "SHOULD",
    "DRA-EXT-003": "MUST",
    "DRA-EXT-004": "MUST",
    "DRA-EXT-005": "MAY",
    "DRA-EXT-006": "MAY",
    "DRA-KUBELET-001": "MUST",
    "DRA-KUBELET-002": "MUST",
    "DRA-REBOOT-001": "MUST",
    "DRA-REBOOT-002": "MUST",
    "DRA-UPD-001": "MUST",
    "DRA-UPD-002": "SHOULD",
    # the driver's lifecycle as the kubelet drives it (not in spec/requirements.md)
    "DRA-LIFE-001": "MUST",
    "DRA-LIFE-002": "MUST",
    # defensive practice: the kubelet re-prepares only after its own restart (why_not_must)
    "DRA-LIFE-003": "SHOULD",
    "DRA-LIFE-004": "SHOULD",  # pools across plugin restarts
    # least privilege (not in spec/requirements.md)
    "DRA-SEC-001": "MUST",
    "DRA-SEC-002": "MUST",
    "DRA-SEC-003": "MUST",
    "DRA-SEC-004": "SHOULD",
    # the in-place upgrade rehearsal (collected only by a rehearsal)
    **{f"DRA-UPG-00{i}": "MUST" for i in range(1, 6)},
}
SUITE_OF_PREFIX = {
    "CORE": "core",
    "ALLOC": "allocation",
    "LOSS": "device_loss",
    "DEL": "claim_deletion",
    "DRAIN": "node_drain",
    "PREEMPT": "no_preemption",
    "EXT": "extended_resource",
    "KUBELET": "node_restart",
    "REBOOT": "node_restart",
    "UPD": "driver_update",
    "LIFE": "lifecycle",
    "SEC": "security",
    "UPG": "upgrade",
}
# "MUST when the profile names an extended resource"
CONDITIONAL_MUST = {
    "DRA-EXT-001": "extended-resource",
    "DRA-EXT-003": "extended-resource",
    "DRA-EXT-004": "extended-resource",
    "DRA-CORE-009": "device-status",
    # a driver of exclusive devices may refuse to share a claim between pods
    "DRA-ALLOC-010": "shared-claims",
}
# MUST when the profile sets the field: the API lets devices publish no capacity.
PROFILE_FIELD_MUST = {"DRA-ALLOC-002": "capacity"}
# Demoted from MUST: each says why it is not one.
WHY_NOT_MUST = ("DRA-LIFE-003",)
# A source a reason cites: a KEP, an API or kubelet contract, documentation or an upstream
# issue (owner/repo #N or kubernetes #N).
SOURCE = re.compile(r"KEP-\d+|\bAPI\b|[Kk]ubelet|docs|#\d+|resource\.k8s\.io|Scheduler contract")
# cordon/drain/delete nodes, taint/withdraw/break devices, restart the driver, PriorityClasses
DISRUPTIVE_PREFIXES = (
    "DRA-UPG-",
    "DRA-DRAIN-",
    "DRA-PREEMPT-",
    "DRA-LOSS-",
    "DRA-KUBELET-",
    "DRA-REBOOT-",
    "DRA-UPD-",
)
# and single ones of other suites: a device-plugin grace period, lost CDI specs and a driver
# restart (two of them)
DISRUPTIVE_IDS = ("DRA-EXT-006", "DRA-LIFE-003", "DRA-LIFE-004")
# Checked against k8s.io/kubernetes@v1.37.2 pkg/features/kube_features.go
KNOWN_GATES_V1_37_2 = {
    "DRAAdminAccess",
    "DRAConsumableCapacity",
    "DRADeviceBindingConditions",
    "DRADeviceTaintRules",
    "DRADeviceTaints",
    "DRAExtendedResource",
    "DRAPartitionableDevices",
    "DRAPrioritizedList",
    "DRAResourceClaimDeviceStatus",
    "DRAResourceClaimGranularStatusAuthorization",
    "ResourceHealthStatus",
}


@pytest.fixture(scope="module")
def raw_catalog():
    import yaml

    return yaml.safe_load(DEFAULT_CATALOG.read_text())


def test_every_spec_requirement_with_its_level(raw_catalog) -> None:
    entries = raw_catalog["requirements"]
    assert raw_catalog["schema"] == 1
    assert [e["id"] for e in entries] == list(SPEC_LEVELS)  # same IDs, spec order, no extras
    for entry in entries:
        assert entry["level"] == SPEC_LEVELS[entry["id"]], entry["id"]
        assert entry["suite"] == SUITE_OF_PREFIX[entry["id"].split("-")[1]], entry["id"]


def test_statements_are_single_observable_sentences(raw_catalog) -> None:
    for entry in raw_catalog["requirements"]:
        statement = " ".join(entry["statement"].split())
        assert statement.endswith("."), entry["id"]
        body = statement[:-1].replace("e.g.", "eg")
        assert not re.search(r"[.!?]\s+[A-Z]", body), f"{entry['id']}: more than one sentence"
        # One sentence, but precise: it names the exact v1.37.2 fields, conditions and reasons.
        assert 40 <= len(statement) <= 500, entry["id"]


def test_gates(raw_catalog) -> None:
    for entry in raw_catalog["requirements"]:
        gates = entry.get("gates", {})
        assert set(gates) <= {
            "capabilities",
            "min_version",
            "feature_gates",
            "faults",
            "profile_fields",
        }, entry["id"]
        assert set(gates.get("capabilities", [])) <= CAPABILITIES, entry["id"]
        assert set(gates.get("feature_gates", [])) <= KNOWN_GATES_V1_37_2, entry["id"]
    by_id = {e["id"]: e for e in raw_catalog["requirements"]}
    for req_id, capability in CONDITIONAL_MUST.items():
        assert by_id[req_id]["level"] == "MUST"
        assert capability in by_id[req_id]["gates"]["capabilities"]
    for req_id, profile_field in PROFILE_FIELD_MUST.items():
        assert by_id[req_id]["level"] == "MUST"
        assert by_id[req_id]["gates"] == {"profile_fields": [profile_field]}
    # A fault the profile cannot inject makes these not run, never not applicable.
    assert by_id["DRA-LOSS-003"]["level"] == "MUST"
    assert by_id["DRA-LOSS-003"]["gates"] == {"faults": ["withdraw"]}
    assert by_id["DRA-LOSS-004"]["gates"]["faults"] == ["unhealthy", "recover"]
    assert by_id["DRA-LOSS-005"]["gates"]["faults"] == ["fail-prepare"]
    for req_id in ("DRA-LOSS-001", "DRA-LOSS-002", "DRA-LOSS-007"):
        assert "DRADeviceTaintRules" in by_id[req_id]["gates"]["feature_gates"]
    for req_id in ("DRA-LOSS-010", "DRA-LOSS-011"):  # taints in the driver's own slices
        assert by_id[req_id]["gates"] == {
            "capabilities": ["device-taints"],
            "feature_gates": ["DRADeviceTaints"],
            "faults": ["driver-taint"],
        }
    assert "DRAAdminAccess" in by_id["DRA-ALLOC-013"]["gates"]["feature_gates"]
    assert "DRAPrioritizedList" in by_id["DRA-ALLOC-007"]["gates"]["feature_gates"]
    assert by_id["DRA-ALLOC-016"]["gates"] == {
        "capabilities": ["partitionable-devices"],
        "feature_gates": ["DRAPartitionableDevices"],
    }
    assert "ResourceHealthStatus" in by_id["DRA-LOSS-004"]["gates"]["feature_gates"]
    for req_id in (i for i in by_id if i.startswith("DRA-EXT-")):
        assert "DRAExtendedResource" in by_id[req_id]["gates"]["feature_gates"]


def test_every_must_cites_the_contract_or_field_failure_behind_it(raw_catalog) -> None:
    for entry in raw_catalog["requirements"]:
        why = " ".join((entry.get("why_must") or "").split())
        if entry["level"] != "MUST":
            assert not why, f"{entry['id']} is a {entry['level']} and has why_must"
            continue
        assert why, f"{entry['id']}: a MUST needs why_must (its contract or field failure)"
        assert SOURCE.search(why), f"{entry['id']}: why_must names no source: {why}"
        assert len(why) <= 500, f"{entry['id']}: why_must is short, a source and a reason"
    by_id = {e["id"]: e for e in raw_catalog["requirements"]}
    for req_id in WHY_NOT_MUST:
        assert by_id[req_id]["level"] != "MUST" and by_id[req_id].get("why_not_must"), req_id
    # Those a driver may decline say that the API lets it (and why they are MUST otherwise).
    for req_id in (*CONDITIONAL_MUST, *PROFILE_FIELD_MUST):
        assert "MUST only" in " ".join(by_id[req_id]["why_must"].split()), req_id


def test_disruptive_marking(raw_catalog) -> None:
    for entry in raw_catalog["requirements"]:
        expected = entry["id"].startswith(DISRUPTIVE_PREFIXES) or entry["id"] in DISRUPTIVE_IDS
        assert entry["disruptive"] is expected, entry["id"]


def test_the_report_reads_it() -> None:
    catalog = catalog_from(load_catalog(DEFAULT_CATALOG).requirements)
    assert len(catalog) == len(SPEC_LEVELS)
    assert catalog["DRA-CORE-003"].suite == "core"
    assert "\n" not in catalog["DRA-CORE-003"].statement
