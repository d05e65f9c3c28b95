"""Performance figures and inventory that tests and the plugin add to the report.

Both work under pytest-xdist: a figure recorded on a test (through its `request` or item) travels
to the controller in the test report's `user_properties`; one recorded on the config (no test at
hand) travels in the worker's `workeroutput` when the worker finishes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

import pytest

from conformance.report.outcomes import PROP_INVENTORY, PROP_METRIC

SESSION_METRICS_KEY = pytest.StashKey[list[dict[str, Any]]]()
SESSION_INVENTORY_KEY = pytest.StashKey[dict[str, Any]]()
WORKEROUTPUT_METRICS = "dra_metrics"
WORKEROUTPUT_INVENTORY = "dra_inventory"


def record_metric(target: Any, name: str, value_s: float, **labels: str) -> None:
    """Record one timing (seconds) under `name`, e.g. `claim_created_to_allocated`.

    `target` is the test's `request` fixture, a test item, or the pytest config. The summary
    reports count, p50, p95, min, max and mean per name; `labels` (e.g. node="worker-1") are kept
    with each sample.
    """
    if not name or not isinstance(name, str):
        raise ValueError("record_metric: name must be a non-empty string")
    value = float(value_s)
    if not math.isfinite(value):
        raise ValueError(f"record_metric({name!r}): value must be a finite number, got {value_s!r}")
    sample: dict[str, Any] = {"name": name, "value_s": value}
    if labels:
        sample["labels"] = {str(k): str(v) for k, v in labels.items()}
    item = _item_of(target)
    if item is not None:
        item.user_properties.append((PROP_METRIC, json.dumps(sample, sort_keys=True)))
        return
    config = _config_of(target)
    config.stash.setdefault(SESSION_METRICS_KEY, []).append(sample)


def add_inventory(target: Any, key: str, value: Any) -> None:
    """Add (or replace) an inventory entry: JSON-serialisable facts the run reports, not judged."""
    json.dumps(value)  # fail here, with the caller in the traceback, if it cannot be reported
    item = _item_of(target)
    if item is not None:
        item.user_properties.append(
            (PROP_INVENTORY, json.dumps({"key": key, "value": value}, sort_keys=True))
        )
        return
    config = _config_of(target)
    config.stash.setdefault(SESSION_INVENTORY_KEY, {})[key] = value


def session_metrics(config: pytest.Config) -> list[dict[str, Any]]:
    return list(config.stash.get(SESSION_METRICS_KEY, []))


def session_inventory(config: pytest.Config) -> dict[str, Any]:
    return dict(config.stash.get(SESSION_INVENTORY_KEY, {}))


def _item_of(target: Any) -> pytest.Item | None:
    if isinstance(target, pytest.Item):
        return target
    node = getattr(target, "node", None)  # FixtureRequest
    if isinstance(node, pytest.Item):
        return node
    return None


def _config_of(target: Any) -> pytest.Config:
    if isinstance(target, pytest.Config):
        return target
    config = getattr(target, "config", None)
    if isinstance(config, pytest.Config):
        return config
    raise TypeError(
        "record_metric/add_inventory: pass the test's `request`, a test item or the pytest "
        f"config, not {type(target).__name__}"
    )


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between closest ranks."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def describe(values: list[float]) -> dict[str, Any]:
    return {
        "count": len(values),
        "p50": round(percentile(values, 50), 6),
        "p95": round(percentile(values, 95), 6),
        "min": round(min(values), 6),
        "max": round(max(values), 6),
        "mean": round(sum(values) / len(values), 6),
    }


def aggregate_metrics(samples: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{name: {unit, count, p50, p95, min, max, mean}} over all samples, names sorted."""
    by_name: dict[str, list[float]] = {}
    for sample in samples:
        try:
            name, value = str(sample["name"]), float(sample["value_s"])
        except (KeyError, TypeError, ValueError):
            continue
        if math.isfinite(value):
            by_name.setdefault(name, []).append(value)
    return {name: {"unit": "s", **describe(vals)} for name, vals in sorted(by_name.items())}
