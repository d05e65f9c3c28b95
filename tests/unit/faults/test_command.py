"""The `command` fault method with real local processes, the python loader, and a separate
`faults.recover` (conformance.faults.command, .python, .registry)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from conformance.faults import (
    ENTRY_POINT_GROUP,
    DeviceRef,
    FaultCommandError,
    FaultContext,
    FaultError,
    FaultInjector,
    FaultKind,
    FaultNotSupported,
    InjectorBase,
    injector_for,
)
from conformance.faults.command import CommandInjector
from conformance.model.fault_config import FaultsConfig, FaultSpec
from conformance.model.frozen import FrozenMap

DEVICE = DeviceRef("gpu.example.com", "node-a", "gpu-3", "node-a")
LOG_ENV = (
    'echo "$DRA_FAULT_PHASE $DRA_FAULT_KIND $DRA_DRIVER $DRA_NODE $DRA_POOL $DRA_DEVICE '
    '$DRA_KUBECONFIG $DRA_FAIL_COUNT $DRA_RUN_ID" >> "$LOG"'
)


def context(kind: FaultKind, **extra: Any) -> FaultContext:
    return FaultContext(
        kind=kind, driver="gpu.example.com", run_id="r1", timeout=5, kubeconfig="/kc", **extra
    )


def spec(kind: FaultKind, command: list[str], undo: list[str] = (), **extra: Any) -> FaultSpec:
    return FaultSpec(kind, "command", tuple(command), tuple(undo), **extra)


def sh(script: str) -> list[str]:
    return ["sh", "-c", script]


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "log"
    monkeypatch.setenv("LOG", str(path))
    return path


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_command_gets_values_in_env_and_placeholders_and_undo_runs_on_exit(log: Path) -> None:
    kind = FaultKind.WITHDRAW
    injector = CommandInjector(
        spec(kind, sh(LOG_ENV + ' && echo "arg {device}@{node}" >> "$LOG"'), sh(LOG_ENV)),
        context(kind),
    )
    assert isinstance(injector, FaultInjector) and injector.supports(kind)
    with injector:
        injector.withdraw(DEVICE)
        assert lines(log) == [
            "inject withdraw gpu.example.com node-a node-a gpu-3 /kc  r1",
            "arg gpu-3@node-a",
        ]
        with pytest.raises(FaultNotSupported):
            injector.mark_unhealthy(DEVICE)
    assert lines(log)[-1] == "undo withdraw gpu.example.com node-a node-a gpu-3 /kc  r1"


def test_node_wide_fault_values(log: Path) -> None:
    kind = FaultKind.FAIL_PREPARE
    with CommandInjector(spec(kind, sh(LOG_ENV)), context(kind)) as injector:
        injector.fail_prepare("node-b", count=2)
        injector.fail_prepare("node-b")
    assert lines(log) == [
        "inject fail-prepare gpu.example.com node-b   /kc 2 r1",
        "inject fail-prepare gpu.example.com node-b   /kc  r1",
    ]


def test_fail_binding_names_the_device_and_the_count(log: Path) -> None:
    kind = FaultKind.FAIL_BINDING
    with CommandInjector(spec(kind, sh(LOG_ENV), sh(LOG_ENV)), context(kind)) as injector:
        injector.fail_binding(DEVICE)
        injector.fail_binding(DEVICE, count=None)
    assert lines(log) == [
        "inject fail-binding gpu.example.com node-a node-a gpu-3 /kc 1 r1",
        "inject fail-binding gpu.example.com node-a node-a gpu-3 /kc  r1",
        "undo fail-binding gpu.example.com node-a node-a gpu-3 /kc  r1",
        "undo fail-binding gpu.example.com node-a node-a gpu-3 /kc 1 r1",
    ]


def test_driver_taint_is_the_taint_operation_of_its_own_command(log: Path) -> None:
    kind = FaultKind.DRIVER_TAINT
    taint_log = sh(
        'echo "$DRA_FAULT_PHASE $DRA_FAULT_KIND $DRA_DEVICE {key}={value}:{effect}" >> $LOG'
    )
    with CommandInjector(spec(kind, taint_log, taint_log), context(kind)) as injector:
        injector.taint(DEVICE, "k.io/x", "v", effect="NoExecute")
        assert not injector.supports(FaultKind.TAINT)
    assert lines(log) == [
        "inject driver-taint gpu-3 k.io/x=v:NoExecute",
        "undo driver-taint gpu-3 k.io/x=v:NoExecute",
    ]


def test_a_failing_command_names_fault_and_command_and_its_undo_still_runs(log: Path) -> None:
    kind = FaultKind.WITHDRAW
    command = sh("echo half-done >> $LOG; echo 'no such device' >&2; exit 3")
    injector = CommandInjector(spec(kind, command, sh("echo undone >> $LOG")), context(kind))
    with pytest.raises(FaultCommandError) as err, injector:
        injector.withdraw(DEVICE)
    assert str(err.value) == (
        f"fault withdraw: command {command} failed with exit code 3: no such device"
    )
    assert "\n" not in str(err.value)
    assert lines(log) == ["half-done", "undone"]


def test_a_missing_command(log: Path) -> None:
    kind = FaultKind.WITHDRAW
    injector = CommandInjector(
        spec(kind, ["/nonexistent/withdraw-tool", "{device}"]), context(kind)
    )
    with pytest.raises(FaultCommandError) as err:
        injector.withdraw(DEVICE)
    assert str(err.value) == (
        "fault withdraw: command ['/nonexistent/withdraw-tool', 'gpu-3'] was not found: "
        "no executable '/nonexistent/withdraw-tool'"
    )


def test_a_command_that_times_out_and_an_undo_that_fails(log: Path) -> None:
    kind = FaultKind.UNHEALTHY
    injector = CommandInjector(
        spec(kind, ["sleep", "300"], sh("echo undo >> $LOG; exit 1"), timeout=0.3), context(kind)
    )
    with pytest.raises(FaultCommandError, match=r"^fault unhealthy: command \['sleep', '300'\] "):
        injector.mark_unhealthy(DEVICE)
    # The spec's timeout is the undo's too: 0.3 s may not start a shell on a loaded machine,
    # and this undo is to fail by its exit code, not time out.
    injector.spec = dataclasses.replace(injector.spec, timeout=60)
    with pytest.raises(FaultCommandError) as err:
        injector.restore()
    assert str(err.value) == (
        "fault unhealthy (undo): command ['sh', '-c', 'echo undo >> $LOG; exit 1'] failed "
        "with exit code 1"
    )
    assert lines(log) == ["undo"]
    injector.restore()  # an undo runs once, also when it failed
    assert lines(log) == ["undo"]


def test_timeout_message(log: Path) -> None:
    kind = FaultKind.WITHDRAW
    # a sleep no descheduling outlasts: it must time out, not end first
    injector = CommandInjector(spec(kind, ["sleep", "300"], timeout=0.2), context(kind))
    with pytest.raises(FaultCommandError) as err:
        injector.withdraw(DEVICE)
    assert str(err.value) == "fault withdraw: command ['sleep', '300'] timed out after 0.2s"


def test_recover_runs_the_unhealthy_undo_for_that_device_only(log: Path) -> None:
    kind = FaultKind.UNHEALTHY
    other = DeviceRef("gpu.example.com", "node-a", "gpu-4", "node-a")
    with CommandInjector(
        spec(kind, sh("echo bad $DRA_DEVICE >> $LOG"), sh("echo ok $DRA_DEVICE >> $LOG")),
        context(kind),
    ) as injector:
        injector.mark_unhealthy(DEVICE)
        injector.mark_unhealthy(other)
        injector.recover(DEVICE)
        assert lines(log) == ["bad gpu-3", "bad gpu-4", "ok gpu-3"]
    assert lines(log)[-1] == "ok gpu-4"


def test_separate_recover_method_recovers_what_unhealthy_marked(log: Path) -> None:
    faults = FaultsConfig(
        FrozenMap(
            {
                FaultKind.UNHEALTHY: spec(FaultKind.UNHEALTHY, sh("echo bad $DRA_DEVICE >> $LOG")),
                FaultKind.RECOVER: spec(
                    FaultKind.RECOVER, sh("echo $DRA_FAULT_KIND $DRA_DEVICE >> $LOG")
                ),
            }
        )
    )
    with injector_for(FaultKind.UNHEALTHY, faults, context(FaultKind.UNHEALTHY)) as injector:
        injector.mark_unhealthy(DEVICE)
        injector.mark_unhealthy(DeviceRef("d", "p", "gpu-4", "node-a"))
        injector.recover(DEVICE)
    assert lines(log) == ["bad gpu-3", "bad gpu-4", "recover gpu-3", "recover gpu-4"]


def test_no_method_for_a_kind() -> None:
    with pytest.raises(FaultNotSupported, match="no fault method for withdraw"):
        injector_for(FaultKind.WITHDRAW, FaultsConfig(), context(FaultKind.WITHDRAW))


# --- python method ----------------------------------------------------------------------------


class Recorder(InjectorBase):
    """A vendor's injector: records what it was asked to do."""

    kinds = frozenset({FaultKind.WITHDRAW})
    made: list[FaultContext] = []

    def __init__(self, context: FaultContext) -> None:
        self.made.append(context)
        self.withdrawn: list[DeviceRef] = []

    def withdraw(self, device: DeviceRef) -> None:
        self.withdrawn.append(device)

    def restore(self) -> None:
        self.withdrawn.clear()


