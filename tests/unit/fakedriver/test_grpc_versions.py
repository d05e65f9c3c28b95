"""The fake driver's stubs are generated on the host by the grpcio-tools pyproject pins, and they
refuse to import under a grpcio older than that generator; the image carries the grpcio of
drivers/fake/image-requirements.txt. A generator newer than the image's grpcio makes every
plugin pod crash at start, so the pins must keep that order."""

from __future__ import annotations

import tomllib

from packaging.requirements import Requirement
from packaging.version import Version

from conformance.suite_root import SUITE_ROOT


def _pinned(requirements: list[str], name: str) -> Version:
    for line in requirements:
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        requirement = Requirement(line)
        if requirement.name == name:
            [spec] = list(requirement.specifier)
            assert spec.operator == "==", f"{name} must be pinned with ==, not {spec}"
            return Version(spec.version)
    raise AssertionError(f"{name} is not pinned")


def test_the_stub_generator_is_no_newer_than_the_image_grpcio() -> None:
    project = tomllib.loads((SUITE_ROOT / "pyproject.toml").read_text())
    tools = _pinned(project["project"]["dependencies"], "grpcio-tools")
    image = (SUITE_ROOT / "drivers/fake/image-requirements.txt").read_text().splitlines()
    assert tools <= _pinned(image, "grpcio"), (tools, _pinned(image, "grpcio"))
