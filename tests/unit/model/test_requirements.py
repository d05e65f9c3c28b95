"""Catalog validation and applicability."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.model.feature_gates import GA_GATES
from conformance.model.frozen import FrozenMap
from conformance.model.requirements import (
    Applicability,
    CatalogError,
    Requirement,
    load_catalog,
    not_applicable_reason,
    not_run_reason,
    only_missing_capabilities,
)
from conformance.suite_root import SUITE_ROOT

ENTRY = {
    "id": "DRA-CORE-001",
    "suite": "core",
    "level": "MUST",
    "statement": "The driver registers.",
    "disruptive": False,
}


def catalog_file(tmp_path: Path, *entries: dict[str, Any], schema: Any = 1) -> str:
    path = tmp_path / "requirements.yaml"
    path.write_text(yaml.safe_dump({"schema": schema, "requirements": list(entries)}))
    return str(path)


def test_loads_entries_with_gates(tmp_path: Path) -> None:
    gated = {
        **ENTRY,
        "id": "DRA-LOSS-003",
        "suite": "device_loss",
        "statement": "A  b\n c.",
        "gates": {
            "capabilities": ["health-reporting"],
            "min_version": "1.36",
            "feature_gates": ["DRADeviceTaintRules"],
        },
    }
    catalog = load_catalog(catalog_file(tmp_path, ENTRY, gated))
    req = catalog.by_id["DRA-LOSS-003"]
    assert req == Requirement(
        "DRA-LOSS-003",
        "device_loss",
        "MUST",
        "A b c.",
        False,
        ("health-reporting",),
        (1, 36),
        ("DRADeviceTaintRules",),
    )
    assert catalog.suggest_id("DRA-CORE-01") == "DRA-CORE-001"


@pytest.mark.parametrize(
    "entry,expected",
    [
        (
            {**ENTRY, "level": "must"},
            'requirements[0].level: expected one of MUST, SHOULD, MAY, got "must" '
            "(did you mean 'MUST'?)",
        ),
        (
            {**ENTRY, "id": "CORE-1"},
            'requirements[0].id: expected an ID such as DRA-CORE-001, got "CORE-1"',
        ),
        (
            {**ENTRY, "suite": "cores"},
            "requirements[0].suite: expected one of core, allocation, device_loss, claim_deletion, "
            "node_drain, no_preemption, extended_resource, node_restart, driver_update, lifecycle, "
            "security, upgrade, got \"cores\" (did you mean 'core'?)",
        ),
        (
            {**ENTRY, "gates": {"min_version": 1.35}},
            'requirements[0].gates.min_version: expected a quoted "<major>.<minor>" '
            'such as "1.35", got 1.35',
        ),
        (
            {**ENTRY, "gates": {"capabilities": ["health"]}},
            "requirements[0].gates.capabilities[0]: unknown capability 'health'; "
            "did you mean 'health-reporting'?",
        ),
        (
            {**ENTRY, "gates": {"feature_gate": ["X"]}},
            "requirements[0].gates.feature_gate: unknown field; did you mean 'feature_gates'?",
        ),
        (
            {k: v for k, v in ENTRY.items() if k != "statement"},
            "requirements[0].statement: required field is missing (expected one sentence)",
        ),
        (
            {**ENTRY, "gates": {"profile_fields": ["capacities"]}},
            "requirements[0].gates.profile_fields[0]: unknown profile field 'capacities' "
            "(known: capacity, extendedResource)",
        ),
        (
            {**ENTRY, "level": "SHOULD", "why_must": "KEP-4381."},
            "requirements[0].why_must: DRA-CORE-001 is a SHOULD: why_must is for MUSTs only",
        ),
        (
            {**ENTRY, "why_not_must": "Defensive."},
            "requirements[0].why_not_must: DRA-CORE-001 is a MUST: why_not_must is for "
            "SHOULDs and MAYs",
        ),
        (
            {**ENTRY, "why_must": ""},
            'requirements[0].why_must: expected a short reason naming its source, got ""',
        ),
    ],
)
def test_bad_entry_message(tmp_path: Path, entry: dict[str, Any], expected: str) -> None:
    path = catalog_file(tmp_path, entry)
    with pytest.raises(CatalogError) as err:
        load_catalog(path)
    assert str(err.value) == f"requirements catalog {path}: {expected}"


def test_level_reasons_are_loaded_as_one_line(tmp_path: Path) -> None:
    must = {**ENTRY, "why_must": "KEP-5970\n behaviour 1."}
    should = {**ENTRY, "id": "DRA-CORE-002", "level": "SHOULD", "why_not_must": "Only\n defensive."}
    catalog = load_catalog(catalog_file(tmp_path, must, should))
    assert catalog.by_id["DRA-CORE-001"].why_must == "KEP-5970 behaviour 1."
    assert catalog.by_id["DRA-CORE-002"].why_not_must == "Only defensive."


def test_duplicate_id(tmp_path: Path) -> None:
    path = catalog_file(tmp_path, ENTRY, ENTRY)
    with pytest.raises(CatalogError) as err:
        load_catalog(path)
    assert err.value.problems == [
        "requirements[1].id: DRA-CORE-001 is already defined at requirements[0]"
    ]


def test_schema_version(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="schema: expected 1, got 2"):
        load_catalog(catalog_file(tmp_path, ENTRY, schema=2))


# --- applicability ------------------------------------------------------------------------

REQ = Requirement(
    "DRA-LOSS-001",
    "device_loss",
    "MUST",
    "s.",
    disruptive=True,
    capabilities=("health-reporting",),
    min_version=(1, 36),
    feature_gates=("DRADeviceTaintRules",),
)
OK = Applicability(
    capabilities=frozenset({"health-reporting"}),
    version=(1, 37),
    feature_gates=FrozenMap({"DRADeviceTaintRules": True}),
    provisioned=True,
    profile_source="drivers/x.yaml",
)


def test_applies_when_everything_is_there() -> None:
    assert not_applicable_reason(REQ, OK) is None


@pytest.mark.parametrize(
    "change,reason",
    [
        (
            {"capabilities": frozenset()},
            "the driver profile does not declare capability health-reporting "
            "(add health-reporting to capabilities in drivers/x.yaml if the driver supports it)",
        ),
        ({"version": (1, 35)}, "introduced in Kubernetes 1.36 (the cluster runs 1.35)"),
        (
            # before the gate went GA (1.37), a gate switched off is a lack of the cluster
            {"feature_gates": FrozenMap({"DRADeviceTaintRules": False}), "version": (1, 36)},
            "feature gate DRADeviceTaintRules is disabled in the cluster",
        ),
        (
            # before the gate went GA (1.37), a gate the cluster does not know is a lack
            {"feature_gates": FrozenMap({}), "version": (1, 36)},
            "feature gate DRADeviceTaintRules is not known to the cluster's API server",
        ),
    ],
)
def test_not_applicable_reason(change: dict[str, Any], reason: str) -> None:
    facts = Applicability(**{**OK.__dict__, **change})
    assert not_applicable_reason(REQ, facts) == reason
    assert not_run_reason(REQ, facts) is None


@pytest.mark.parametrize(
    "change,reason,remedy",
    [
        (
            {"version": None},
            "introduced in Kubernetes 1.36, and the cluster version could not be read",
            "let the run's account read /version",
        ),
        (
            {"feature_gates": None, "feature_gates_error": "GET /metrics answered 403 Forbidden"},
            "feature gate(s) DRADeviceTaintRules could not be read "
            "(GET /metrics answered 403 Forbidden)",
            "let the run's account read the API server's /metrics",
        ),
        (
            {"provisioned": False},
            "disruptive, and the cluster was not created by this run",
            "pass --allow-disruptive (run) or --dra-allow-disruptive (pytest)",
        ),
    ],
)
def test_not_run_reason(change: dict[str, Any], reason: str, remedy: str) -> None:
    """What could not be read or is not allowed keeps a requirement from running; it never
    makes it not applicable."""
    facts = Applicability(**{**OK.__dict__, **change})
    assert not_applicable_reason(REQ, facts) is None
    assert not_run_reason(REQ, facts) == (reason, remedy)


def test_disruptive_runs_on_existing_cluster_with_opt_in() -> None:
    facts = Applicability(**{**OK.__dict__, "provisioned": False, "allow_disruptive": True})
    assert not_applicable_reason(REQ, facts) is None
    assert not_run_reason(REQ, facts) is None


def test_a_profile_field_the_profile_leaves_out_makes_it_not_applicable() -> None:
    """Devices may publish no capacity: the driver's choice, like a capability."""
    capacity = Requirement(
        "DRA-ALLOC-002", "allocation", "MUST", "s.", profile_fields=("capacity",)
    )
    reason = not_applicable_reason(capacity, OK)
    assert reason == (
        "the profile declares no capacity (set capacity in drivers/x.yaml if the driver's "
        "devices have one: docs/profile.md)"
    )
    assert only_missing_capabilities(reason)
    assert not_run_reason(capacity, OK) is None
    facts = Applicability(**{**OK.__dict__, "profile_fields": frozenset({"capacity"})})
    assert not_applicable_reason(capacity, facts) is None


