"""Judgements of failures for `dra-conformance matrix --notes NOTES.yaml`: a person's verdict on
why a driver failed a requirement, which the suite cannot decide itself.

    schema: 1
    drivers:
      gpu.example.com:                # the driver name summary.json records (driver.name)
        DRA-REBOOT-001:               # a requirement ID
          kind: driver-bug            # driver-bug | device-limitation | suite-bug
          link: https://...           # the upstream issue or fix (required for driver-bug)
          text: one line              # what was judged

A failure with no note is shown as not judged: the matrix never invents a judgement.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from conformance.errors import ConformanceError

NOTE_KINDS = {
    "driver-bug": "driver bug",
    "device-limitation": "device limitation (the catalog must treat it as not applicable)",
    "suite-bug": "suite false positive",
}
NOTE_FIELDS = ("kind", "link", "text")
NOT_JUDGED = "not judged"
_REQUIREMENT_ID = re.compile(r"^[A-Z][A-Z0-9]*(-[A-Z0-9]+)+$")


class NotesError(ConformanceError):
    """The notes file cannot be used; the message names the file and the entry."""


@dataclass(frozen=True)
class Note:
    kind: str
    text: str
    link: str = ""

    @property
    def label(self) -> str:
        return NOTE_KINDS[self.kind]


Notes = Mapping[str, Mapping[str, Note]]  # driver -> requirement ID -> note


def load_notes(path: Path) -> dict[str, dict[str, Note]]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise NotesError(f"--notes {path}: cannot be read ({exc.strerror})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}" if where is not None else ""
        raise NotesError(f"--notes {path}: not YAML{at}; fix its syntax") from None
    return parse_notes(data, str(path))


def parse_notes(data: Any, source: str) -> dict[str, dict[str, Note]]:
    """driver -> requirement -> Note, or NotesError naming the first bad entry."""
    if not isinstance(data, dict) or data.get("schema") != 1:
        raise NotesError(f"{source}: give a mapping with `schema: 1` and `drivers:`")
    unknown = sorted(set(data) - {"schema", "drivers"})
    if unknown:
        raise NotesError(f"{source}: unknown key {unknown[0]!r}; only schema and drivers")
    drivers = data.get("drivers") or {}
    if not isinstance(drivers, dict):
        raise NotesError(f"{source}: drivers must map a driver name to its requirements")
    out: dict[str, dict[str, Note]] = {}
    for driver, entries in sorted(drivers.items(), key=lambda kv: str(kv[0])):
        if not isinstance(entries, dict) or not entries:
            raise NotesError(f"{source}: drivers.{driver} must map requirement IDs to notes")
        bad = sorted(str(r) for r in entries if not _REQUIREMENT_ID.match(str(r)))
        if bad:
            raise NotesError(f"{source}: drivers.{driver}.{bad[0]}: not a requirement ID")
        out[str(driver)] = {
            str(req): _note(entry, f"{source}: drivers.{driver}.{req}")
            for req, entry in sorted(entries.items(), key=lambda kv: str(kv[0]))
        }
    return out


def _note(entry: Any, where: str) -> Note:
    if not isinstance(entry, dict):
        raise NotesError(f"{where}: give a mapping with kind, text and link")
    unknown = sorted(set(map(str, entry)) - set(NOTE_FIELDS))
    if unknown:
        raise NotesError(f"{where}: unknown field {unknown[0]!r}; fields: {', '.join(NOTE_FIELDS)}")
    kind, text, link = (str(entry.get(f) or "").strip() for f in ("kind", "text", "link"))
    if kind not in NOTE_KINDS:
        raise NotesError(f"{where}: kind {kind or 'missing'!r}; one of {', '.join(NOTE_KINDS)}")
    if not text:
        raise NotesError(f"{where}: text missing; say in one line what was judged")
    if link and not link.startswith("https://"):
        raise NotesError(f"{where}: link {link!r} is not an https:// address")
    if kind == "driver-bug" and not link:
        raise NotesError(f"{where}: a driver-bug needs its link (the upstream issue or fix)")
    return Note(kind=kind, text=" ".join(text.split()), link=link)
