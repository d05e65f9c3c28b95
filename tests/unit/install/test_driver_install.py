"""Pure parts of driver installation and of the `run` command line."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest
import yaml

from conformance.cli import app, driver_commands
from conformance.install.errors import InstallError
from conformance.install.manifests import manifest_files, render_manifests
from conformance.kube.readiness import ReadinessState
from conformance.model.profile import ManifestsInstall
from conformance.model.profile_parse import load_profile
from conformance.plugin.run_progress import RunProgress

FAKE_DEPLOY = Path(__file__).resolve().parents[3] / "drivers/fake/deploy"


def test_render_puts_dependencies_first_and_substitutes_the_image() -> None:
    files = manifest_files([FAKE_DEPLOY])
    docs = list(yaml.safe_load_all(render_manifests(files, "localhost/x:1")))
    kinds = [d["kind"] for d in docs]
    assert kinds[0] == "Namespace"
    assert kinds.index("ServiceAccount") < kinds.index("DaemonSet")
    assert kinds.index("ConfigMap") < kinds.index("DaemonSet")
    [ds] = [d for d in docs if d["kind"] == "DaemonSet"]
    assert ds["spec"]["template"]["spec"]["containers"][0]["image"] == "localhost/x:1"
    assert "IMAGE_PLACEHOLDER" not in yaml.safe_dump_all(docs)


def test_placeholder_without_image_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "ds.yaml").write_text("kind: DaemonSet\nimage: IMAGE_PLACEHOLDER\n")
    with pytest.raises(InstallError, match="install.image"):
        render_manifests([tmp_path / "ds.yaml"], None)


def test_missing_manifest_path_and_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(InstallError, match="does not exist"):
        manifest_files([tmp_path / "nope"])
    with pytest.raises(InstallError, match="no manifest files"):
        manifest_files([tmp_path])


def test_invalid_yaml_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: [unclosed\n")
    with pytest.raises(InstallError, match="bad.yaml is not valid YAML"):
        render_manifests([bad], None)


def test_readiness_state_explains_what_is_missing() -> None:
    state = ReadinessState("1/2 ready, 2/2 updated", {"w1": 1}, ("w2",))
    assert not state.ready
    assert str(state) == (
        "daemonset: 1/2 ready, 2/2 updated; slices per node: w1=1; nodes without enough slices: w2"
    )
    assert ReadinessState("ready", {"w1": 1, "w2": 2}, ()).ready


def _run_args(*argv: str) -> argparse.Namespace:
    return app.parse_args(app.build_parser([driver_commands.add_run_command]), ["run", *argv])


def test_run_passes_unknown_options_and_paths_to_pytest(tmp_path: Path) -> None:
    args = _run_args(
        "--profile", "p.yaml", "-n", "4", "--dra-verdict-scope", "core", "scenarios/core"
    )
    argv = driver_commands.pytest_arguments(args, "r1", tmp_path)
    assert argv[-3:] == ["--dra-verdict-scope", "core", "scenarios/core"]
    assert argv[argv.index("-n") : argv.index("-n") + 2] == ["-n", "4"]
    assert "--dra-run-id" in argv and "r1" in argv


def test_run_defaults_to_every_suite_serially(tmp_path: Path) -> None:
    argv = driver_commands.pytest_arguments(_run_args("--profile", "p.yaml"), "r1", tmp_path)
    assert argv[-1] == str(driver_commands.SCENARIOS)
    assert "-n" not in argv


def test_unknown_option_outside_run_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        app.main(["cluster", "status", "--bogus"])
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_run_with_invalid_profile_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "p.yaml"
    bad.write_text("kind: DriverProfile\n")
    assert app.main(["run", "--profile", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "apiVersion: required field is missing" in err and "docs/profile.md" in err


def test_fake_profile_is_valid_for_the_installer() -> None:
    profile = load_profile(FAKE_DEPLOY.parent / "profile.yaml")
    assert isinstance(profile.install, ManifestsInstall)
    assert profile.install.image is not None and profile.install.image.builder == "fake-driver"


class _Report:
    def __init__(self, nodeid: str, when: str, passed: bool = True, req: str = "R-1") -> None:
        self.nodeid, self.when, self.passed = nodeid, when, passed
        self.user_properties: list = []
        self.dra_stamp = {"requirement": req}


def test_progress_counts_finished_tests_and_requirements() -> None:
    out = io.StringIO()
    progress = RunProgress(out)
    progress.total_tests = 2
    progress.pytest_runtest_logstart("a", None)
    progress.pytest_runtest_logstart("b", None)
    progress.pytest_runtest_logreport(_Report("a", "call"))
    assert out.getvalue() == ""  # not finished before teardown
    progress.pytest_runtest_logreport(_Report("a", "teardown"))
    progress.pytest_runtest_logreport(_Report("b", "setup", passed=False, req="R-2"))
    lines = out.getvalue().splitlines()
    assert "1/2 tests, requirements reached 1; finished a" in lines[0]
    assert "running b" in lines[0]
    assert "2/2 tests, requirements reached 2; finished b" in lines[1]


def test_where_a_driver_image_comes_from_without_asking_docker() -> None:
    from pathlib import Path

    from conformance.install.image import check_image_obtainable, image_source
    from conformance.model.profile import ImageSpec

    assert image_source(ImageSpec(None, builder="fake-driver")) == "built"
    assert image_source(ImageSpec("x:1", build_context=Path("/src"))) == "built"
    assert image_source(ImageSpec("x:1", load=False)) == "nodes"  # the nodes pull it
    assert image_source(ImageSpec("x:1")) is None  # the local engine must have or pull it
    check_image_obtainable(None)  # no image: nothing to check, no Docker asked
    check_image_obtainable(ImageSpec("registry.invalid/x:1", load=False))