def test_several_reasons_are_all_named() -> None:
    facts = Applicability(**{**OK.__dict__, "version": (1, 35), "capabilities": frozenset()})
    reason = not_applicable_reason(REQ, facts)
    assert reason is not None
    assert reason.startswith("introduced in Kubernetes 1.36 (the cluster runs 1.35); ")
    assert "does not declare capability health-reporting" in reason


GATES, BETA, TAINTS = ("DRAExtendedResource",), ("DRAPartitionableDevices",), ("DRADeviceTaints",)
EXT = Requirement("DRA-EXT-001", "extended_resource", "MUST", "s.", feature_gates=GATES)


@pytest.mark.parametrize("version", [(1, 37), (1, 40), (2, 0)])
def test_a_gate_gone_from_the_metrics_after_its_ga_is_on(version: tuple[int, int]) -> None:
    """Upstream removes a GA gate some releases later: its behaviour stays, so the
    requirement still applies."""
    facts = Applicability(version=version, feature_gates=FrozenMap({}))
    assert not_applicable_reason(EXT, facts) is None
    assert not_run_reason(EXT, facts) is None


def test_a_gate_missing_before_its_ga_or_never_ga_is_a_lack() -> None:
    before_ga = Applicability(version=(1, 36), feature_gates=FrozenMap({}))
    assert not_applicable_reason(EXT, before_ga) == (
        "feature gate DRAExtendedResource is not known to the cluster's API server"
    )
    beta = Requirement("DRA-ALLOC-016", "allocation", "SHOULD", "s.", feature_gates=BETA)
    late = Applicability(version=(1, 45), feature_gates=FrozenMap({}))
    assert not_applicable_reason(beta, late) == (
        "feature gate DRAPartitionableDevices is not known to the cluster's API server"
    )


