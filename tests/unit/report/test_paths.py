"""Local paths made portable for published reports: suite root, working directory, home."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.report import paths
from conformance.report.paths import portable, portable_path


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A home holding the suite's checkout, and a working directory elsewhere in the home."""
    home = tmp_path / "home" / "me"
    suite = home / "src" / "dra"
    work = home / "work"
    for d in (suite, work):
        d.mkdir(parents=True)
    monkeypatch.setattr(paths, "SUITE_ROOT", suite)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    return {"home": home, "suite": suite, "work": work}


def test_a_path_under_the_suite_root_becomes_relative_to_it(machine: dict[str, Path]) -> None:
    suite = machine["suite"]
    assert portable_path(suite / "drivers/fake/profile.yaml") == "drivers/fake/profile.yaml"
    assert portable_path(str(suite)) == "."


def test_a_path_under_the_working_directory_becomes_relative(machine: dict[str, Path]) -> None:
    assert portable_path(str(machine["work"] / "reports/run-1")) == "reports/run-1"


def test_a_path_elsewhere_in_the_home_starts_with_a_tilde(machine: dict[str, Path]) -> None:
    assert portable_path(str(machine["home"] / "profiles/my driver.yaml")) == (
        "~/profiles/my driver.yaml"
    )
    assert portable_path(str(machine["home"])) == "~"


def test_other_paths_and_relative_ones_stay_as_they_are(machine: dict[str, Path]) -> None:
    assert portable_path("/etc/kubernetes/admin.conf") == "/etc/kubernetes/admin.conf"
    assert portable_path("drivers/fake/profile.yaml") == "drivers/fake/profile.yaml"
    assert portable_path("") == ""
    # a sibling whose name starts like a root is not under it
    sibling = str(machine["suite"]) + "-old/profile.yaml"
    assert portable_path(sibling) == "~/src/dra-old/profile.yaml"


def test_the_suite_root_wins_over_the_working_directory_inside_it(
    machine: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    inside = machine["suite"] / "scenarios"
    inside.mkdir()
    monkeypatch.chdir(inside)
    assert portable_path(str(inside / "core")) == "scenarios/core"


def test_paths_inside_text_are_rewritten_wherever_a_path_starts(
    machine: dict[str, Path],
) -> None:
    suite, work, home = (str(machine[k]) for k in ("suite", "work", "home"))
    text = (
        f"--rootdir={suite} --junitxml {work}/reports/r/junit.xml "
        f"-p {home}/plugins/x.py PYTHONPATH=/opt/lib:{suite}/drivers "
        f'{{"profile": "{suite}/drivers/fake/profile.yaml"}}'
    )
    assert portable(text) == (
        "--rootdir=. --junitxml reports/r/junit.xml -p ~/plugins/x.py "
        'PYTHONPATH=/opt/lib:drivers {"profile": "drivers/fake/profile.yaml"}'
    )


def test_text_that_only_looks_like_a_root_is_left_alone(machine: dict[str, Path]) -> None:
    suite = str(machine["suite"])
    assert portable("no paths here") == "no paths here"
    assert portable("") == ""
    assert portable(f"/mnt{suite}/x") == f"/mnt{suite}/x"  # another path containing it
    assert portable(f"https://example.com{suite}/x") == f"https://example.com{suite}/x"
    assert portable(f"file://{suite}/x") == f"file://{suite}/x"
    assert portable(f"{suite}-old/x") == "~/src/dra-old/x"  # a sibling: only the home matches


def test_symlinked_roots_are_recognised_in_both_forms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = tmp_path / "real" / "dra"
    real.mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    monkeypatch.setattr(paths, "SUITE_ROOT", link)
    monkeypatch.setenv("HOME", str(tmp_path / "nohome"))
    monkeypatch.chdir(tmp_path)
    assert portable_path(str(real / "x.yaml")) == "x.yaml"
    assert portable_path(str(link / "x.yaml")) == "x.yaml"
    assert portable(f"{real}/a {link}/b") == "a b"


def test_the_filesystem_root_as_working_directory_rewrites_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(paths, "SUITE_ROOT", tmp_path / "suite")
    monkeypatch.setenv("HOME", "/")
    monkeypatch.chdir("/")
    assert portable("/etc/hosts and /var/log") == "/etc/hosts and /var/log"
    assert portable_path("/etc/hosts") == "/etc/hosts"
