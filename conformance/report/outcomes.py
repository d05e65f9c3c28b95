"""One test's result, built from its setup/call/teardown reports (as seen on the controller).

Only the harness decides what a test proves and how it ended. A test's requirement ID is set by
the conformance plugin for the tests it collected from the suite's own scenario tree
(`mark_suite_test`), and the typed outcome by the collector from the exception the test raised;
both travel on the report as the `dra_stamp` attribute (it survives xdist), never as user
properties, which the test's own code can write. On the controller the collector writes the
stamp into JUnit under the reserved property names below; a reserved name the test's code
recorded itself is kept as a `dra_claim` entry and decides nothing: from a test outside the
scenario tree it is a collection problem (`foreign_claims`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import pytest

from conformance.model.outcome import ERROR as HARNESS_ERROR
from conformance.model.outcome import MESSAGE_PREFIX, PROP_OUTCOME, PROP_REMEDY, SkipKind
from conformance.observe.redact import redact_text

MAX_REASON_CHARS = 500

# JUnit property names only the report writes (docs/CONTRACTS.md), from the report's stamp
PROP_REQUIREMENT = "requirement"
PROP_KNOWN_ISSUE = "dra_known_issue"  # the link of the known platform issue a failure showed
# The capabilities a test probed: the profile does not declare them, and the run ran it anyway
# (--dra-probe-capabilities) to observe them, outside the verdict.
PROP_PROBE = "dra_probe"
RESERVED_PROPERTIES = (PROP_REQUIREMENT, PROP_OUTCOME, PROP_REMEDY, PROP_KNOWN_ISSUE, PROP_PROBE)
PROP_CLAIM = "dra_claim"  # "name=value": a reserved property the test's own code recorded
# user_properties names tests and the harness record (not decisive)
PROP_METRIC = "metric"
PROP_INVENTORY = "inventory"
PROP_LEASE_WAIT = "dra_lease_wait_s"  # seconds the test waited for its device lease
PROP_DRIVER_CALLS = "dra_driver_calls"  # JSON: the kubelet's gRPC calls to the driver meanwhile

STAMP = "dra_stamp"  # report attribute: {reserved property name: value}, set by the harness
SUITE_TEST_KEY = pytest.StashKey[str]()  # on an item of the suite: the requirement it proves
PROBE_KEY = pytest.StashKey[tuple[str, ...]]()  # on an item run to probe capabilities
FOREIGN_CLAIM = "only the suite's own tests under scenarios/ can decide a requirement"
# An error's reason when the set-up came back and nothing after it (Ctrl-C, a crashed worker)
INCOMPLETE = "incomplete: the test reported no call phase (interrupted or worker crashed)"


def mark_suite_test(item: pytest.Item, requirement: str) -> None:
    """Called by the harness for a test it collected from the suite's own scenario tree (and by
    the standalone report for every marked test): its reports carry `requirement`."""
    item.stash[SUITE_TEST_KEY] = requirement


def mark_probe(item: pytest.Item, capabilities: tuple[str, ...]) -> None:
    """Called by the harness for a test it runs although the profile does not declare
    `capabilities`: its reports carry them, and its outcome observes them, never decides."""
    item.stash[PROBE_KEY] = capabilities


def probed_capabilities(item: pytest.Item) -> tuple[str, ...]:
    return item.stash.get(PROBE_KEY, ())


def suite_requirement(item: pytest.Item) -> str | None:
    """The requirement the harness said `item` proves (None: not one of the suite's tests)."""
    return item.stash.get(SUITE_TEST_KEY, None)


def stamp_suite_facts(item: pytest.Item, report: pytest.TestReport) -> None:
    """What the harness said of a test of the suite's own tree: the requirement it proves (what
    decides), and the capabilities it was run to probe (which then decide nothing)."""
    requirement = suite_requirement(item)
    if requirement:
        stamp_report(report, **{PROP_REQUIREMENT: requirement})
    if probed_capabilities(item):
        stamp_report(report, **{PROP_PROBE: ",".join(probed_capabilities(item))})


def stamp_report(report: pytest.TestReport, **values: str) -> None:
    """Add harness facts (reserved property name -> value) to the report's stamp."""
    stamp = dict(getattr(report, STAMP, None) or {})
    stamp.update({k: str(v) for k, v in values.items()})
    setattr(report, STAMP, stamp)


def report_stamp(report: object) -> dict[str, str]:
    stamp = getattr(report, STAMP, None)
    return dict(stamp) if isinstance(stamp, dict) else {}


def foreign_claims(records: Iterable[TestRecord]) -> list[str]:
    """One problem per test outside the suite that tried to decide a requirement itself."""
    return [
        f"{r.nodeid}: {FOREIGN_CLAIM} (it recorded {', '.join(r.claims)})"
        for r in records
        if r.claims and not r.requirement_ids
    ]


class TestOutcome(StrEnum):
    __test__ = False  # not a pytest test class

    PASSED = "passed"
    FAILED = "failed"  # the test body failed (an assertion: a product defect)
    ERROR = "error"  # setup or teardown failed, or the test did not complete
    NOT_APPLICABLE = "not-applicable"  # conformance.model.outcome.NotApplicable: a missing feature
    NOT_RUN = "not-run"  # any other skip (conformance.model.outcome.NotRun, pytest.skip, xfail)


@dataclass
class TestRecord:
    """What the report keeps of one test item (or of one failed collector)."""

    __test__ = False

    nodeid: str
    phases: dict[str, str] = field(default_factory=dict)  # when -> passed|failed|skipped
    reasons: dict[str, str] = field(default_factory=dict)  # when -> reason text
    skip_kinds: dict[str, str] = field(default_factory=dict)  # when -> SkipKind of a typed skip
    remedies: dict[str, str] = field(default_factory=dict)  # when -> what would make it run
    harness_error: bool = False  # the call failed with a HarnessError: an error, not a failure
    properties: list[tuple[str, Any]] = field(default_factory=list)
    wasxfail: bool = False
    duration_s: float = 0.0  # set-up + body + teardown
    body_s: float | None = None  # the call phase alone (None: it never ran)
    start: float | None = None  # epoch seconds: its set-up began (the run's timeline)
    stop: float | None = None  # epoch seconds: its teardown ended
    worker: str = ""
    collect_error: bool = False
    requirement_ids: list[str] = field(default_factory=list)  # from the harness's stamp only
    known_issue: str = ""  # the link of the known platform issue its failure showed
    claims: list[str] = field(default_factory=list)  # reserved names its own code recorded
    probe: tuple[str, ...] = ()  # the undeclared capabilities it was run to observe

    def add_report(self, report: pytest.TestReport) -> None:
        self.phases[report.when] = report.outcome
        start, stop = getattr(report, "start", None), getattr(report, "stop", None)
        if start is not None:
            self.start = min(self.start or start, start)
        if stop is not None:
            self.stop = max(self.stop or stop, stop)
        self.duration_s += float(getattr(report, "duration", 0.0) or 0.0)
        if report.when == "call":
            self.body_s = float(getattr(report, "duration", 0.0) or 0.0)
        self.worker = self.worker or str(getattr(report, "worker_id", "") or "")
        if hasattr(report, "wasxfail"):
            self.wasxfail = True
        properties = [
            (str(entry[0]), entry[1])
            for entry in getattr(report, "user_properties", ()) or ()
            if isinstance(entry, list | tuple) and len(entry) == 2
        ]
        if report.outcome != "passed":
            self.reasons[report.when] = report_reason(report)
        typed = report_stamp(report)
        requirement = typed.get(PROP_REQUIREMENT)
        if requirement and requirement not in self.requirement_ids:
            self.requirement_ids.append(requirement)
        self.known_issue = typed.get(PROP_KNOWN_ISSUE, self.known_issue)
        if typed.get(PROP_PROBE):
            self.probe = tuple(typed[PROP_PROBE].split(","))
        for name, value in properties:
            claim = f"{name}={value}"
            if name in RESERVED_PROPERTIES and claim not in self.claims:
                self.claims.append(claim)
        if report.outcome == "skipped":
            if PROP_OUTCOME in typed and not hasattr(report, "wasxfail"):
                self.skip_kinds[report.when] = str(typed[PROP_OUTCOME])
                self.remedies[report.when] = str(typed.get(PROP_REMEDY, ""))
        elif report.outcome == "failed" and report.when == "call":
            # a HarnessError (conformance/model/outcome.py): the harness failed, not the driver
            self.harness_error = typed.get(PROP_OUTCOME) == HARNESS_ERROR
        # An item's user_properties only grow, and every phase report carries all of them so
        # far: the latest report has the complete list (recording twice is not doubling).
        properties = [
            p for p in properties if p[0] not in RESERVED_PROPERTIES and p[0] != PROP_CLAIM
        ]
        if len(properties) >= len(self.properties):
            self.properties = properties

    @property
    def requirements(self) -> list[str]:
        return list(self.requirement_ids)

    def junit_properties(self) -> list[tuple[str, str]]:
        """What JUnit says of the test, from the harness's stamps (and the claims its own code
        made, which decide nothing)."""
        props = [(PROP_REQUIREMENT, r) for r in self.requirement_ids]
        skipped = self._skipped_phase()
        if skipped is not None and skipped in self.skip_kinds:
            props.append((PROP_OUTCOME, self.skip_kinds[skipped]))
            if self.remedies.get(skipped):
                props.append((PROP_REMEDY, self.remedies[skipped]))
        elif self.harness_error:
            props.append((PROP_OUTCOME, HARNESS_ERROR))
        if self.known_issue:
            props.append((PROP_KNOWN_ISSUE, self.known_issue))
        if self.probe:
            props.append((PROP_PROBE, ",".join(self.probe)))
        return props + [(PROP_CLAIM, c) for c in self.claims]

    @property
    def lease_wait_s(self) -> float | None:
        """How long set-up waited for the device lease (None: the test leased nothing)."""
        waits = [float(v) for n, v in self.properties if n == PROP_LEASE_WAIT]
        return waits[-1] if waits else None

    @property
    def driver_calls(self) -> list[dict[str, Any]] | None:
        """The kubelet's gRPC calls to the driver on the test's nodes while it ran, per method
        (None: not measured, e.g. a test without a namespace or unreadable kubelets)."""
        found = [v for n, v in self.properties if n == PROP_DRIVER_CALLS]
        try:
            rows = json.loads(found[-1]) if found else None
        except ValueError:
            return None
        return rows if isinstance(rows, list) else None

    @property
    def metrics(self) -> list[dict[str, Any]]:
        found = (_json_dict(v) for n, v in self.properties if n == PROP_METRIC)
        return [m for m in found if m is not None]

    @property
    def inventory(self) -> dict[str, Any]:
        entries: dict[str, Any] = {}
        for name, value in self.properties:
            item = _json_dict(value) if name == PROP_INVENTORY else None
            if item is not None and "key" in item:
                entries[str(item["key"])] = item.get("value")
        return entries

    @property
    def outcome(self) -> TestOutcome:
        if self.collect_error:
            return TestOutcome.ERROR
        call = self.phases.get("call")
        if call == "failed":
            return TestOutcome.ERROR if self.harness_error else TestOutcome.FAILED
        if self.phases.get("setup") == "failed" or self.phases.get("teardown") == "failed":
            return TestOutcome.ERROR
        skipped = self._skipped_phase()
        if skipped is not None:
            if self.skip_kinds.get(skipped) == SkipKind.NOT_APPLICABLE:
                return TestOutcome.NOT_APPLICABLE
            return TestOutcome.NOT_RUN
        if call == "passed":
            return TestOutcome.PASSED
        return TestOutcome.ERROR  # no call phase: interrupted or a worker crashed

    @property
    def reason(self) -> str:
        outcome = self.outcome
        if outcome is TestOutcome.PASSED:
            return ""
        if outcome is TestOutcome.FAILED:
            return self.reasons.get("call", "")
        if outcome is TestOutcome.ERROR:
            for when in ("collect", "setup", "teardown", "call"):
                if self.phases.get(when) == "failed":
                    return f"{when} error: {self.reasons.get(when, '')}".rstrip(": ")
            return INCOMPLETE
        skipped = self._skipped_phase()
        if skipped is None:
            return ""
        reason = self.reasons.get(skipped, "")
        kind = self.skip_kinds.get(skipped)
        if kind is not None:  # the message is "<prefix><reason> (to run it: <remedy>)"
            reason = reason.removeprefix(MESSAGE_PREFIX[kind])
            remedy = self.remedies.get(skipped, "")
            if remedy:
                reason = reason.removesuffix(f" (to run it: {remedy})")
        return reason

    @property
    def remedy(self) -> str:
        """What would make a not-run test run ("" when nobody said)."""
        skipped = self._skipped_phase()
        if skipped is None or self.outcome is not TestOutcome.NOT_RUN:
            return ""
        return self.remedies.get(skipped, "")

    def _skipped_phase(self) -> str | None:
        for when in ("setup", "call", "collect"):
            if self.phases.get(when) == "skipped":
                return when
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "nodeid": self.nodeid,
            "outcome": str(self.outcome),
            "duration_s": round(self.duration_s, 3),
            "body_s": None if self.body_s is None else round(self.body_s, 3),
            "lease_wait_s": None if self.lease_wait_s is None else round(self.lease_wait_s, 3),
            "reason": self.reason,
            "remedy": self.remedy,
            "worker": self.worker,
            "start": None if self.start is None else round(self.start, 3),
            "stop": None if self.stop is None else round(self.stop, 3),
            "driver_calls": self.driver_calls,
        }


def report_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    """A one-line reason: the skip reason, the xfail reason or the failure's crash message."""
    wasxfail = getattr(report, "wasxfail", None)
    if report.outcome == "skipped" and wasxfail is not None:
        return _shorten("xfail: " + str(wasxfail).removeprefix("reason: "))
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return _shorten(str(longrepr[2]).removeprefix("Skipped: "))
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None and getattr(crash, "message", None):
        return _shorten(str(crash.message))
    text = str(longrepr or "").strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    # The exception line ("E   AssertionError: ...") says most; fall back to the last line.
    errors = [ln.strip()[1:].strip() for ln in lines if ln.lstrip().startswith("E ")]
    return _shorten(errors[0] if errors else (lines[-1] if lines else ""))


def _shorten(text: str) -> str:
    text = redact_text(" ".join(text.split()))
    if len(text) > MAX_REASON_CHARS:
        return text[: MAX_REASON_CHARS - 3] + "..."
    return text


def _json_dict(value: Any) -> dict[str, Any] | None:
    if isinstance(value, dict):
        return value
    try:
        parsed = json.loads(value)
    except (TypeError, ValueError):
        return None
    return parsed if isinstance(parsed, dict) else None
