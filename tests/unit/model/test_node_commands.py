"""The profile's `nodeCommands` (docs/profile.md): parsed into argv templates, every bad
field a one-line error naming it; and the runner's one-line errors."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.model.node_commands import NodeCommands
from conformance.model.profile import ProfileError
from conformance.model.profile_parse import load_profile
from conformance.node_access.commands import run_node_command

GOOD: dict[str, Any] = {
    "apiVersion": "dra-conformance.io/v1alpha1",
    "kind": "DriverProfile",
    "driver": "gpu.example.com",
    "deviceClasses": {"default": "gpu.example.com"},
    "install": {"method": "preinstalled"},
    "verification": {"method": "env", "nameRegex": "^GPU_", "value": "device"},
}


def load(tmp_path: Path, node_commands: Any) -> Any:
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump({**GOOD, "nodeCommands": node_commands}))
    return load_profile(path)


def test_default_is_no_command(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump(GOOD))
    assert load_profile(path).node_commands == NodeCommands()


def test_restart_kubelet_argv_and_timeout(tmp_path: Path) -> None:
    profile = load(
        tmp_path,
        {
            "restartKubelet": ["ssh", "{node}", "systemctl", "restart", "kubelet"],
            "restartNode": ["ssh", "{node}", "reboot"],
            "timeout": "2m",
        },
    )
    commands = profile.node_commands
    assert commands.timeout == 120.0
    assert commands.restart_node == ("ssh", "{node}", "reboot")
    assert commands.expand(commands.restart_kubelet, "w1", "/k") == [
        "ssh",
        "w1",
        "systemctl",
        "restart",
        "kubelet",
    ]


def test_exec_stop_start_and_privileged_pod(tmp_path: Path) -> None:
    commands = load(
        tmp_path,
        {
            "exec": ["ssh", "{node}", "--"],
            "stopNode": ["cloud", "stop", "{node}"],
            "startNode": ["cloud", "start", "{node}"],
            "privilegedPod": {},
        },
    ).node_commands
    assert commands.expand(commands.exec, "w1", "/k") == ["ssh", "w1", "--"]
    assert (commands.stop_node, commands.start_node) == (
        ("cloud", "stop", "{node}"),
        ("cloud", "start", "{node}"),
    )
    assert commands.privileged_pod_namespace == "kube-system"
    named = load(tmp_path, {"privilegedPod": {"namespace": "node-ops"}}).node_commands
    assert named.privileged_pod_namespace == "node-ops"
    assert load(tmp_path, {"exec": ["ssh"]}).node_commands.privileged_pod_namespace is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"privilegedPod": {"namespce": "x"}}, "nodeCommands.privilegedPod.namespce: unknown"),
        ({"privilegedPod": {"namespace": ""}}, "nodeCommands.privilegedPod.namespace: expected"),
        ({"exec": "ssh {node}"}, "nodeCommands.exec: expected a non-empty list"),
        ({"restartKubelet": "ssh node"}, "nodeCommands.restartKubelet: expected a non-empty list"),
        ({"restartKubelet": ["x", "{device}"]}, "unknown placeholder {device}"),
        ({"restartKubelet": ["x"], "timeout": "soon"}, "nodeCommands.timeout: expected a positive"),
        ({"restartKubelt": ["x"]}, "nodeCommands.restartKubelt: unknown field"),
    ],
)
def test_bad_node_commands(tmp_path: Path, value: Any, message: str) -> None:
    with pytest.raises(ProfileError) as err:
        load(tmp_path, value)
    assert message in str(err.value)


def test_runner_passes_node_in_environment_and_names_a_failing_command(tmp_path: Path) -> None:
    out = tmp_path / "node"
    script = f"import os; open({str(out)!r}, 'w').write(os.environ['DRA_NODE'])"
    run_node_command("restartKubelet", [sys.executable, "-c", script], "w1", "/k", 30)
    assert out.read_text() == "w1"
    fail = [sys.executable, "-c", "import sys; sys.exit('no route to w1')"]
    with pytest.raises(RuntimeError) as err:
        run_node_command("restartNode", fail, "w1", "/k", 30)
    assert "nodeCommands.restartNode" in str(err.value)
    assert "exited 1: no route to w1" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(RuntimeError, match="no executable 'no-such-tool-here'"):
        run_node_command("restartKubelet", ["no-such-tool-here"], "w1", "/k", 30)
