"""The helpers of one scenario suite live in its directory and are imported by their bare name,
as pytest makes them importable for that suite's tests: the same here for their unit tests."""

from __future__ import annotations

import sys
from pathlib import Path

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"

for _suite in ("allocation", "core", "extended_resource", "lifecycle"):
    if str(SCENARIOS / _suite) not in sys.path:
        sys.path.insert(0, str(SCENARIOS / _suite))
