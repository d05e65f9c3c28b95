"""What Kubernetes measured of the driver during the run and the cluster's inventory at its end,
handed from the harness (conformance/plugin/driver_metrics.py) to the report on the controller."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

DRIVER_OPERATIONS_KEY = pytest.StashKey[Mapping[str, Any]]()
CLUSTER_INVENTORY_KEY = pytest.StashKey[Mapping[str, Any]]()


def set_driver_figures(
    config: pytest.Config, operations: Mapping[str, Any], inventory: Mapping[str, Any]
) -> None:
    config.stash[DRIVER_OPERATIONS_KEY] = operations
    config.stash[CLUSTER_INVENTORY_KEY] = inventory


def driver_figures(
    config: pytest.Config,
) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]:
    """(driver operations, cluster inventory); None for what no harness measured."""
    return config.stash.get(DRIVER_OPERATIONS_KEY, None), config.stash.get(
        CLUSTER_INVENTORY_KEY, None
    )
