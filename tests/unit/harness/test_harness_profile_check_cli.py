"""`dra-conformance profile check`: exit 1 for a profile with problems, 2 when there is
nothing to check."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.cli import app


def test_a_missing_file_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.yaml"
    assert app.main(["profile", "check", str(missing), "--offline"]) == 2
    assert f"profile {missing}: no such file" in capsys.readouterr().err


def test_a_profile_with_problems_is_a_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("driver: {name: x}\n")
    assert app.main(["profile", "check", str(bad), "--offline"]) == 1
    assert "apiVersion: required field is missing" in capsys.readouterr().err