def python_faults(entry_point: str, kind: FaultKind = FaultKind.WITHDRAW) -> FaultsConfig:
    return FaultsConfig(
        FrozenMap(
            {kind: FaultSpec(kind, "python", entry_point=entry_point, options=FrozenMap({"x": 1}))}
        )
    )


def test_python_entry_point_by_module_and_class() -> None:
    injector = injector_for(
        FaultKind.WITHDRAW,
        python_faults(f"{__name__}:Recorder"),
        context(FaultKind.WITHDRAW, options=FrozenMap({"x": 1})),
    )
    assert isinstance(injector, Recorder)
    injector.withdraw(DEVICE)
    assert injector.withdrawn == [DEVICE] and Recorder.made[-1].options == {"x": 1}


def test_python_entry_point_from_an_installed_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dist = tmp_path / "vendor_faults-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: vendor-faults\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nvendor = {__name__}:Recorder\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    injector = injector_for(
        FaultKind.WITHDRAW, python_faults("vendor"), context(FaultKind.WITHDRAW)
    )
    assert isinstance(injector, Recorder)
    with pytest.raises(FaultError, match=r"no entry point of that name .*\(vendor\)"):
        injector_for(FaultKind.WITHDRAW, python_faults("nvidia"), context(FaultKind.WITHDRAW))


