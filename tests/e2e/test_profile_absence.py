"""A driver without extended resources runs the extended_resource suite: the fake driver's
profile minus the `extended-resource` capability and its `extendedResource` block collects
(no "no such device kind" problem), every requirement gated on the capability ends not
applicable with it as the reason, DRA-EXT-005 (the implicit device-class resource name, which
needs no extended-resource name of the driver) still runs and passes, and nothing fails."""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from runs import run_cli

from conformance.model.profile import SUITE_ROOT
from conformance.model.requirements import load_catalog

pytestmark = pytest.mark.e2e


def test_extended_resource_suite_without_extended_resources(
    kind_cluster: Any, fake_driver: Any, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    profile = yaml.safe_load((SUITE_ROOT / "drivers/fake/profile.yaml").read_text())
    profile["capabilities"].remove("extended-resource")
    del profile["extendedResource"]
    profile["install"]["manifests"] = [str(SUITE_ROOT / "drivers/fake/deploy")]
    path = tmp_path / "no-extended-resource.yaml"
    path.write_text(yaml.safe_dump(profile))
    catalog = load_catalog(SUITE_ROOT / "scenarios/requirements.yaml")
    gated = {r.id for r in catalog.requirements if "extended-resource" in r.capabilities}
    ext = {r.id for r in catalog.requirements if r.suite == "extended_resource"}

    start = time.monotonic()
    result = run_cli(
        kind_cluster.name,
        tmp_path / "report",
        "--dra-skip-install",
        "scenarios/extended_resource",
        run_id=f"e2e-noext-{secrets.token_hex(3)}",
        profile=str(path),
        timeout=900,
    )
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(
            f"\nextended_resource suite without extended-resource: {time.monotonic() - start:.0f} s"
        )
    output = (result.stdout + result.stderr)[-6000:]
    assert "no such device kind" not in output, output
    summary_file = tmp_path / "report" / "summary.json"
    assert summary_file.is_file(), output
    ended = {r["id"]: r for r in json.loads(summary_file.read_text())["requirements"]}
    assert set(ended) >= ext, output
    for rid in gated:
        assert ended[rid]["status"] == "not-applicable", (rid, ended[rid], output)
        assert "does not declare capability extended-resource" in ended[rid]["reason"], ended[rid]
    assert ended["DRA-EXT-005"]["status"] == "passed", (ended["DRA-EXT-005"], output)
    failed = [rid for rid in ext if ended[rid]["status"] in ("failed", "error")]
    assert not failed, output
