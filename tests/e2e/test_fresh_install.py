"""`pip install <checkout>` (no extras, no -e) into a fresh virtualenv gives a working
`dra-conformance` with the bundled fake driver: `driver install` and `run` work from
a directory outside the checkout, with nothing of the checkout on the path, so the scenarios,
the fake driver's sources, manifests and profile must come from what the install put there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import venv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import tenacity

from conformance.kube.client import K8sClients
from conformance.model.profile import Profile

ROOT = Path(__file__).resolve().parents[2]
PROFILE = "drivers/fake/profile.yaml"  # as the README gives it
REQUIREMENT = "DRA-CORE-001"
# Variables that would let the fresh venv see the dev install or this pytest session.
_LEAKY = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "PYTEST_")


@dataclass(frozen=True)
class FreshVenv:
    bin: Path
    site: Path  # site-packages
    work: Path  # the cwd of every command: outside the checkout
    env: dict[str, str]

    def run(self, *args: str, timeout: float) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(self.bin / "dra-conformance"), *args],
            cwd=self.work,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def _shown(result: subprocess.CompletedProcess) -> str:
    """The command, its exit code and its output's tail, for an assertion message."""
    output = (result.stdout + result.stderr)[-8000:]
    return f"\n$ {' '.join(map(str, result.args))}\nexit {result.returncode}\n{output}"


def _clean_env(venv_bin: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_LEAKY)}
    # Nothing of the dev venv (its tools, its dra-conformance) may stand in for the fresh one's.
    dev_bin = str(Path(sys.prefix) / "bin")
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != dev_bin]
    env["PATH"] = os.pathsep.join([str(venv_bin), *path])
    return env


