"""The plugin's own hooks, for a conftest.py to implement."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookspec(firstresult=True)
def pytest_dra_lease_book(config: pytest.Config, context: Any) -> Any:
    """A device lease book (`conformance.run.lease_book.LeaseBook`) to use instead of the
    cluster's: the project's own tests of the plugin, which run without a cluster. None (no
    implementation): the book in the cluster under test, as every run uses."""
