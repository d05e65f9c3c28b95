"""A report names the run's profile as its reader can find it: relative to the directory the
run was started in when the profile lies below it, else as given."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.faults.registry import missing_faults_remedy
from conformance.model.profile_parse import load_profile
from conformance.run.context import ClusterInfo, RunContext

FAKE_PROFILE = Path(__file__).parents[3] / "drivers" / "fake" / "profile.yaml"


def _context(tmp_path: Path) -> RunContext:
    return RunContext(
        run_id="r",
        run_dir=tmp_path,
        profile=load_profile(FAKE_PROFILE),
        cluster=ClusterInfo("kind", "c", "/k", None, True),
        git_version="v1.37.2",
        served_resources={},
        feature_gates=None,
        feature_gates_error=None,
        nodes=("w1",),
        devices=(),
        device_sets={},
        workload_image="w",
    )


def test_a_profile_below_the_run_directory_is_named_relative(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(FAKE_PROFILE.parents[2])
    assert _context(tmp_path).profile_source == "drivers/fake/profile.yaml"


def test_a_profile_elsewhere_keeps_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert _context(tmp_path).profile_source == str(FAKE_PROFILE)


def test_a_fault_remedy_names_the_profile_the_same_way(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FAKE_PROFILE.parents[2])
    profile = FAKE_PROFILE.parents[2] / "docs" / "examples" / "k8s-test-driver" / "profile.yaml"
    remedy = missing_faults_remedy(["withdraw"], load_profile(profile))
    assert "in docs/examples/k8s-test-driver/profile.yaml;" in remedy, remedy
