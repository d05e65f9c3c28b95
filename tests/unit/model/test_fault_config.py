"""The profile's `faults` section, the catalog's `gates.faults`, and which fault kinds a profile
cannot inject (conformance.model.fault_config, conformance.faults.registry)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.faults import FaultKind, missing_faults_reason, missing_faults_remedy
from conformance.model.profile import ProfileError
from conformance.model.profile_parse import load_profile
from conformance.model.requirements import CatalogError, load_catalog

BASE: dict[str, Any] = {
    "apiVersion": "dra-conformance.io/v1alpha1",
    "kind": "DriverProfile",
    "driver": "gpu.example.com",
    "deviceClasses": {"default": "gpu.example.com"},
    "install": {"method": "preinstalled"},
    "verification": {"method": "env", "nameRegex": "^GPU_", "value": "pool/device"},
}
FAKE_PLUGIN = "fakedriver.client.faults:FakeDriverFaults"


def profile_with(tmp_path: Path, **top: Any):
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump({**BASE, **top}))
    return load_profile(path)


def problems(tmp_path: Path, **top: Any) -> list[str]:
    with pytest.raises(ProfileError) as err:
        profile_with(tmp_path, **top)
    return err.value.problems


def test_no_faults_section_means_taints_only(tmp_path: Path) -> None:
    faults = profile_with(tmp_path).faults
    assert faults.kinds == ("taint",)
    assert faults.spec(FaultKind.TAINT).method == "device-taint-rule"


def test_every_method_parses(tmp_path: Path) -> None:
    faults = profile_with(
        tmp_path,
        faults={
            "withdraw": {
                "method": "command",
                "command": ["tool", "withdraw", "{node}", "{device}"],
                "undo": ["tool", "restore", "{node}", "{device}"],
                "timeout": "30s",
            },
            "unhealthy": {
                "method": "exec",
                "command": ["sh", "-c", "echo bad > /run/{device}"],
                "container": "plugin",
            },
            "recover": {"method": "exec", "command": ["sh", "-c", "rm /run/{device}"]},
            "fail-prepare": {
                "method": "python",
                "entryPoint": FAKE_PLUGIN,
                "options": {"namespace": "x"},
            },
        },
    ).faults
    withdraw = faults.spec(FaultKind.WITHDRAW)
    assert (withdraw.method, withdraw.command[-1], withdraw.undo[1], withdraw.timeout) == (
        "command",
        "{device}",
        "restore",
        30.0,
    )
    assert faults.spec(FaultKind.UNHEALTHY).container == "plugin"
    assert not faults.spec(FaultKind.UNHEALTHY).can_undo
    assert faults.spec(FaultKind.FAIL_PREPARE).options == {"namespace": "x"}
    assert faults.spec(FaultKind.TAINT).method == "device-taint-rule"  # kept by default
    assert faults.kinds == ("withdraw", "unhealthy", "recover", "fail-prepare", "taint")


def test_recover_is_the_undo_of_unhealthy(tmp_path: Path) -> None:
    with_undo = {"method": "command", "command": ["bad", "{device}"], "undo": ["ok", "{device}"]}
    assert "recover" in profile_with(tmp_path, faults={"unhealthy": with_undo}).faults.kinds
    without = {"method": "command", "command": ["bad", "{device}"]}
    assert "recover" not in profile_with(tmp_path, faults={"unhealthy": without}).faults.kinds
    plugin = {"method": "python", "entryPoint": FAKE_PLUGIN}
    assert "recover" in profile_with(tmp_path, faults={"unhealthy": plugin}).faults.kinds


@pytest.mark.parametrize(
    "faults,expected",
    [
        (
            {"method": "fake-driver-control"},
            'faults.method: a single faults.method ("fake-driver-control") is no longer read; '
            "choose a method per fault kind, e.g. faults: {withdraw: {method: command, "
            "command: [...], undo: [...]}} (docs/profile.md, Faults); the fake driver's control "
            "channel is now the python method its profile names (drivers/fake/profile.yaml, "
            "faults)",
        ),
        (
            {"withdrawn": {"method": "command", "command": ["x"]}},
            "faults.withdrawn: unknown field; did you mean 'withdraw'?",
        ),
        (
            {"withdraw": {"command": ["x"]}},
            "faults.withdraw.method: required field is missing "
            "(expected one of device-taint-rule, command, exec, python)",
        ),
        (
            {"withdraw": {"method": "device-taint-rule"}},
            "faults.withdraw.method: device-taint-rule can only inject taint faults, not "
            "withdraw (use command, exec or python)",
        ),
        (
            {"driver-taint": {"method": "device-taint-rule"}},
            "faults.driver-taint.method: device-taint-rule can only inject taint faults, not "
            "driver-taint (use command, exec or python)",
        ),
        (
            {"withdraw": {"method": "command"}},
            "faults.withdraw.command: required field is missing (expected an argv list such as "
            "[my-tool, withdraw, '{device}'])",
        ),
        (
            {"withdraw": {"method": "command", "command": "tool withdraw"}},
            "faults.withdraw.command: expected a non-empty list of strings (an argv, not a shell "
            'line), got "tool withdraw"',
        ),
        (
            {"withdraw": {"method": "command", "command": ["tool", "{devcie}"]}},
            "faults.withdraw.command[1]: unknown placeholder {devcie}; placeholders are {kind}, "
            "{driver}, {node}, {pool}, {device}, {message}, {count}, {seconds}, {key}, {value}, "
            "{effect}, {kubeconfig} (write {{ and }} for literal braces)",
        ),
        (
            {"withdraw": {"method": "command", "command": ["x"], "timeout": "soon"}},
            'faults.withdraw.timeout: expected a positive duration such as 30s or 2m, got "soon"',
        ),
        (
            {"withdraw": {"method": "command", "command": ["x"], "entryPoint": "a:B"}},
            "faults.withdraw.entryPoint: not used by method command",
        ),
        (
            {"recover": {"method": "command", "command": ["x"], "undo": ["y"]}},
            "faults.recover.undo: recover is itself an undo; remove undo",
        ),
        (
            {"unhealthy": {"method": "python"}},
            'faults.unhealthy.entryPoint: required field is missing (expected "module:Class", '
            "or the name of an entry point in group dra_conformance.faults)",
        ),
    ],
)
def test_bad_faults_are_named(tmp_path: Path, faults: dict[str, Any], expected: str) -> None:
    assert problems(tmp_path, faults=faults) == [expected]


def test_fault_abilities_are_no_longer_capabilities(tmp_path: Path) -> None:
    assert problems(tmp_path, capabilities=["health-reporting", "withdraw-device"]) == [
        "capabilities[1]: 'withdraw-device' is a fault ability now, not a driver feature: "
        "remove it and configure faults.withdraw (docs/profile.md, Faults)"
    ]


def test_missing_faults_reason_and_remedy(tmp_path: Path) -> None:
    profile = profile_with(
        tmp_path, faults={"unhealthy": {"method": "command", "command": ["bad"]}}
    )
    assert missing_faults_reason(["taint", "unhealthy"], profile) is None
    assert missing_faults_reason(["withdraw"], profile) == (
        "the profile has no fault method for withdraw"
    )
    assert missing_faults_reason(["unhealthy", "recover", "fail-prepare"], profile) == (
        "the profile has no fault methods for recover, fail-prepare"
    )
    assert missing_faults_remedy(["withdraw", "recover"], profile) == (
        "give the profile a fault method for withdraw, recover (faults.withdraw, faults.recover "
        f"(or an undo for faults.unhealthy) in {profile.source}; docs/profile.md, Faults)"
    )
    assert missing_faults_reason([], profile) is None


# --- the catalog's gates.faults --------------------------------------------------------------

ENTRY = {"id": "DRA-LOSS-003", "suite": "device_loss", "level": "MUST", "statement": "s."}


def catalog(tmp_path: Path, gates: dict[str, Any]):
    path = tmp_path / "requirements.yaml"
    path.write_text(yaml.safe_dump({"schema": 1, "requirements": [{**ENTRY, "gates": gates}]}))
    return load_catalog(path)


def test_catalog_reads_fault_gates(tmp_path: Path) -> None:
    req = catalog(tmp_path, {"faults": ["withdraw", "recover"]}).by_id["DRA-LOSS-003"]
    assert req.faults == ("withdraw", "recover")
    assert req.capabilities == ()


@pytest.mark.parametrize(
    "gates,expected",
    [
        (
            {"faults": ["withdrawn"]},
            "requirements[0].gates.faults[0]: unknown fault kind 'withdrawn'; did you mean "
            "'withdraw'?",
        ),
        (
            {"capabilities": ["withdraw-device"]},
            "requirements[0].gates.capabilities[0]: 'withdraw-device' is a fault ability now: "
            "list 'withdraw' in gates.faults instead",
        ),
    ],
)
def test_catalog_fault_gate_errors(tmp_path: Path, gates: dict[str, Any], expected: str) -> None:
    with pytest.raises(CatalogError) as err:
        catalog(tmp_path, gates)
    assert err.value.problems == [expected]


def test_the_catalog_gates_device_loss_on_faults() -> None:
    from conformance.model.profile import SUITE_ROOT

    by_id = load_catalog(SUITE_ROOT / "scenarios/requirements.yaml").by_id
    assert by_id["DRA-LOSS-003"].faults == ("withdraw",)
    assert by_id["DRA-LOSS-004"].faults == ("unhealthy", "recover")
    assert by_id["DRA-LOSS-005"].faults == ("fail-prepare",)
