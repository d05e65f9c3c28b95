"""A test's own driver figures: the kubelet's gRPC calls to the driver on the nodes the test
used, from the reads the per-test kubelet check makes anyway (no extra scrape). They go to the
test's Allure page as a table and, through its report's properties, to summary.json's tests[]
(and the per-test chart). On a node shared with other tests their calls count too: said so."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.observe.steps import attach_text
from conformance.report.outcomes import PROP_DRIVER_CALLS
from conformance.scenario_api.kubelet_dra import describe_call_figures

ATTACHMENT = "driver calls (kubelet)"
SHARED_NOTE = "; the nodes were shared with other tests, whose calls count too"


def record_driver_calls(
    item: pytest.Item, rows: list[dict[str, Any]], driver: str, shared: bool
) -> None:
    """Carry `rows` in the test's reports and attach them to its Allure page (none: nothing)."""
    if not rows:
        return
    item.user_properties.append((PROP_DRIVER_CALLS, json.dumps(rows, sort_keys=True)))
    attach_text(ATTACHMENT, describe_call_figures(rows, driver, SHARED_NOTE if shared else ""))