@pytest.fixture(scope="module")
def fresh_venv(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> FreshVenv:
    base = tmp_path_factory.mktemp("fresh-install")
    (base / "work").mkdir()
    # A build directory of its own: setuptools copies into build/lib without removing what
    # was deleted from the source, so a stale build/ in the checkout could hide a lost module.
    (base / "setup.cfg").write_text(f"[build]\nbuild_base = {base / 'build'}\n")
    start = time.monotonic()
    venv.EnvBuilder(with_pip=True).create(base / "venv")
    bin_dir = base / "venv" / "bin"
    env = _clean_env(bin_dir) | {
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "DIST_EXTRA_CONFIG": str(base / "setup.cfg"),
    }
    pip = subprocess.run(
        # --no-compile: byte-compiling ~40 packages is most of the CPU time on a busy CI machine,
        # and says nothing about whether the install works
        [str(bin_dir / "python"), "-m", "pip", "install", "--no-compile", str(ROOT)],
        cwd=base / "work",
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    took = time.monotonic() - start
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:  # a figure for the CI log, not an assertion
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"\nfresh venv + pip install .: {took:.0f} s")
    assert pip.returncode == 0, _shown(pip)
    site = next((base / "venv" / "lib").glob("python3.*/site-packages"))
    return FreshVenv(bin=bin_dir, site=site, work=base / "work", env=env)


def _workers(k8s: K8sClients, profile: Profile) -> set[str]:
    nodes = k8s.core.list_node(label_selector=profile.node_selector).items
    return {n.metadata.name for n in nodes}


def _devices_by_node(k8s: K8sClients, profile: Profile) -> dict[str, set[str]]:
    slices = k8s.resource.list_resource_slice(field_selector=f"spec.driver={profile.driver}")
    by_node: dict[str, set[str]] = {}
    for s in slices.items:
        spec = k8s.to_dict(s)["spec"]
        devices = {f"{spec['pool']['name']}/{d['name']}" for d in spec.get("devices", [])}
        by_node.setdefault(spec.get("nodeName"), set()).update(devices)
    return by_node


def _daemonset_rolled_out(k8s: K8sClients, profile: Profile) -> dict[str, Any]:
    ds = k8s.apps.read_namespaced_daemon_set(
        profile.readiness.daemonset_name, profile.readiness.daemonset_namespace
    )
    status = k8s.to_dict(ds)["status"]
    desired = status["desiredNumberScheduled"]
    assert desired > 0, status
    assert status.get("observedGeneration") == ds.metadata.generation, status
    assert status.get("updatedNumberScheduled") == desired, status
    assert status.get("numberReady") == desired, status
    return status


def test_the_install_has_every_module_of_the_checkout(fresh_venv: FreshVenv) -> None:
    """A package missing from pyproject's list shows here by name, not as an ImportError later."""
    missing = []
    for source, installed in (
        (ROOT / "conformance", fresh_venv.site / "conformance"),
        (ROOT / "drivers/fake/fakedriver", fresh_venv.site / "fakedriver"),
    ):
        for py in source.rglob("*.py"):
            relative = py.relative_to(source)
            if relative.parts[0] != "_gen" and not (installed / relative).is_file():
                missing.append(str(py.relative_to(ROOT)))
    assert missing == [], f"not installed by `pip install .`: {missing}"


@pytest.fixture(scope="module")
def reinstalled(
    fresh_venv: FreshVenv, kind_cluster: Any, fake_driver: Profile, k8s: K8sClients
) -> dict[str, Any]:
    """`driver install` from the fresh venv over the fake driver the tier installed."""
    before = _devices_by_node(k8s, fake_driver)
    result = fresh_venv.run(
        "driver", "install", "--profile", PROFILE, "--name", kind_cluster.name, timeout=900
    )
    return {"before": before, "result": result}


def test_driver_install_from_the_fresh_venv(
    reinstalled: dict[str, Any], fake_driver: Profile, k8s: K8sClients
) -> None:
    result = reinstalled["result"]
    assert result.returncode == 0, _shown(result)
    assert f"{fake_driver.driver} ready" in result.stdout, _shown(result)
    workers = _workers(k8s, fake_driver)
    assert workers, "no node matches the profile's node selector"
    # Idempotent: the same devices on every selected node as before, the DaemonSet rolled out
    # (the image the fresh venv built may differ, so the pods may still be replaced).
    for attempt in tenacity.Retrying(
        stop=tenacity.stop_after_delay(120), wait=tenacity.wait_fixed(2), reraise=True
    ):
        with attempt:
            _daemonset_rolled_out(k8s, fake_driver)
            after = _devices_by_node(k8s, fake_driver)
            assert set(after) >= workers, (sorted(after), sorted(workers))
            assert after == reinstalled["before"], (after, reinstalled["before"])


def test_profile_check_against_the_cluster_from_the_fresh_venv(
    fresh_venv: FreshVenv, reinstalled: dict[str, Any], kind_cluster: Any
) -> None:
    result = fresh_venv.run("profile", "check", PROFILE, "--name", kind_cluster.name, timeout=300)
    assert result.returncode == 0, _shown(result)
    assert "valid (fake.dra-conformance.io" in result.stdout, _shown(result)


def test_run_one_requirement_from_the_fresh_venv(
    fresh_venv: FreshVenv,
    reinstalled: dict[str, Any],
    kind_cluster: Any,
    fake_driver: Profile,
    k8s: K8sClients,
) -> None:
    report = fresh_venv.work / "report"
    result = fresh_venv.run(
        "run", "--profile", PROFILE, "--name", kind_cluster.name, "--report-dir", str(report),
        "--run-id", f"e2e-fresh-{int(time.time())}", "--dra-requirement", REQUIREMENT,
        timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, _shown(result)
    # one requirement passed: a partial pass, not a certification
    assert "verdict PASSED (partial: 1 of " in result.stdout + result.stderr, _shown(result)
    summary = json.loads((report / "summary.json").read_text())
    assert (summary["verdict"], summary["exit_code"]) == ("PASSED-PARTIAL", 0), _shown(result)
    assert summary["verdict_basis"] in ("MUST", "selected"), summary["verdict_basis"]
    ran = {r["id"]: r["status"] for r in summary["requirements"] if r["status"] != "not-run"}
    assert ran == {REQUIREMENT: "passed"}, _shown(result)
    # What ran came from the install, not from the checkout the venv was made from: the suite
    # was checked against the installed package's RECORD, and nothing differs from it
    suite = summary["provenance"]["suite"]
    assert (suite["reference"], suite["clean"], suite["edited"]) == ("package record", True, [])
    assert summary["modified"] is False, summary["modified_reasons"]
    assert summary["driver"]["profile_path"] == "drivers/fake/profile.yaml"  # no local path
    # The driver is still working for the tests that follow.
    _daemonset_rolled_out(k8s, fake_driver)
    assert set(_devices_by_node(k8s, fake_driver)) >= _workers(k8s, fake_driver)
