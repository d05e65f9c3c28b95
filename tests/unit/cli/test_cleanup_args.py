"""`dra-conformance cleanup` undoes faults through a profile's injectors only: without
`--profile`, the bundled driver's profile, whose methods reach that driver's control channel."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from conformance.cli.cleanup import add_cleanup_command
from conformance.model.fault_config import FaultKind
from conformance.model.profile_parse import load_profile


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_cleanup_command(parser.add_subparsers())
    return parser.parse_args(["cleanup", *argv])


def test_without_a_profile_the_bundled_profile_names_the_fault_methods(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)  # outside a checkout too: the suite's own file
    args = _parse("--all")
    assert Path(args.profile).is_file(), args.profile
    faults = load_profile(args.profile).faults
    swept = {kind for kind, spec in faults.specs.items() if spec.method == "python"}
    assert {FaultKind.WITHDRAW, FaultKind.UNHEALTHY, FaultKind.FAIL_PREPARE} <= swept


def test_a_profile_given_is_the_one_used(tmp_path: Path) -> None:
    mine = tmp_path / "vendor.yaml"
    mine.write_text("driver: x.example.com\n")
    assert _parse("--run-id", "r1", "--profile", str(mine)).profile == str(mine)
