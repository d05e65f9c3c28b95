"""The selector evaluator for tests: the real Go helper, built once per session (cached
across sessions like kind and helm)."""

import pytest

from conformance.cel import CelEvaluator, cel_evaluator


@pytest.fixture(scope="session")
def cel() -> CelEvaluator:
    return cel_evaluator()
