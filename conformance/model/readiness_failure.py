"""A driver that never became ready: which part of readiness failed, and what the cluster said.

Readiness has two parts, each proving a catalog requirement (its `readiness:` key):
`plugin` (the driver's kubelet-plugin pods are rolled out and ready on every node) and
`slices` (every node the profile selects has its ResourceSlices). When the wait for readiness
ends, the run still reports: the requirements of the failed parts fail with the reason the
cluster gave, every other one is not run (conformance/plugin/not_ready.py).

"What the cluster said" is read once, when the wait ends: the API server's rejections in the
tail of the driver pods' logs (a driver logs the answer to the write that was refused) and the
Warning events in the driver's namespace, redacted and cut to a line or two.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from conformance.model.frozen import FrozenMap
from conformance.observe.redact import redact_text

READINESS_PARTS = ("plugin", "slices")

# Answers of the API server (and of admission webhooks) to a write it refused.
REJECTION_RE = re.compile(
    r"is invalid|Invalid value|Duplicate value|Unsupported value|Required value|Too many|"
    r"Too long|forbidden|Forbidden|admission webhook|denied the request"
)
# A timestamp (ISO or klog's "E0102 10:00:01.123456   7 file.go:12]") that starts a log line.
_LOG_PREFIX_RE = re.compile(
    r"^(?:\[?\d{4}-\d{2}-\d{2}[T ][\d:.,]+\S*\]?\s*|[IWEF]\d{4} [\d:.]+\s+\d+ \S+\]\s*)"
)
MAX_LINES = 2
MAX_LINE_CHARS = 300
LOG_TAIL_LINES = 200


@dataclass(frozen=True)
class ReadinessFailure:
    """Why the driver never became ready: the problem of each failed part, what the cluster
    said, and how long the run waited. Carried in the run context to xdist workers."""

    problems: Mapping[str, str]  # readiness part -> what was wrong at the deadline
    cluster_said: tuple[str, ...] = ()
    waited_s: float = 0.0
    last_seen: str = ""  # ReadinessState as text
    driver: str = ""

    @property
    def failed_parts(self) -> frozenset[str]:
        return frozenset(self.problems)

    def said(self) -> str:
        if self.cluster_said:
            return " | ".join(self.cluster_said)
        return "nothing (no API rejection in the driver's logs, no Warning event in its namespace)"

    def reason_for(self, part: str) -> str:
        """Why the requirement `part` proves failed: the part's problem and the cluster's word."""
        return (
            f"the driver never became ready ({self.problems.get(part, 'not ready')}, after "
            f"{self.waited_s:.0f}s); the cluster said: {self.said()}"
        )

    def brief(self) -> str:
        """What was wrong, without what the cluster said (for the tests that did not run)."""
        problems = "; ".join(self.problems[p] for p in READINESS_PARTS if p in self.problems)
        return f"driver {self.driver} never became ready after {self.waited_s:.0f}s ({problems})"

    def summary(self) -> str:
        """One line for the report's header: what was wrong and what the cluster said."""
        return f"{self.brief()}; the cluster said: {self.said()}"

    def remedy(self) -> str:
        first = self.cluster_said[0] if self.cluster_said else "; ".join(self.problems.values())
        rejection = REJECTION_RE.search(first)
        short = shorten(first, 160, around=rejection.start() if rejection else None, before=50)
        return f"fix the driver's readiness first: {short}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "problems": dict(self.problems),
            "cluster_said": list(self.cluster_said),
            "waited_s": self.waited_s,
            "last_seen": self.last_seen,
            "driver": self.driver,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReadinessFailure:
        return cls(
            problems=FrozenMap(dict(data.get("problems") or {})),
            cluster_said=tuple(data.get("cluster_said") or ()),
            waited_s=float(data.get("waited_s") or 0.0),
            last_seen=str(data.get("last_seen") or ""),
            driver=str(data.get("driver") or ""),
        )


def shorten(
    text: str, width: int = MAX_LINE_CHARS, around: int | None = None, before: int = 100
) -> str:
    """`text` on one line, at most `width` characters; when cut, the window starts `before`
    characters before position `around` (the interesting part) rather than at the start."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    start = max(0, around - before) if around is not None else 0
    start = min(start, len(text) - (width - 1))  # a window that reaches the end fills up
    head = "…" if start else ""
    room = width - len(head)
    if start + room >= len(text):
        return head + text[start:]
    return head + text[start : start + room - 1] + "…"


def rejection_lines(text: str, limit: int = MAX_LINES) -> list[str]:
    """The last `limit` distinct API rejections in `text` (a log), newest last: each line
    without its timestamp, redacted and cut to MAX_LINE_CHARS around the rejection. A retried
    write logs the same rejection again; it is kept once."""
    found: dict[str, str] = {}  # the rejection from its first word on -> the line shown
    for raw in reversed(text.splitlines()):
        line = _LOG_PREFIX_RE.sub("", raw.strip(), count=1)
        match = REJECTION_RE.search(line)
        if not match:
            continue
        key = " ".join(line[match.start() :].split())
        if key in found:
            continue
        # Cut around the first rejection word: the words before it name the object.
        before = " ".join(line[: match.start()].split())
        found[key] = redact_text(shorten(line, around=len(before)))
        if len(found) == limit:
            break
    return list(reversed(found.values()))


def _event_time(event: Mapping[str, Any]) -> datetime | None:
    for key in ("lastTimestamp", "eventTime", "firstTimestamp"):
        value = event.get(key)
        if isinstance(value, datetime):
            return value
        if isinstance(value, str) and value:
            try:
                return datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                continue
    meta = event.get("metadata") or {}
    value = meta.get("creationTimestamp")
    return value if isinstance(value, datetime) else None


def warning_event_lines(
    events: Iterable[Mapping[str, Any]], since: datetime | None = None, limit: int = MAX_LINES
) -> list[str]:
    """`<reason> <kind>/<name>: <message>` of the newest distinct Warning events (seen at or
    after `since`), newest first, redacted and cut to MAX_LINE_CHARS."""
    picked: list[tuple[datetime | None, str]] = []
    for event in events:
        if event.get("type") != "Warning":
            continue
        when = _event_time(event)
        if since is not None and when is not None and when < since:
            continue
        obj = event.get("involvedObject") or {}
        text = f"{event.get('reason') or 'Warning'} {obj.get('kind', '?')}/{obj.get('name', '?')}"
        message = " ".join(str(event.get("message") or "").split())
        picked.append((when, redact_text(shorten(f"{text}: {message}"))))
    picked.sort(key=lambda p: p[0].timestamp() if p[0] else 0.0, reverse=True)
    out: list[str] = []
    for _, line in picked:
        if line not in out:
            out.append(line)
        if len(out) == limit:
            break
    return out


def pick_cluster_said(
    log_rejections: Iterable[str], warnings: Iterable[str], limit: int = MAX_LINES
) -> tuple[str, ...]:
    """The API server's own rejection first (the most specific), then Warning events."""
    out: list[str] = []
    for line in [*log_rejections, *warnings]:
        if line not in out:
            out.append(line)
    return tuple(out[:limit])
