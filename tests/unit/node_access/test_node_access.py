"""The run's node access (conformance.node_access): which way in does what on which cluster,
the one message an unavailable operation gives (and the not-run it becomes in a scenario), and
the profile's `nodeCommands` way, run for real on this host."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from conformance.model.node_commands import NodeCommands
from conformance.model.outcome import NotRun
from conformance.model.profile_parse import load_profile
from conformance.node_access import (
    NodeAccess,
    NodeOperationUnavailable,
    Operation,
    not_run_unless_available,
)
from conformance.node_access.chain import FirstAvailable
from conformance.node_access.choose import choose_node_access
from conformance.node_access.commands import ProfileNodeCommands
from conformance.node_access.kind import KindNodeContainers
from conformance.node_access.pod import PrivilegedPods, exit_code, privileged_pod
from conformance.run.context import ClusterInfo

ROOT = Path(__file__).resolve().parents[3]
KIND = ClusterInfo("kind", "dra-x", "/k", None, True, {"dra-x-worker": "dra-x-worker"})
EXISTING = ClusterInfo("existing", "staging", "/k", None, False)


def access(cluster: ClusterInfo, commands: NodeCommands | None = None) -> FirstAvailable:
    profile = dataclasses.replace(
        load_profile(ROOT / "drivers/fake/profile.yaml"), node_commands=commands or NodeCommands()
    )
    chosen = choose_node_access(
        cluster, profile, clients=_no_clients, workload_image="busybox", run_id="r1"
    )
    assert isinstance(chosen, FirstAvailable)
    return chosen


def _no_clients() -> None:
    raise AssertionError("choosing must not connect to the cluster")


def way(chosen: FirstAvailable, op: Operation, node: str = "dra-x-worker") -> type | None:
    found = chosen.way(op, node)
    return type(found) if found else None


def test_kind_cluster_of_the_harness_uses_its_node_containers() -> None:
    chosen = access(KIND)
    for op in Operation:
        assert way(chosen, op) is KindNodeContainers, op
    assert chosen.how(Operation.RESTART_KUBELET, "dra-x-worker") == "systemctl restart kubelet"
    assert "restart of kind node container" in chosen.how(Operation.RESTART_NODE, "dra-x-worker")
    # A node the cluster has no container for is refused, naming it.
    with pytest.raises(NodeOperationUnavailable, match="no node container for node other"):
        chosen.require(Operation.RESTART_KUBELET, "other")


def test_profile_commands_win_where_given() -> None:
    chosen = access(KIND, NodeCommands(restart_kubelet=("ssh", "{node}", "restart")))
    assert way(chosen, Operation.RESTART_KUBELET) is ProfileNodeCommands
    assert way(chosen, Operation.RESTART_NODE) is KindNodeContainers
    assert chosen.how(Operation.RESTART_KUBELET, "w1") == "ssh w1 restart"


def test_existing_cluster_without_commands_refuses_with_what_to_configure() -> None:
    chosen = access(EXISTING)
    with pytest.raises(NodeOperationUnavailable) as err:
        chosen.restart_kubelet("w1")
    problem, remedy = err.value.problem, err.value.remedy
    assert problem.startswith("cannot restart the kubelet of node w1: ")
    assert "the profile names no nodeCommands.restartKubelet" in problem
    assert "this existing cluster has no kind node containers" in problem
    assert "does not allow privileged pods" in problem
    assert "nodeCommands.restartKubelet" in remedy and "nodeCommands.privilegedPod" in remedy
    # A reboot no privileged pod can do: its refusal is not mentioned.
    reboot = chosen.unavailable(Operation.RESTART_NODE, "w1")
    assert reboot is not None and "privileged" not in str(reboot)
    assert chosen.unavailable(Operation.UPGRADE, "*") is not None
    assert chosen.unavailable(Operation.HOST_PATH, "w1") is not None


def test_privileged_pods_where_the_profile_allows_them() -> None:
    chosen = access(EXISTING, NodeCommands(privileged_pod_namespace="node-ops"))
    assert way(chosen, Operation.RESTART_KUBELET, "w1") is PrivilegedPods
    assert way(chosen, Operation.RUN, "w1") is PrivilegedPods
    assert way(chosen, Operation.RESTART_NODE, "w1") is None
    assert way(chosen, Operation.UPGRADE, "*") is None


def test_a_scenario_turns_an_unavailable_operation_into_not_run() -> None:
    with pytest.raises(NotRun) as err, not_run_unless_available():
        access(EXISTING).require(Operation.RESTART_NODE, "w1")
    assert "cannot restart node w1" in str(err.value)
    assert "nodeCommands.restartNode" in err.value.remedy


def test_no_way_at_all_still_says_why() -> None:
    refused = FirstAvailable([]).unavailable(Operation.RUN, "w1")
    assert refused is not None and "no way to reach the nodes" in refused.problem


def commands_access(tmp_path: Path, **fields: tuple[str, ...]) -> NodeAccess:
    commands = NodeCommands(**fields)  # type: ignore[arg-type]
    return FirstAvailable([ProfileNodeCommands(commands, str(tmp_path / "kubeconfig"))])


def test_node_commands_exec_reads_files_and_lists_cdi_specs(tmp_path: Path) -> None:
    # `exec` is a prefix: here `env NODE_SEEN=<node>`, so the appended command runs locally.
    chosen = commands_access(tmp_path, exec=("env", "NODE_SEEN={node}"))
    (tmp_path / "etc-cdi").mkdir()
    (tmp_path / "run-cdi").mkdir()
    for name in ("etc-cdi/a.json", "etc-cdi/notes.txt", "run-cdi/b.yaml", "run-cdi/c.json"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "file").write_text("host file\n")
    assert chosen.read_host_file("w1", str(tmp_path / "file")) == "host file\n"
    dirs = [str(tmp_path / "etc-cdi"), str(tmp_path / "run-cdi"), str(tmp_path / "missing")]
    assert chosen.list_cdi_specs("w1", dirs) == [
        str(tmp_path / "etc-cdi/a.json"),
        str(tmp_path / "run-cdi/c.json"),
        str(tmp_path / "run-cdi/b.yaml"),
    ]
    assert "NODE_SEEN=w1" in chosen.run("w1", ["env"])


def test_node_commands_restart_runs_the_command_with_the_node(tmp_path: Path) -> None:
    out = tmp_path / "restarted"
    script = f"import os, sys; open({str(out)!r}, 'w').write(sys.argv[1] + os.environ['DRA_NODE'])"
    chosen = commands_access(tmp_path, restart_kubelet=(sys.executable, "-c", script, "{node}:"))
    chosen.restart_kubelet("w2")
    assert out.read_text() == "w2:w2"
    with pytest.raises(NodeOperationUnavailable, match="no nodeCommands.stopNode"):
        chosen.stop_node("w2")


def test_node_commands_failure_names_the_field(tmp_path: Path) -> None:
    chosen = commands_access(tmp_path, exec=(sys.executable, "-c", "import sys; sys.exit('no')"))
    with pytest.raises(RuntimeError, match=r"nodeCommands.exec .* exited 1: no"):
        chosen.read_host_file("w1", "/etc/hostname")


def test_privileged_pod_enters_the_host_namespaces_on_its_node() -> None:
    pod = privileged_pod("p", "node-ops", "w1", "busybox", ["cat", "/etc/hostname"], "r1")
    spec = pod["spec"]
    assert (spec["nodeName"], spec["hostPID"], spec["restartPolicy"]) == ("w1", True, "Never")
    [container] = spec["containers"]
    assert container["securityContext"] == {"privileged": True}
    assert container["command"][:3] == ["nsenter", "-t", "1"]
    assert container["command"][-3:] == ["--", "cat", "/etc/hostname"]
    assert pod["metadata"]["labels"] == {"dra-conformance.io/run": "r1"}
    done = {"status": {"containerStatuses": [{"state": {"terminated": {"exitCode": 3}}}]}}
    assert (exit_code(done), exit_code({"status": {}})) == (3, None)


def test_the_plugin_hands_the_node_access_to_scenarios() -> None:
    """Registered with the plugin's fixtures (what pytest loads from the entry point): the
    node_restart, node_drain, extended_resource and upgrade conftests ask for it by name."""
    import conformance.plugin as plugin
    from conformance.plugin import fixtures

    assert "node_access" in plugin.__all__
    assert plugin.node_access is fixtures.node_access
    for conftest in ("node_restart", "node_drain", "extended_resource", "upgrade"):
        assert (
            "node_access: NodeAccess" in (ROOT / "scenarios" / conftest / "conftest.py").read_text()
        )
