"""Known platform issues (`scenarios/known_issues.yaml`): upstream Kubernetes bugs that make a
requirement fail whatever the driver does, keyed by the Kubernetes versions they affect.

A requirement whose test *fails* on an affected version ends `known-platform-issue` (never
passed, never CONFORMANT; conformance/report/verdict.py); a pass there stays a pass, and the
report says the issue did not show. Schema (docs/CONTRACTS.md, "Known platform issues"):

    schema: 1
    issues:
      - requirement: DRA-LOSS-002          # a catalog ID
        affected:
          from: "1.36.0"                   # first affected release (inclusive)
          fixed_in: "1.36.3"               # first release with the fix (exclusive); omit: unfixed
        link: https://github.com/kubernetes/kubernetes/pull/139681
        summary: one line, what the platform does wrong
        disrupts: one line          # optional: the test is not run on an affected version,
                                    # because running it breaks what other tests need

With `disrupts` (for example the test's claim crashes kube-scheduler, which the tests running
beside it need), the test fails on an affected version without running its body, with that
line as its reason: `known-platform-issue`, and the other tests are spared.

Versions are `1.N` (= 1.N.0) or `1.N.P`, with an optional pre-release (`1.38.0-beta.0` sorts
before `1.38.0`); a leading `v` is accepted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, Field, ValidationError, ValidationInfo, model_validator

from conformance.errors import ConformanceError
from conformance.model.kube_version import Version, parse, show
from conformance.model.schema import DocumentError, read_document, suggest
from conformance.model.typed import Snake, checked, fail, listed, schema_version, text, wrong
from conformance.model.typed_errors import problems_of

SCHEMA = 1
NOTE_PREFIX = "known platform issue"

_ID_RE = re.compile(r"^DRA-[A-Z]+-\d{3}$")
_LINK_RE = re.compile(r"^https://\S+$")
# For editors (JSON Schema); kube_version.parse is what decides.
_VERSION_PATTERN = r"^v?\d+\.\d+(?:\.\d+)?(?:-[0-9A-Za-z.-]+)?(?:\+\S*)?$"


class KnownIssuesError(DocumentError):
    """The known-issues list cannot be used; the message is one line."""

    kind = "known platform issues"

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        ConformanceError.__init__(self, f"{self.kind} {source}: " + "; ".join(problems))


@dataclass(frozen=True)
class KnownIssue:
    requirement: str
    affected_from: Version
    fixed_in: Version | None  # None: not fixed in any release yet
    link: str
    summary: str
    disrupts: str | None = None  # set: not run on an affected version (it breaks other tests)

    def affects(self, kubernetes_version: str) -> bool:
        """Does the cluster's version (server gitVersion, e.g. v1.36.2) have the issue?"""
        version = parse(kubernetes_version)
        if version is None:
            return False
        if version < self.affected_from:
            return False
        return self.fixed_in is None or version < self.fixed_in

    @property
    def versions(self) -> str:
        """'1.36.0 to before 1.36.3' / '1.34.0 and later (not fixed yet)'."""
        start = show(self.affected_from)
        if self.fixed_in is None:
            return f"{start} and later (not fixed yet)"
        return f"{start} to before {show(self.fixed_in)}"

    @property
    def note(self) -> str:
        """What a failure on an affected version is prefixed with."""
        return f"{NOTE_PREFIX} {self.link}: {self.summary}"


def load_known_issues(
    path: str | Path, requirement_ids: Iterable[str] | None = None
) -> tuple[KnownIssue, ...]:
    """The list at `path` (a missing file is an empty list); `requirement_ids`, when given,
    are the catalog's: an entry naming another ID is an error."""
    if not Path(path).is_file():
        return ()
    document = read_document(path, KnownIssuesError)
    return parse_known_issues(document, shown=str(path), requirement_ids=requirement_ids)


def parse_known_issues(
    document: Any, *, shown: str, requirement_ids: Iterable[str] | None = None
) -> tuple[KnownIssue, ...]:
    known = None if requirement_ids is None else list(requirement_ids)
    try:
        model = KnownIssuesDocument.model_validate(document, context={"known": known})
    except ValidationError as exc:
        raise KnownIssuesError(shown, problems_of(exc, KnownIssuesDocument)) from None
    return tuple(
        KnownIssue(
            e.requirement,
            e.affected.from_,
            e.affected.fixed_in,
            e.link,
            _one_line(e.summary),
            _one_line(e.disrupts) if e.disrupts else None,
        )
        for e in model.issues
    )


def _one_line(text: str) -> str:
    """Folded YAML (`>-`) may still carry line breaks and runs of spaces: one line."""
    return " ".join(text.split())


# --- the list's typed schema ----------------------------------------------------------------


def _version(raw: Any) -> Version:
    version = parse(raw) if isinstance(raw, str) else None
    if version is None:
        wrong('a quoted Kubernetes version such as "1.36.3"', raw)
    return version


ReleaseVersion = checked(Any, _version, {"type": "string", "pattern": _VERSION_PATTERN})


class Affected(Snake):
    from_: ReleaseVersion = Field(
        alias="from", description='the first affected release, e.g. "1.36.0"'
    )
    fixed_in: ReleaseVersion | None = Field(None, description="the first release with the fix")

    @model_validator(mode="after")
    def _ordered(self) -> Affected:
        start, fixed = self.from_, self.fixed_in
        if fixed is not None and not start < fixed:
            fail(f"fixed_in {show(fixed)} is not after from {show(start)}")
        return self


def _in_catalog(rid: str, info: ValidationInfo) -> str:
    known = (info.context or {}).get("known")
    if known is not None and rid not in known:
        best = suggest(rid, known)
        hint = f"; did you mean '{best}'?" if best else ""
        fail(f"{rid} is not in the requirements catalog{hint}")
    return rid


def _single_line(text: str) -> str:
    if "\n" in text.strip():
        fail("must be one line")
    return text


_ID_FORM = "a requirement ID such as DRA-LOSS-002"
RequirementId = Annotated[text(_ID_FORM, _ID_RE), AfterValidator(_in_catalog)]
Link = text("an https:// link", _LINK_RE)
OneLine = text("one line")


class Issue(Snake):
    requirement: RequirementId = Field(description=_ID_FORM)
    affected: Affected = Field(
        description='a mapping with from: "1.N.P" and optional fixed_in: "1.N.P"'
    )
    link: Link = Field(description="an https:// link to the upstream issue or fixing pull request")
    summary: Annotated[OneLine, AfterValidator(_single_line)] = Field(description="one line")
    disrupts: OneLine | None = Field(None, description="why the test is not run when affected")


Issues = listed(Issue, "known issues")

SchemaVersion = schema_version(SCHEMA)


class KnownIssuesDocument(Snake):
    schema_: SchemaVersion = Field(
        None, alias="schema", validate_default=True, description=str(SCHEMA)
    )
    issues: Issues = Field((), description="the known issues")


def affecting(
    issues: Iterable[KnownIssue], kubernetes_version: str | None
) -> Mapping[str, KnownIssue]:
    """{requirement ID: the issue} for the issues the cluster's version has (the first listed
    wins when two affect one requirement)."""
    out: dict[str, KnownIssue] = {}
    if not kubernetes_version:
        return out
    for issue in issues:
        if issue.affects(kubernetes_version):
            out.setdefault(issue.requirement, issue)
    return out