@pytest.mark.parametrize(
    "entry_point,message",
    [
        (
            "no_such_vendor_module:Faults",
            "faults.withdraw.entryPoint 'no_such_vendor_module:Faults': cannot import module "
            "'no_such_vendor_module': No module named 'no_such_vendor_module'",
        ),
        (
            f"{__name__}:Missing",
            f"faults.withdraw.entryPoint '{__name__}:Missing': module '{__name__}' has no "
            "'Missing'",
        ),
        (
            f"{__name__}:DEVICE",
            f"faults.withdraw.entryPoint '{__name__}:DEVICE' is not a class",
        ),
    ],
)
def test_python_entry_point_errors(entry_point: str, message: str) -> None:
    with pytest.raises(FaultError) as err:
        injector_for(FaultKind.WITHDRAW, python_faults(entry_point), context(FaultKind.WITHDRAW))
    assert str(err.value) == message


def test_python_injector_that_cannot_do_the_kind() -> None:
    with pytest.raises(FaultError, match=r"cannot inject unhealthy faults"):
        injector_for(
            FaultKind.UNHEALTHY,
            python_faults(f"{__name__}:Recorder", FaultKind.UNHEALTHY),
            context(FaultKind.UNHEALTHY),
        )


def test_the_harness_imports_no_driver() -> None:
    """The fake driver is a plug-in like any vendor's: conformance/faults never imports it."""
    root = Path(__file__).resolve().parents[3] / "conformance" / "faults"
    for module in root.glob("*.py"):
        tree = ast.parse(module.read_text())
        imported = [
            name
            for node in ast.walk(tree)
            for name in (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
        ]
        assert not [n for n in imported if n.split(".")[0] == "fakedriver"], module
        assert "fake.dra-conformance.io" not in module.read_text(), module


def test_profile_check_of_fault_methods() -> None:
    from conformance.faults.check import fault_method_problems

    faults = FaultsConfig(
        FrozenMap(
            {
                FaultKind.WITHDRAW: spec(FaultKind.WITHDRAW, ["sh", "-c", "true"], ["/no/undo"]),
                FaultKind.UNHEALTHY: FaultSpec(
                    FaultKind.UNHEALTHY, "python", entry_point="no_such_vendor_module:Faults"
                ),
                FaultKind.FAIL_PREPARE: FaultSpec(
                    FaultKind.FAIL_PREPARE, "python", entry_point=f"{__name__}:Recorder"
                ),
            }
        )
    )
    assert fault_method_problems(faults) == [
        "faults.withdraw.undo[0]: '/no/undo' is not an executable on this host's PATH (the "
        "command method runs on the machine that runs the suite)",
        "faults.unhealthy.entryPoint 'no_such_vendor_module:Faults': cannot import module "
        "'no_such_vendor_module': No module named 'no_such_vendor_module'",
    ]


def test_profile_check_command_reports_fault_methods_this_host_cannot_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    from conformance.cli.app import main
    from conformance.model.profile import SUITE_ROOT

    document = yaml.safe_load((SUITE_ROOT / "drivers/fake/profile.yaml").read_text())
    document["install"]["manifests"] = [str(SUITE_ROOT / "drivers/fake/deploy")]
    document["faults"]["withdraw"] = {"method": "command", "command": ["no-such-tool"]}
    profile = tmp_path / "profile.yaml"
    profile.write_text(yaml.safe_dump(document))
    assert main(["profile", "check", str(profile), "--offline"]) == 1
    assert "faults.withdraw.command[0]: 'no-such-tool' is not an executable" in (
        capsys.readouterr().out
    )
    assert (
        main(["profile", "check", str(SUITE_ROOT / "drivers/fake/profile.yaml"), "--offline"]) == 0
    )
