"""`gate --rehearse`: which cluster each run goes to and in what order. The rehearsal upgrades
the --from cluster its run kept, before the --to run; that cluster never outlives the gate.
The runs themselves are replaced by a recorder that writes a summary, as a run would."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from conformance.cli import gate_command
from conformance.errors import ConformanceError
from unit.report.test_gate import summary

FROM, TO = "v1.36.3", "v1.37.2"


def _args(tmp_path: Path, rehearse: bool, to_profile: str | None = None) -> argparse.Namespace:
    return argparse.Namespace(
        profile="drivers/fake/profile.yaml",
        to_profile=to_profile,
        from_version=FROM,
        to_version=TO,
        rehearse=rehearse,
        baseline=None,
        workers="2",
        report_dir=tmp_path / "gate",
        allow_disruptive=False,
        pytest_args=["scenarios/core"],
        latency_threshold=50.0,
        latency_min_samples=5,
    )


class Recorder:
    def __init__(self, fail_at: int | None = None) -> None:
        self.runs: list[list[str]] = []
        self.profiles: list[str | None] = []
        self.deleted: list[str] = []
        self.fail_at = fail_at

    def run(self, args, report_dir: Path, cluster: list[str], **kwargs) -> Path:
        self.runs.append(cluster)
        self.profiles.append(kwargs.get("profile"))
        if len(self.runs) == self.fail_at:
            raise ConformanceError("the run wrote no summary", "see its output")
        if "--dra-upgrade-to" in cluster:
            document = summary(FROM, {"DRA-UPG-001": "passed"}, scope=["DRA-UPG-001"])
        else:
            version = cluster[cluster.index("--k8s") + 1]
            document = summary(version, {"DRA-CORE-001": "passed"})
        report_dir.mkdir(parents=True)
        (report_dir / "summary.json").write_text(json.dumps(document))
        return report_dir / "summary.json"

    def delete(self, name: str, version: str) -> None:
        self.deleted.append(name)


def _option(cluster: list[str], name: str) -> str:
    return cluster[cluster.index(name) + 1]


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    recorder = Recorder()
    monkeypatch.setattr(gate_command, "_run", recorder.run)
    monkeypatch.setattr(gate_command, "_delete_kind_cluster", recorder.delete)
    return recorder


def test_the_rehearsal_upgrades_the_from_cluster_before_the_to_run(
    recorder: Recorder, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gate_command._gate(_args(tmp_path, rehearse=True)) == 0
    first, rehearsal, last = recorder.runs
    assert (_option(first, "--k8s"), _option(first, "--keep-cluster")) == (FROM, "yes")
    assert _option(rehearsal, "--name") == _option(first, "--name")
    assert (_option(rehearsal, "--k8s"), _option(rehearsal, "--dra-upgrade-to")) == (FROM, TO)
    assert _option(rehearsal, "--keep-cluster") == "no"
    assert (_option(last, "--k8s"), _option(last, "--keep-cluster")) == (TO, "no")
    assert _option(last, "--name") != _option(first, "--name")
    assert recorder.deleted == [_option(first, "--name")]  # whatever the rehearsal left
    document = json.loads((tmp_path / "gate" / "gate.json").read_text())
    assert document["passed"] is True
    assert document["rehearsal"]["requirements"] == {"DRA-UPG-001": "passed"}


def test_without_rehearse_no_cluster_is_kept(recorder: Recorder, tmp_path: Path) -> None:
    assert gate_command._gate(_args(tmp_path, rehearse=False)) == 0
    assert [_option(c, "--keep-cluster") for c in recorder.runs] == ["no", "no"]
    assert [_option(c, "--k8s") for c in recorder.runs] == [FROM, TO]
    assert recorder.deleted == []


def test_a_from_run_without_summary_leaves_no_cluster(recorder: Recorder, tmp_path: Path) -> None:
    recorder.fail_at = 1
    with pytest.raises(ConformanceError):
        gate_command._gate(_args(tmp_path, rehearse=True))
    assert len(recorder.runs) == 1
    assert recorder.deleted == [_option(recorder.runs[0], "--name")]


def test_the_to_profile_goes_to_the_to_run_only(recorder: Recorder, tmp_path: Path) -> None:
    slow = "drivers/fake/profile-slow-prepare.yaml"
    assert gate_command._gate(_args(tmp_path, rehearse=True, to_profile=slow)) == 0
    assert recorder.profiles == [None, None, slow]  # --from run, rehearsal: --profile


def test_a_to_profile_needs_to_and_the_same_driver(tmp_path: Path) -> None:
    args = _args(tmp_path, rehearse=False, to_profile="drivers/fake/profile-slow-prepare.yaml")
    args.from_version = args.to_version = None
    args.baseline = tmp_path
    with pytest.raises(ConformanceError, match="--to-profile is the profile of the --to run"):
        gate_command._check(args)
    other = "docs/examples/k8s-test-driver/profile.yaml"
    with pytest.raises(ConformanceError, match=r"is for driver fake\.dra-conformance\.io, --to-"):
        gate_command._check(_args(tmp_path, rehearse=False, to_profile=other))
