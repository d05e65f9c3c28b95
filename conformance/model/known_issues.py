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
before `1.38.0`); a leading `v` is accepted (conformance/model/kube_version.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.errors import ConformanceError
from conformance.model.kube_version import Version, parse, show
from conformance.model.schema import DocumentError, Problems, join, read_document, suggest

SCHEMA = 1
NOTE_PREFIX = "known platform issue"

_ID_RE = re.compile(r"^DRA-[A-Z]+-\d{3}$")
_LINK_RE = re.compile(r"^https://\S+$")
_KEYS = ("requirement", "affected", "link", "summary", "disrupts")
_AFFECTED_KEYS = ("from", "fixed_in")


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
    p = Problems()
    top = p.mapping("", document, ("schema", "issues"))
    if top is None:
        raise KnownIssuesError(shown, p.items)
    if top.get("schema") != SCHEMA:
        p.wrong("schema", str(SCHEMA), top.get("schema"))
    entries = p.list_of("issues", top.get("issues", []), "known issues") or []
    out = [_issue(p, join("issues", i), entry, known) for i, entry in enumerate(entries)]
    if p.items:
        raise KnownIssuesError(shown, p.items)
    return tuple(i for i in out if i is not None)


def _issue(p: Problems, path: str, entry: Any, known: list[str] | None) -> KnownIssue | None:
    before = len(p.items)
    section = p.mapping(path, entry, _KEYS)
    if section is None:
        return None
    for key, expected in (
        ("requirement", "a requirement ID such as DRA-LOSS-002"),
        ("affected", 'a mapping with from: "1.N.P" and optional fixed_in: "1.N.P"'),
        ("link", "an https:// link to the upstream issue or fixing pull request"),
        ("summary", "one line"),
    ):
        if key not in section:
            p.missing(join(path, key), expected)
    rid = section.get("requirement")
    if "requirement" in section:
        rid = p.string(
            join(path, "requirement"), rid, "a requirement ID such as DRA-LOSS-002", _ID_RE
        )
        if rid and known is not None and rid not in known:
            best = suggest(rid, known)
            hint = f"; did you mean '{best}'?" if best else ""
            p.add(join(path, "requirement"), f"{rid} is not in the requirements catalog{hint}")
    link = (
        p.string(join(path, "link"), section["link"], "an https:// link", _LINK_RE)
        if ("link" in section)
        else None
    )
    summary = (
        p.string(join(path, "summary"), section["summary"], "one line")
        if ("summary" in section)
        else None
    )
    if summary and "\n" in summary.strip():
        p.add(join(path, "summary"), "must be one line")
    disrupts = (
        p.string(join(path, "disrupts"), section["disrupts"], "one line")
        if "disrupts" in section
        else None
    )
    start, fixed = _affected(p, join(path, "affected"), section.get("affected"))
    if len(p.items) > before or not (rid and link and summary and start):
        return None
    return KnownIssue(rid, start, fixed, link, " ".join(summary.split()), _one_line(disrupts))


def _one_line(text: str | None) -> str | None:
    """Folded YAML (`>-`) may still carry line breaks and runs of spaces: one line."""
    return " ".join(text.split()) if text else None


def _affected(p: Problems, path: str, value: Any) -> tuple[Version | None, Version | None]:
    if value is None:
        return None, None
    section = p.mapping(path, value, _AFFECTED_KEYS)
    if section is None:
        return None, None
    versions: dict[str, Version | None] = {}
    for key in _AFFECTED_KEYS:
        if key not in section:
            versions[key] = None
            if key == "from":
                p.missing(join(path, key), 'the first affected release, e.g. "1.36.0"')
            continue
        raw = section[key]
        versions[key] = parse(raw)
        if versions[key] is None:
            p.wrong(join(path, key), 'a quoted Kubernetes version such as "1.36.3"', raw)
    start, fixed = versions["from"], versions["fixed_in"]
    if start and fixed and not start < fixed:
        p.add(path, f"fixed_in {show(fixed)} is not after from {show(start)}")
    return start, fixed


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
