"""`make test` ends with each tier's wall time, longest first, so the CI log says which shard
the run waited for."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _run_tests():
    spec = importlib.util.spec_from_file_location("run_tests", ROOT / "scripts/run_tests.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["run_tests"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_longest_tier_is_first_and_named() -> None:
    text = _run_tests().stage_times({"main": 2240.4, "broken-2": 2433.2, "unit": 1719.0})
    assert text.splitlines() == [
        "test tier wall times:",
        "   2433 s  broken-2  (longest)",
        "   2240 s  main",
        "   1719 s  unit",
    ]
