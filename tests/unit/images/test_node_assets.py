"""The node image's shell scripts parse: a syntax error would only show as nodes that never
become Ready (no pod network), minutes into a cluster's creation."""

from __future__ import annotations

import subprocess
from importlib import resources

import pytest

from conformance.images.nodeimage import ASSETS

SCRIPTS = [name for name in ASSETS if name.endswith(".sh")]


def test_the_assets_include_the_pod_network_script() -> None:
    assert "dra-cni.sh" in SCRIPTS


@pytest.mark.parametrize("name", SCRIPTS)
def test_script_parses(name: str) -> None:
    text = resources.files("conformance.images.assets").joinpath(name).read_text()
    result = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True)
    assert result.returncode == 0, f"{name}: {result.stderr}"
