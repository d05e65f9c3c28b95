"""The plugin minds its own business: another project's tests, markers and options work with it
installed, and without `--dra-profile` it does nothing a run would notice (pytester, no cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

FOREIGN_TESTS = """
import signal

import pytest


@pytest.mark.requirement("REQ-42")
def test_their_requirement(request, sigterm_before):
    assert request.node.get_closest_marker("requirement").args == ("REQ-42",)
    assert request.node.user_properties == []
    manager = request.config.pluginmanager
    assert manager.has_plugin("conformance.plugin")  # loaded, yet:
    for name in ("dra_conformance_interrupt", "dra_conformance_xdist", "dra-report-collector"):
        assert not manager.has_plugin(name), name
    assert signal.getsignal(signal.SIGTERM) is sigterm_before


@pytest.mark.requirement("REQ-43")
def test_another(request):
    assert request.node.get_closest_marker("requirement").args == ("REQ-43",)
"""
FOREIGN_CONFTEST = """
import signal

import pytest

BEFORE = signal.getsignal(signal.SIGTERM)  # imported before any session set-up


@pytest.fixture
def sigterm_before():
    return BEFORE
"""
# Another plugin with options of the same names as ours had before they were prefixed.
KUBE_PLUGIN = """

def pytest_addoption(parser):
    parser.addoption("--kubeconfig", default=None)
    parser.addoption("--context", default=None)


@pytest.fixture
def kubeconfig(request):
    return request.config.getoption("--kubeconfig"), request.config.getoption("--context")
"""
KUBE_TESTS = """
def test_uses_their_options(kubeconfig):
    assert kubeconfig == ("their.yaml", "theirs")
"""


@pytest.fixture
def foreign(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project of someone else's: its own `requirement` marker (strict) and a `scenarios/`
    folder that is not ours (no requirements catalog)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.delenv("DRA_REQUIREMENTS_FILE", raising=False)
    pytester.makeini("[pytest]\nmarkers =\n    requirement(id): our own requirement IDs\n")
    pytester.makeconftest(FOREIGN_CONFTEST)
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios/test_theirs.py").write_text(FOREIGN_TESTS)
    return pytester


def with_kube_plugin(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(FOREIGN_CONFTEST + KUBE_PLUGIN)
    pytester.makepyfile(test_kube=KUBE_TESTS)
    return pytester


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(
        "-p", "conformance.plugin", "-p", "no:cacheprovider", "--strict-markers", *args
    )


def test_a_project_with_its_own_requirement_marker_passes(foreign: pytest.Pytester) -> None:
    result = _run(foreign)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=2)
    assert "dra-conformance" not in result.stdout.str() + result.stderr.str()


def test_another_plugin_defining_kubeconfig_and_context_works(foreign: pytest.Pytester) -> None:
    result = _run(with_kube_plugin(foreign), "--kubeconfig", "their.yaml", "--context", "theirs")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=3)


def _entries(path: Path) -> list[str]:
    # Python's bytecode cache (written unless PYTHONDONTWRITEBYTECODE is set) is not ours
    return sorted(p.name for p in path.iterdir() if p.name != "__pycache__")


def test_inert_without_a_profile_leaves_no_trace(foreign: pytest.Pytester) -> None:
    before = _entries(foreign.path)
    result = _run(foreign, "--junitxml", "junit.xml")
    result.assert_outcomes(passed=2)
    after = _entries(foreign.path)
    assert after == sorted([*before, "junit.xml"])  # no reports/, no lease or harness dir
    assert "<property" not in (foreign.path / "junit.xml").read_text()  # no requirement stamps


def test_inert_under_xdist(foreign: pytest.Pytester) -> None:
    result = _run(
        with_kube_plugin(foreign),
        "-p",
        "xdist.plugin",
        "-n",
        "2",
        "--kubeconfig",
        "their.yaml",
        "--context",
        "theirs",
    )
    result.assert_outcomes(passed=3)
    assert not (foreign.path / "reports").exists()
    assert "dra-conformance" not in result.stdout.str()


def test_the_harness_options_are_all_prefixed(foreign: pytest.Pytester) -> None:
    result = _run(foreign, "--help")
    assert result.ret == pytest.ExitCode.OK
    text = result.stdout.str()
    section = text[text.index("DRA conformance:") :].split("\n\n")[0]
    flags = [w.rstrip(",=") for w in section.split() if w.startswith("--")]
    assert flags and all(f.startswith("--dra-") for f in flags), flags
