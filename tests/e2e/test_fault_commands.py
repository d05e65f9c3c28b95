"""Faults through the `command` method on the real cluster: a profile of the fake driver whose
withdraw and unhealthy faults are commands run on the harness host (the fake driver's
`faultctl` CLI), not its python plug-in; and a fault command that fails.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from runs import run_cli

from conformance.model.profile import SUITE_ROOT, Profile

WITHDRAW = "DRA-LOSS-003"
UNHEALTHY = "DRA-LOSS-004"


def _log_and_run(log: Path, *faultctl: str) -> list[str]:
    """argv: note phase, kind and device in `log` (proof the command ran), then faultctl."""
    note = f'echo "$DRA_FAULT_PHASE $DRA_FAULT_KIND $DRA_NODE $DRA_DEVICE" >> {log}'
    ctl = " ".join([sys.executable, "-m", "fakedriver.client.faultctl", *faultctl])
    return ["sh", "-c", f"{note} && exec {ctl}"]


def command_profile(tmp_path: Path, faults: dict[str, Any]) -> Path:
    """drivers/fake/profile.yaml with `faults` replaced, written to tmp_path (paths absolute)."""
    document = yaml.safe_load((SUITE_ROOT / "drivers/fake/profile.yaml").read_text())
    document["install"]["manifests"] = [str(SUITE_ROOT / "drivers/fake/deploy")]
    document["faults"] = {"taint": {"method": "device-taint-rule"}, **faults}
    path = tmp_path / "fake-command-faults.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def _run(cluster: Any, profile: Path, report: Path, *requirements: str, run_id: str) -> dict:
    selection = [arg for r in requirements for arg in ("--dra-requirement", r)]
    result = run_cli(
        cluster.name,
        report,
        "--dra-skip-install",
        *selection,
        run_id=f"{run_id}-{int(time.time())}",
        profile=str(profile),
        timeout=900,
    )
    summary_file = report / "summary.json"
    output = (result.stdout + result.stderr)[-6000:]
    assert summary_file.is_file(), output
    summary = json.loads(summary_file.read_text())
    summary["_output"] = output
    summary["_exit"] = result.returncode
    return summary


def _statuses(summary: dict) -> dict[str, tuple[str, str]]:
    return {r["id"]: (r["status"], r.get("reason") or "") for r in summary["requirements"]}


def test_withdraw_and_unhealthy_through_commands(kind_cluster, fake_driver: Profile, tmp_path):
    log = tmp_path / "faults.log"
    profile = command_profile(
        tmp_path,
        {
            "withdraw": {
                "method": "command",
                "command": _log_and_run(log, "withdraw"),
                "undo": _log_and_run(log, "restore"),
                "timeout": "90s",
            },
            "unhealthy": {
                "method": "command",
                "command": _log_and_run(log, "unhealthy"),
                "undo": _log_and_run(log, "healthy"),
                "timeout": "90s",
            },
        },
    )
    summary = _run(
        kind_cluster, profile, tmp_path / "report", WITHDRAW, UNHEALTHY, run_id="e2e-fault-cmd"
    )
    statuses = _statuses(summary)
    assert statuses[WITHDRAW][0] == "passed", (statuses, summary["_output"])
    assert statuses[UNHEALTHY][0] == "passed", (statuses, summary["_output"])
    assert summary["_exit"] == 0, summary["_output"]
    lines = log.read_text().splitlines()
    # LOSS-003 withdraws every device of one node and restores them; LOSS-004 marks one device
    # unhealthy and recovers it (the undo of the unhealthy command).
    phases = [tuple(line.split()[:2]) for line in lines]
    assert ("inject", "withdraw") in phases and ("undo", "withdraw") in phases, lines
    assert phases.count(("inject", "withdraw")) == phases.count(("undo", "withdraw")), lines
    assert phases.count(("inject", "unhealthy")) == 1, lines
    assert phases.count(("undo", "unhealthy")) == 1, lines
    assert all(len(line.split()) == 4 for line in lines), lines  # node and device were set


def test_a_failing_fault_command_is_an_error_and_is_undone(
    kind_cluster, fake_driver: Profile, tmp_path
):
    log = tmp_path / "faults.log"
    failing = ["sh", "-c", f'echo "inject $DRA_DEVICE" >> {log}; echo "no such device" >&2; exit 7']
    profile = command_profile(
        tmp_path,
        {
            "withdraw": {
                "method": "command",
                "command": failing,
                "undo": ["sh", "-c", f'echo "undo $DRA_DEVICE" >> {log}'],
            }
        },
    )
    summary = _run(kind_cluster, profile, tmp_path / "report", WITHDRAW, run_id="e2e-fault-fail")
    status, reason = _statuses(summary)[WITHDRAW]
    assert "fault withdraw: command ['sh', '-c'" in reason, reason
    assert "failed with exit code 7: no such device" in reason, reason
    lines = log.read_text().splitlines()
    [injected] = [line for line in lines if line.startswith("inject ")]
    assert f"undo {injected.split()[1]}" in lines, lines  # the undo ran although inject failed
    assert summary["verdict"] not in ("CONFORMANT", "PASSED-PARTIAL"), summary["verdict"]
    # The harness could not inject the fault: an error of the run, not a failure of the driver.
    assert status == "error", (status, reason)


def test_a_profile_without_a_withdraw_method_does_not_run_it(
    kind_cluster, fake_driver: Profile, tmp_path
):
    profile = command_profile(tmp_path, {})
    summary = _run(kind_cluster, profile, tmp_path / "report", WITHDRAW, run_id="e2e-fault-none")
    requirement = next(r for r in summary["requirements"] if r["id"] == WITHDRAW)
    assert requirement["status"] == "not-run", requirement
    # "<test node id>: <reason>"
    assert requirement["reason"].endswith(": the profile has no fault method for withdraw"), (
        requirement
    )
    assert requirement["remedy"].startswith("give the profile a fault method for withdraw "), (
        requirement
    )
    assert summary["verdict"] == "INCOMPLETE" and summary["_exit"] == 3, summary["_output"]


def test_exec_method_runs_in_the_driver_pod_of_the_node(k8s, fake_driver: Profile, tmp_path):
    """ExecInjector on the real API server: the command runs in the kubelet-plugin pod of the
    fault's node, its undo too, and a failing or missing command is a FaultCommandError."""
    from conformance.faults import DeviceRef, FaultCommandError, FaultContext, FaultKind
    from conformance.faults.exec import ExecInjector
    from conformance.kube.daemonsets import daemonset_pods_on_node
    from conformance.kube.podexec import exec_in_container
    from conformance.kube.readiness import selected_nodes
    from conformance.model.fault_config import FaultSpec

    node = selected_nodes(k8s, fake_driver)[0]
    readiness = fake_driver.readiness
    [pod] = daemonset_pods_on_node(
        k8s, readiness.daemonset_namespace, readiness.daemonset_name, node
    )
    marker = f"/tmp/e2e-fault-{int(time.time())}"

    def read() -> str:
        script = f"import os; print(open('{marker}').read() if os.path.exists('{marker}') else '-')"
        return exec_in_container(
            k8s,
            readiness.daemonset_namespace,
            pod["metadata"]["name"],
            pod["spec"]["containers"][0]["name"],
            ["python3", "-c", script],
        ).strip()

    def injector(command: list[str], undo: list[str] = ()) -> ExecInjector:
        kind = FaultKind.WITHDRAW
        return ExecInjector(
            FaultSpec(kind, "exec", tuple(command), tuple(undo), timeout=30),
            FaultContext(
                kind=kind,
                driver=fake_driver.driver,
                run_id="e2e-exec",
                timeout=30,
                api_client=k8s.api_client,
                driver_namespace=readiness.daemonset_namespace,
                driver_daemonset=readiness.daemonset_name,
            ),
        )

    device = DeviceRef(fake_driver.driver, node, "dev-x", node)
    write = ["python3", "-c", f"open('{marker}', 'w').write('{{kind}} {{device}}@{{node}}')"]
    with injector(write, ["python3", "-c", f"import os; os.remove('{marker}')"]) as exec_faults:
        exec_faults.withdraw(device)
        assert read() == f"withdraw dev-x@{node}"
    assert read() == "-"  # the undo ran in the same pod

    with pytest.raises(FaultCommandError) as err:
        injector(["python3", "-c", "import sys; print('bad device'); sys.exit(4)"]).withdraw(device)
    assert f"failed with exit code 4 in pod {readiness.daemonset_namespace}/" in str(err.value)
    assert str(err.value).endswith("bad device"), err.value
    with pytest.raises(FaultCommandError, match=r"^fault withdraw: command \['/no/such/tool'\]"):
        injector(["/no/such/tool"]).withdraw(device)
