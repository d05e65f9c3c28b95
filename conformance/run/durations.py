"""How long each scenario test's body took in earlier runs, so a parallel run starts the longest
first and its tail is not one long test alone.

The suite ships a prior (`scenarios/durations.json`, measured with the fake driver); each run
against a driver records what it measured in the cache (`durations/<driver>.json`), which then
takes precedence for that driver. Keys are `<file name>::<test name>`, the same whatever the
rootdir. Only the order of tests depends on this, never an outcome.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path

from conformance.cache import cache_root
from conformance.model.naming import file_safe
from conformance.suite_root import SUITE_ROOT

log = logging.getLogger("conformance.run.durations")

PRIOR = SUITE_ROOT / "scenarios" / "durations.json"


def duration_key(nodeid: str) -> str:
    """`scenarios/core/test_x.py::test_y[p]` -> `test_x.py::test_y[p]`."""
    path, sep, rest = nodeid.partition("::")
    return f"{Path(path).name}{sep}{rest}"


def _read(path: Path) -> dict[str, float]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): float(v) for k, v in data.items() if isinstance(v, (int, float))}


def book_path(driver: str) -> Path:
    return cache_root() / "durations" / f"{file_safe(driver)}.json"


def load_durations(driver: str) -> dict[str, float]:
    """The shipped prior, overridden by what runs against `driver` measured."""
    return {**_read(PRIOR), **_read(book_path(driver))}


def record_durations(driver: str, measured: Mapping[str, float]) -> None:
    """Fold one run's body durations into the driver's book (the mean of the old and new
    figure: one slow run moves the order, but not all the way)."""
    if not measured:
        return
    path = book_path(driver)
    book = _read(path)
    for key, seconds in measured.items():
        old = book.get(key)
        book[key] = round(seconds if old is None else (old + seconds) / 2, 2)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp.{os.getpid()}")
        tmp.write_text(json.dumps(book, indent=1, sort_keys=True))
        os.replace(tmp, path)
    except OSError as exc:  # the order of the next run is not worth failing this one
        log.warning("could not record test durations in %s: %s", path, exc)
