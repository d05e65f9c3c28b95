"""The run's own figures in Allure: one tear-down fixture shared by every test of the run (an
Allure container), carrying the driver operations and the cluster inventory as attachments, and
any chart written beside summary.md."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from conformance.report.driver_markdown import (
    cluster_inventory_section,
    driver_operations_section,
)

RESULT_SUFFIX = "-result.json"
FIXTURE_NAME = "dra-conformance run: driver operations and cluster inventory"
_TYPES = {".svg": "image/svg+xml", ".json": "application/json", ".txt": "text/plain"}


def write_run_attachments(
    results_dir: Path, summary: Mapping[str, Any], charts: Iterable[Path] = ()
) -> Path:
    """Write the container and its attachments; every test result of the run is its child."""
    children = sorted(_result_uuids(results_dir))
    text = "\n".join(driver_operations_section(summary) + cluster_inventory_section(summary))
    figures = {
        "driver_operations": summary.get("driver_operations"),
        "cluster_inventory": summary.get("cluster_inventory"),
    }
    attachments = [
        _attach(results_dir, "Driver operations and cluster inventory", text, ".txt"),
        _attach(results_dir, "driver_operations.json", json.dumps(figures, indent=2), ".json"),
    ]
    for chart in charts:
        attachments.append(_attach(results_dir, chart.name, chart.read_text("utf-8"), ".svg"))
    now = int(time.time() * 1000)
    container = {
        "uuid": str(uuid.uuid4()),
        "name": "dra-conformance run",
        "children": children,
        "befores": [],
        "afters": [
            {
                "name": FIXTURE_NAME,
                "status": "passed",
                "stage": "finished",
                "attachments": attachments,
                "steps": [],
                "parameters": [],
                "start": now,
                "stop": now,
            }
        ],
        "start": now,
        "stop": now,
    }
    path = results_dir / f"{container['uuid']}-container.json"
    path.write_text(json.dumps(container), encoding="utf-8")
    return path


def _result_uuids(results_dir: Path) -> Iterable[str]:
    """The `uuid` inside each result (its file's name carries another one)."""
    for path in results_dir.glob("*" + RESULT_SUFFIX):
        try:
            found = json.loads(path.read_text(encoding="utf-8")).get("uuid")
        except (OSError, ValueError, AttributeError):
            continue
        if found:
            yield str(found)


def _attach(results_dir: Path, name: str, text: str, suffix: str) -> dict[str, str]:
    source = f"{uuid.uuid4()}-attachment{suffix}"
    (results_dir / source).write_text(text, encoding="utf-8")
    return {"name": name, "source": source, "type": _TYPES[suffix]}
