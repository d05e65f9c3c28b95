"""`run` finds that the profile's driver image cannot be had before it makes a cluster: one
line, exit 2, in seconds, and no kind node exists afterwards."""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import yaml
from runs import run_cli

from conformance import docker_client
from conformance.model.profile import SUITE_ROOT

MISSING = "localhost/dra-conformance/no-such-driver:missing"


def _profile(tmp_path: Path) -> Path:
    profile = yaml.safe_load((SUITE_ROOT / "drivers/fake/profile.yaml").read_text())
    profile["install"] = {
        "method": "manifests",
        "manifests": [str(SUITE_ROOT / "drivers/fake/deploy")],
        "image": {"ref": MISSING},  # no builder, no build: it must exist or be pullable
    }
    path = tmp_path / "profile.yaml"
    path.write_text(yaml.safe_dump(profile))
    return path


def test_a_missing_driver_image_stops_the_run_before_any_cluster(tmp_path: Path) -> None:
    name = f"dra-missing-image-{secrets.token_hex(3)}"
    started = time.monotonic()
    result = run_cli(
        name,
        tmp_path / "report",
        run_id="missing-image",
        profile=str(_profile(tmp_path)),
        timeout=300,
    )
    took = time.monotonic() - started
    assert result.returncode == 2, result.stderr
    error = [ln for ln in result.stderr.splitlines() if ln.startswith("dra-conformance: error:")]
    assert len(error) == 1, result.stderr
    assert f"the driver image {MISSING} is not in the local Docker engine" in error[0]
    assert "no build for it" in error[0] and "it cannot be pulled (" in error[0]
    assert "docker pull" in result.stderr and "install.image" in result.stderr
    nodes = docker_client.client().containers.list(
        all=True, filters={"label": f"io.x-k8s.kind.cluster={name}"}
    )
    assert nodes == []
    # Refused before any cluster: no node container, no creation started (the proof, not a
    # wall clock a loaded machine stretches).
    assert "kind create cluster" not in result.stderr, f"{took:.0f} s: {result.stderr[-2000:]}"
