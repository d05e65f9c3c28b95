"""`dra-conformance profile check`: exit 1 for a profile with problems, 2 when there is
nothing to check."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conformance.cli import app
from conformance.model.profile import SUITE_ROOT


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


# --- selectors: compiled and matched by the scheduler's CEL code (the real helper) ---------

FAKE = "fake.dra-conformance.io"
MODEL = f'device.attributes["{FAKE}"].model'
SLICES = SUITE_ROOT / "tests/cel_differential/slices/kind-v1.37.2.yaml"


def _profile(tmp_path: Path, **selectors: str) -> Path:
    """The fake driver's profile with other selectors (its manifests where they are)."""
    document = yaml.safe_load((SUITE_ROOT / "drivers/fake/profile.yaml").read_text())
    document["install"]["manifests"] = [str(SUITE_ROOT / "drivers/fake/deploy")]
    for name, expression in selectors.items():
        document["selectors"][name]["expression"] = expression
    path = tmp_path / "profile.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def test_offline_a_selector_that_does_not_compile_is_named_with_its_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = _profile(tmp_path, large=f'{MODEL} === "fa-80"')
    assert app.main(["profile", "check", str(profile), "--offline"]) == 1
    out = capsys.readouterr().out
    assert (
        "error: selectors.large.expression: the API server would reject it (line 1, column 54): "
        "compilation failed: ERROR: <input>:1:54: Syntax error: token recognition error at: '= '"
    ) in out


def test_slices_names_the_devices_two_selectors_share(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = _profile(tmp_path, large=f'{MODEL}.startsWith("fa-")')
    assert app.main(["profile", "check", str(profile), "--slices", str(SLICES)]) == 1
    out = capsys.readouterr().out
    assert (
        "error: selectors.small: selectors large and small both match 4 device(s): "
        "dra-c-worker2/fa24-0, dra-c-worker2/fa24-1, dra-c-worker2/fa24-2, dra-c-worker2/fa24-3; "
        "selectors must pick disjoint kinds of device"
    ) in out


def test_slices_a_selector_that_matches_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = _profile(tmp_path, fpga=f'{MODEL}.endsWith("-99")')
    assert app.main(["profile", "check", str(profile), "--slices", str(SLICES)]) == 1
    assert (
        "error: selectors.fpga: matches none of the 13 published devices (with the selectors of "
        f"DeviceClass fpga.{FAKE})"
    ) in capsys.readouterr().out


def test_slices_the_fake_profile_is_clean(capsys: pytest.CaptureFixture[str]) -> None:
    profile = str(SUITE_ROOT / "drivers/fake/profile.yaml")
    assert app.main(["profile", "check", profile, "--slices", str(SLICES)]) == 0
    assert "error" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("kind: List\nitems: []\n", "holds no ResourceSlice"),
        ("a: [b\n", "is not YAML"),
        ("kind: ResourceSlice\nspec: {driver: x}\n", "ResourceSlice ? has no spec.pool"),
    ],
)
def test_a_bad_slices_file_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, message: str
) -> None:
    dump = tmp_path / "slices.yaml"
    if content is not None:
        dump.write_text(content)
    profile = str(SUITE_ROOT / "drivers/fake/profile.yaml")
    assert app.main(["profile", "check", profile, "--slices", str(dump)]) == 2
    err = capsys.readouterr().err
    assert f"--slices {dump}" in err and message in err
    assert "kubectl get resourceslices -o yaml" in err
