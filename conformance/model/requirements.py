"""The requirements catalog (`scenarios/requirements.yaml`): loading, validation, and whether a
requirement applies to this driver and cluster.

A requirement that does not apply (a driver feature, the cluster's version or gates lack the
behaviour) ends *not applicable*; one that applies but cannot run here (disruptive tests not
allowed, facts that could not be read) ends *not run* with what would make it run
(conformance/model/outcome.py). Neither is ever counted as passed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from conformance.model.capabilities import CAPABILITIES, FAULT_ABILITIES
from conformance.model.fault_config import FAULT_KINDS
from conformance.model.feature_gates import implied_on
from conformance.model.frozen import FrozenMap
from conformance.model.kube_version import parse_minor
from conformance.model.readiness_failure import READINESS_PARTS
from conformance.model.schema import DocumentError, Problems, join, read_document, suggest

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
    "security",
    "upgrade",
)
# Suites that only a rehearsal runs (`--dra-upgrade-to`): an ordinary run neither collects
# their tests nor has their requirements in its catalog.
REHEARSAL_SUITES = ("upgrade",)
LEVELS = ("MUST", "SHOULD", "MAY")

Level = Literal["MUST", "SHOULD", "MAY"]

_ID_RE = re.compile(r"^DRA-[A-Z]+-\d{3}$")
_GATE_RE = re.compile(r"^[A-Z][A-Za-z0-9]+$")


class CatalogError(DocumentError):
    """The catalog cannot be used; `problems` lists `field.path: message` lines."""

    kind = "requirements catalog"


@dataclass(frozen=True)
class Requirement:
    id: str
    suite: str
    level: Level
    statement: str
    disruptive: bool = False
    capabilities: tuple[str, ...] = ()
    min_version: tuple[int, int] | None = None
    feature_gates: tuple[str, ...] = ()
    # Fault kinds the test injects (conformance.faults); not a driver feature: a profile that
    # cannot inject one makes the requirement not run (conformance.faults.missing_faults_reason)
    faults: tuple[str, ...] = ()
    # The part of the harness's driver readiness check that proves it (plugin | slices): when
    # that part never passes, the requirement fails with the reason
    # (conformance/plugin/not_ready.py).
    readiness: str | None = None


@dataclass(frozen=True)
class Catalog:
    source: Path
    requirements: tuple[Requirement, ...]

    @property
    def by_id(self) -> Mapping[str, Requirement]:
        return FrozenMap({r.id: r for r in self.requirements})

    def for_run(self, rehearsal: bool) -> Catalog:
        """The catalog of an ordinary run (without the rehearsal suites) or of a rehearsal."""
        if rehearsal:
            return self
        kept = tuple(r for r in self.requirements if r.suite not in REHEARSAL_SUITES)
        return Catalog(self.source, kept)

    def suggest_id(self, unknown: str) -> str | None:
        return suggest(unknown, [r.id for r in self.requirements])


def load_catalog(path: str | Path) -> Catalog:
    document = read_document(path, CatalogError)
    return parse_catalog(document, source=Path(path), shown=str(path))


def parse_catalog(document: Any, *, source: Path, shown: str | None = None) -> Catalog:
    shown = shown or str(source)
    p = Problems()
    top = p.mapping("", document, ("schema", "requirements"))
    if top is None:
        raise CatalogError(shown, p.items)
    if top.get("schema") != SCHEMA:
        p.wrong("schema", str(SCHEMA), top.get("schema"))
    entries = p.list_of("requirements", top.get("requirements"), "requirements") or []
    out: list[Requirement] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries):
        req = _requirement(p, join("requirements", i), entry)
        if req is None:
            continue
        if req.id in seen:
            p.add(
                join(join("requirements", i), "id"),
                f"{req.id} is already defined at requirements[{seen[req.id]}]",
            )
            continue
        seen[req.id] = i
        out.append(req)
    if p.items:
        raise CatalogError(shown, p.items)
    return Catalog(source.resolve(), tuple(out))


_KEYS = ("id", "suite", "level", "statement", "disruptive", "gates", "readiness")
_GATE_KEYS = ("capabilities", "min_version", "feature_gates", "faults")


def _requirement(p: Problems, path: str, entry: Any) -> Requirement | None:
    before = len(p.items)
    section = p.mapping(path, entry, _KEYS)
    if section is None:
        return None
    for key in ("id", "suite", "level", "statement"):
        if key not in section:
            p.missing(
                join(path, key),
                {
                    "id": "an ID such as DRA-CORE-001",
                    "suite": "a suite name",
                    "level": "MUST, SHOULD or MAY",
                    "statement": "one sentence",
                }[key],
            )
    rid = (
        p.string(join(path, "id"), section.get("id"), "an ID such as DRA-CORE-001", _ID_RE)
        if ("id" in section)
        else None
    )
    suite = p.choice(join(path, "suite"), section["suite"], SUITES) if "suite" in section else None
    level = p.choice(join(path, "level"), section["level"], LEVELS) if "level" in section else None
    statement = (
        p.string(join(path, "statement"), section["statement"], "one sentence")
        if ("statement" in section)
        else None
    )
    disruptive = False
    if "disruptive" in section:
        disruptive = bool(p.boolean(join(path, "disruptive"), section["disruptive"]))
    capabilities: list[str] = []
    faults: tuple[str, ...] = ()
    min_version = None
    gates: list[str] = []
    if "gates" in section:
        gpath = join(path, "gates")
        g = p.mapping(gpath, section["gates"], _GATE_KEYS) or {}
        for i, cap in enumerate(
            p.list_of(join(gpath, "capabilities"), g.get("capabilities", []), "capability names")
            or []
        ):
            if cap in CAPABILITIES:
                capabilities.append(cap)
            elif cap in FAULT_ABILITIES:
                p.add(
                    join(join(gpath, "capabilities"), i),
                    f"{cap!r} is a fault ability now: list {FAULT_ABILITIES[cap]!r} in "
                    "gates.faults instead",
                )
            else:
                best = suggest(str(cap), sorted(CAPABILITIES))
                hint = f"; did you mean '{best}'?" if best else ""
                p.add(join(join(gpath, "capabilities"), i), f"unknown capability {cap!r}{hint}")
        if "min_version" in g:
            raw = g["min_version"]
            min_version = parse_minor(raw)
            if min_version is None:
                p.wrong(
                    join(gpath, "min_version"), 'a quoted "<major>.<minor>" such as "1.35"', raw
                )
        for i, gate in enumerate(
            p.list_of(
                join(gpath, "feature_gates"), g.get("feature_gates", []), "feature gate names"
            )
            or []
        ):
            if isinstance(gate, str) and _GATE_RE.match(gate):
                gates.append(gate)
            else:
                p.wrong(
                    join(join(gpath, "feature_gates"), i),
                    "a feature gate name such as DRADeviceTaintRules",
                    gate,
                )
        faults = _fault_kinds(p, join(gpath, "faults"), g.get("faults", []))
    readiness = None
    if "readiness" in section:
        readiness = p.choice(join(path, "readiness"), section["readiness"], READINESS_PARTS)
    if len(p.items) > before or not (rid and suite and level and statement):
        return None
    return Requirement(
        rid,
        suite,
        level,
        " ".join(statement.split()),
        disruptive,  # type: ignore[arg-type]
        tuple(capabilities),
        min_version,
        tuple(gates),
        faults,
        readiness,
    )


def _fault_kinds(p: Problems, path: str, value: Any) -> tuple[str, ...]:
    out: list[str] = []
    for i, kind in enumerate(p.list_of(path, value, "fault kinds") or []):
        if kind in FAULT_KINDS:
            out.append(kind)
        else:
            best = suggest(str(kind), FAULT_KINDS)
            hint = f"; did you mean '{best}'?" if best else f" (known: {', '.join(FAULT_KINDS)})"
            p.add(join(path, i), f"unknown fault kind {kind!r}{hint}")
    return tuple(out)


# --- applicability -------------------------------------------------------------------------


class ApplicabilityFacts(Protocol):
    """What decides applicability; RunContext provides it, tests build `Applicability`."""

    capabilities: frozenset[str]
    version: tuple[int, int] | None
    feature_gates: Mapping[str, bool] | None  # None: could not be read from the cluster
    feature_gates_error: str | None
    provisioned: bool  # the harness created this cluster (disruptive tests always run)
    allow_disruptive: bool
    profile_source: str


@dataclass(frozen=True)
class Applicability:
    capabilities: frozenset[str] = frozenset()
    version: tuple[int, int] | None = None
    feature_gates: Mapping[str, bool] | None = None
    feature_gates_error: str | None = None
    provisioned: bool = True
    allow_disruptive: bool = False
    profile_source: str = "the profile"


_NO_CAPABILITY = "the driver profile does not declare "


def missing_capabilities_reason(names: Iterable[str], facts: ApplicabilityFacts) -> str | None:
    missing = [c for c in names if c not in facts.capabilities]
    if not missing:
        return None
    listed = ", ".join(missing)
    plural = "capabilities" if len(missing) > 1 else "capability"
    return (
        f"{_NO_CAPABILITY}{plural} {listed} (add {listed} to "
        f"capabilities in {facts.profile_source} if the driver supports it)"
    )


def only_missing_capabilities(reason: str) -> bool:
    """True if a not-applicable reason says only that the profile lacks capabilities (the
    driver's choice), not that the cluster lacks the behaviour."""
    parts = [p for p in reason.split("; ") if p]
    return bool(parts) and all(p.startswith(_NO_CAPABILITY) for p in parts)


def not_applicable_reason(req: Requirement, facts: ApplicabilityFacts) -> str | None:
    """Why `req` does not apply to this driver and cluster, or None.

    Only what the driver or the cluster *lacks* counts; what could not be read or is not
    allowed is `not_run_reason`'s.
    """
    reasons: list[str] = []
    too_old = False
    if req.min_version and facts.version is not None and facts.version < req.min_version:
        too_old = True
        want, have = (".".join(map(str, v)) for v in (req.min_version, facts.version))
        reasons.append(f"introduced in Kubernetes {want} (the cluster runs {have})")
    for gate in req.feature_gates:
        if facts.feature_gates is None:
            continue
        if gate not in facts.feature_gates:
            if implied_on(gate, facts.version, metrics_read=True):
                continue  # GA by this version: removed from Kubernetes since, on for good
            if too_old:  # a gate younger than the cluster: the version already says why
                continue
            reasons.append(f"feature gate {gate} is not known to the cluster's API server")
        elif not facts.feature_gates[gate]:
            reasons.append(f"feature gate {gate} is disabled in the cluster")
    capability = missing_capabilities_reason(req.capabilities, facts)
    if capability:
        reasons.append(capability)
    return "; ".join(reasons) or None


def not_run_reason(req: Requirement, facts: ApplicabilityFacts) -> tuple[str, str] | None:
    """(why `req` cannot run here, what would make it run), or None when it can run."""
    reasons: list[str] = []
    remedies: list[str] = []
    if req.min_version and facts.version is None:
        want = ".".join(map(str, req.min_version))
        reasons.append(
            f"introduced in Kubernetes {want}, and the cluster version could not be read"
        )
        remedies.append("let the run's account read /version")
    unreadable = [
        g
        for g in req.feature_gates
        if facts.feature_gates is None and not implied_on(g, facts.version, metrics_read=False)
    ]
    if unreadable:
        why = f" ({facts.feature_gates_error})" if facts.feature_gates_error else ""
        reasons.append(f"feature gate(s) {', '.join(unreadable)} could not be read{why}")
        remedies.append("let the run's account read the API server's /metrics")
    if req.disruptive and not facts.provisioned and not facts.allow_disruptive:
        reasons.append("disruptive, and the cluster was not created by this run")
        remedies.append("pass --allow-disruptive (run) or --dra-allow-disruptive (pytest)")
    if not reasons:
        return None
    return "; ".join(reasons), "; ".join(remedies)
