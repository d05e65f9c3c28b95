"""The requirements catalog (`scenarios/requirements.yaml`): loading, validation, and whether a
requirement applies to this driver and cluster.

A requirement that does not apply (a driver feature, the cluster's version or gates lack the
behaviour) ends *not applicable*; one that applies but cannot run here (disruptive tests not
allowed, facts that could not be read) ends *not run* with what would make it run
(conformance/model/outcome.py). Neither is ever counted as passed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import ValidationError

from conformance.model.feature_gates import ga_since, implied_on
from conformance.model.frozen import FrozenMap

# The catalog's names, read from here by the report and the plugin.
from conformance.model.requirements_schema import (  # noqa: F401
    LEVELS,
    SCHEMA,
    SUITES,
    CatalogDocument,
    Entry,
    Gates,
)
from conformance.model.schema import DocumentError, read_document, suggest
from conformance.model.typed_errors import problems_of

# Suites that only a rehearsal runs (`--dra-upgrade-to`): an ordinary run neither collects
# their tests nor has their requirements in its catalog.
REHEARSAL_SUITES = ("upgrade",)

Level = Literal["MUST", "SHOULD", "MAY"]


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
    # Profile fields the test needs (e.g. capacity): without one it is not applicable.
    profile_fields: tuple[str, ...] = ()
    # Why the level: a MUST's source (KEP, API doc, kubelet behaviour, upstream issue), or
    # why a SHOULD or MAY is not a MUST.
    why_must: str = ""
    why_not_must: str = ""


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
    try:
        model = CatalogDocument.model_validate(document)
    except ValidationError as exc:
        raise CatalogError(shown, problems_of(exc, CatalogDocument)) from None
    return Catalog(source.resolve(), tuple(_requirement(e) for e in model.requirements))


def _requirement(entry: Entry) -> Requirement:
    gates = entry.gates or Gates()
    return Requirement(
        entry.id,
        entry.suite,
        entry.level,
        " ".join(entry.statement.split()),
        entry.disruptive,
        gates.capabilities,
        gates.min_version,
        gates.feature_gates,
        gates.faults,
        entry.readiness,
        gates.profile_fields,
        " ".join((entry.why_must or "").split()),
        " ".join((entry.why_not_must or "").split()),
    )


# --- applicability -------------------------------------------------------------------------


class ApplicabilityFacts(Protocol):
    """What decides applicability; RunContext provides it, tests build `Applicability`."""

    capabilities: frozenset[str]
    profile_fields: frozenset[str]  # the gating profile fields the profile sets
    version: tuple[int, int] | None
    feature_gates: Mapping[str, bool] | None  # None: could not be read from the cluster
    feature_gates_error: str | None
    provisioned: bool  # the harness created this cluster (disruptive tests always run)
    allow_disruptive: bool
    profile_source: str


@dataclass(frozen=True)
class Applicability:
    capabilities: frozenset[str] = frozenset()
    profile_fields: frozenset[str] = frozenset()
    version: tuple[int, int] | None = None
    feature_gates: Mapping[str, bool] | None = None
    feature_gates_error: str | None = None
    provisioned: bool = True
    allow_disruptive: bool = False
    profile_source: str = "the profile"


_NO_CAPABILITY = "the driver profile does not declare "
_NO_PROFILE_FIELD = "the profile declares no "


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


def missing_profile_fields_reason(names: Iterable[str], facts: ApplicabilityFacts) -> str | None:
    missing = [f for f in names if f not in facts.profile_fields]
    if not missing:
        return None
    listed = ", ".join(missing)
    return (
        f"{_NO_PROFILE_FIELD}{listed} (set {listed} in {facts.profile_source} if the driver's "
        "devices have one: docs/profile.md)"
    )


def without_capabilities(reason: str | None) -> str | None:
    """A not-applicable reason with its undeclared-capability parts left out (None: nothing
    else): what still keeps a requirement from applying when its capabilities are probed."""
    parts = [p for p in (reason or "").split("; ") if p and not p.startswith(_NO_CAPABILITY)]
    return "; ".join(parts) or None


def only_missing_capabilities(reason: str) -> bool:
    """True if a not-applicable reason says only that the profile lacks capabilities or
    gating fields (the driver's choice), not that the cluster lacks the behaviour."""
    parts = [p for p in reason.split("; ") if p]
    return bool(parts) and all(p.startswith((_NO_CAPABILITY, _NO_PROFILE_FIELD)) for p in parts)


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
        elif not facts.feature_gates[gate] and ga_since(gate, facts.version) is None:
            reasons.append(f"feature gate {gate} is disabled in the cluster")
    capability = missing_capabilities_reason(req.capabilities, facts)
    if capability:
        reasons.append(capability)
    field = missing_profile_fields_reason(req.profile_fields, facts)
    if field:
        reasons.append(field)
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
    turned_off = [
        (g, ga)
        for g in req.feature_gates
        if facts.feature_gates is not None
        and facts.feature_gates.get(g) is False
        and (ga := ga_since(g, facts.version)) is not None
    ]
    for gate, ga in turned_off:
        since = ".".join(map(str, ga))
        reasons.append(
            f"the cluster has a GA feature gate turned off: {gate} (GA, on by default, since "
            f"Kubernetes {since})"
        )
        remedies.append(f"turn feature gate {gate} back on")
    if req.disruptive and not facts.provisioned and not facts.allow_disruptive:
        reasons.append("disruptive, and the cluster was not created by this run")
        remedies.append("pass --allow-disruptive (run) or --dra-allow-disruptive (pytest)")
    if not reasons:
        return None
    return "; ".join(reasons), "; ".join(remedies)