def test_a_ga_gate_the_cluster_turned_off_makes_its_requirement_not_run() -> None:
    # a switch the cluster's operator holds, not something the driver or the version lacks:
    # never "not applicable", which a CONFORMANT verdict would accept
    taints = Requirement("DRA-LOSS-002", "device_loss", "MUST", "s.", feature_gates=TAINTS)
    facts = Applicability(version=(1, 37), feature_gates=FrozenMap({"DRADeviceTaints": False}))
    assert not_applicable_reason(taints, facts) is None
    assert not_run_reason(taints, facts) == (
        "the cluster has a GA feature gate turned off: DRADeviceTaints (GA, on by default, "
        "since Kubernetes 1.37)",
        "turn feature gate DRADeviceTaints back on",
    )


def test_unreadable_metrics_do_not_matter_for_a_gate_locked_on() -> None:
    taints = Requirement("DRA-LOSS-002", "device_loss", "MUST", "s.", feature_gates=TAINTS)
    unread = Applicability(version=(1, 37), feature_gates=None, feature_gates_error="403")
    assert not_run_reason(EXT, unread) is None  # DRAExtendedResource: locked in 1.37
    assert not_run_reason(taints, unread) == (  # DRADeviceTaints: GA, switchable in 1.37
        "feature gate(s) DRADeviceTaints could not be read (403)",
        "let the run's account read the API server's /metrics",
    )
    assert not_run_reason(taints, Applicability(**{**unread.__dict__, "version": (1, 38)})) is None


def test_the_ga_table_of_the_docs_is_the_code_s() -> None:
    text = (SUITE_ROOT / "docs" / "versions.md").read_text().split("## GA feature gates")[1]
    rows = re.findall(r"^\| `(\w+)` \| (1\.\d+) \| (1\.\d+) \| (1\.\d+) \|$", text, re.M)

    def minor(v: tuple[int, int] | None) -> str:
        return ".".join(map(str, v)) if v else ""

    code = {g: (minor(h.ga), minor(h.locked), minor(h.removal)) for g, h in GA_GATES.items()}
    assert {g: (ga, locked, removal) for g, ga, locked, removal in rows} == code
