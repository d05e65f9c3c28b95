"""The typed schema of the requirements catalog (`scenarios/requirements.yaml`, keys in
snake_case): one entry per requirement, and the gates that decide where it applies."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from conformance.model.capabilities import CAPABILITIES, FAULT_ABILITIES, PROFILE_FIELDS
from conformance.model.fault_config import FAULT_KINDS
from conformance.model.kube_version import parse_minor
from conformance.model.readiness_failure import READINESS_PARTS
from conformance.model.schema import suggest
from conformance.model.typed import (
    Boolean,
    Snake,
    checked,
    choice,
    fail,
    listed,
    schema_version,
    text,
    wrong,
)

SCHEMA = 1
SUITES = (
    "core",
    "allocation",
    "device_loss",
    "claim_deletion",
    "node_drain",
    "no_preemption",
    "extended_resource",
    "node_restart",
    "driver_update",
    "lifecycle",
    "security",
    "upgrade",
)
LEVELS = ("MUST", "SHOULD", "MAY")

ID_RE = re.compile(r"^DRA-[A-Z]+-\d{3}$")
_GATE_RE = re.compile(r"^[A-Z][A-Za-z0-9]+$")
_ID_FORM = "an ID such as DRA-CORE-001"


def _capability(cap: Any) -> str:
    if cap in CAPABILITIES:
        return cap
    if cap in FAULT_ABILITIES:
        fail(
            f"{cap!r} is a fault ability now: list {FAULT_ABILITIES[cap]!r} in gates.faults instead"
        )
    best = suggest(str(cap), sorted(CAPABILITIES))
    fail(f"unknown capability {cap!r}" + (f"; did you mean '{best}'?" if best else ""))


def _profile_field(name: Any) -> str:
    if name in PROFILE_FIELDS:
        return name
    fail(f"unknown profile field {name!r} (known: {', '.join(sorted(PROFILE_FIELDS))})")


def _min_version(raw: Any) -> tuple[int, int]:
    version = parse_minor(raw)
    if version is None:
        wrong('a quoted "<major>.<minor>" such as "1.35"', raw)
    return version


def _feature_gate(gate: Any) -> str:
    if not (isinstance(gate, str) and _GATE_RE.match(gate)):
        wrong("a feature gate name such as DRADeviceTaintRules", gate)
    return gate


def _fault_kind(kind: Any) -> str:
    if kind in FAULT_KINDS:
        return kind
    best = suggest(str(kind), FAULT_KINDS)
    hint = f"; did you mean '{best}'?" if best else f" (known: {', '.join(FAULT_KINDS)})"
    fail(f"unknown fault kind {kind!r}{hint}")


Capability = checked(str, _capability, {"enum": sorted(CAPABILITIES)})
MinVersion = checked(tuple[int, int], _min_version, {"type": "string", "pattern": r"^v?\d+\.\d+$"})
FeatureGate = checked(str, _feature_gate, {"type": "string", "pattern": _GATE_RE.pattern})
FaultKindName = checked(str, _fault_kind, {"enum": list(FAULT_KINDS)})

ProfileField = checked(str, _profile_field, {"enum": sorted(PROFILE_FIELDS)})
Capabilities = listed(Capability, "capability names")
ProfileFields = listed(ProfileField, "profile field names")
FeatureGates = listed(FeatureGate, "feature gate names")
FaultKinds = listed(FaultKindName, "fault kinds")
RequirementId = text(_ID_FORM, ID_RE)
Suite = choice(SUITES)
LevelName = choice(LEVELS)
Sentence = text("one sentence")
Source = text("a short reason naming its source")
_WHY_MUST = (
    "MUST only: the kubelet's or the API's contract (KEP, API doc, kubelet behaviour) or a "
    "failure users hit in the field (an upstream issue) that makes it a MUST"
)
_WHY_NOT_MUST = "SHOULD or MAY only: why it is not a MUST (e.g. defensive practice only)"
ReadinessPart = choice(READINESS_PARTS)


class Gates(Snake):
    """Where a requirement applies: driver features, Kubernetes version and gates, faults."""

    capabilities: Capabilities = Field((), description="driver features the requirement needs")
    min_version: MinVersion | None = Field(None, description="the first Kubernetes minor")
    feature_gates: FeatureGates = Field((), description="feature gates the behaviour needs")
    faults: FaultKinds = Field((), description="fault kinds the test injects")
    profile_fields: ProfileFields = Field(
        (), description="profile fields the test needs (without one: not applicable)"
    )


class Entry(Snake):
    id: RequirementId = Field(description=_ID_FORM)
    suite: Suite = Field(description="a suite name")
    level: LevelName = Field(description="MUST, SHOULD or MAY")
    statement: Sentence = Field(description="one sentence")
    why_must: Source | None = Field(None, description=_WHY_MUST)
    why_not_must: Source | None = Field(None, description=_WHY_NOT_MUST)
    disruptive: Boolean = Field(False, description="the test disturbs other tests")
    gates: Gates | None = Field(None, description="where the requirement applies")
    readiness: ReadinessPart | None = Field(
        None, description="the part of the driver readiness check that proves it"
    )


def _unique_ids(entries: tuple[Entry, ...]) -> tuple[Entry, ...]:
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries):
        if entry.id in seen:
            fail(f"{entry.id} is already defined at requirements[{seen[entry.id]}]", i, "id")
        seen[entry.id] = i
    return entries


def _level_reasons(entries: tuple[Entry, ...]) -> tuple[Entry, ...]:
    """A level's reason must fit the level: a SHOULD citing why it is a MUST says two things."""
    for i, entry in enumerate(entries):
        if entry.why_must is not None and entry.level != "MUST":
            fail(f"{entry.id} is a {entry.level}: why_must is for MUSTs only", i, "why_must")
        if entry.why_not_must is not None and entry.level == "MUST":
            fail(f"{entry.id} is a MUST: why_not_must is for SHOULDs and MAYs", i, "why_not_must")
    return entries


Entries = Annotated[
    listed(Entry, "requirements"), AfterValidator(_unique_ids), AfterValidator(_level_reasons)
]


SchemaVersion = schema_version(SCHEMA)


class CatalogDocument(Snake):
    """The requirements catalog: what a conformant DRA driver must, should or may do."""

    schema_: SchemaVersion = Field(
        None, alias="schema", validate_default=True, description=str(SCHEMA)
    )
    requirements: Entries = Field(None, validate_default=True, description="the requirements")
