"""`python -m fakedriver.client.faultctl`: what a `command` fault method runs for the fake driver.
Its arguments and DRA_* variables, and each action's effect on the control channel."""

from __future__ import annotations

import pytest
from fakedriver.client import faultctl
from fakedriver.client.channel import FakeDriverControl
from fakedriver.controls import parse_controls

from unit.fakedriver.test_faults_client import FakeCore

NODE = "worker-1"


@pytest.fixture(autouse=True)
def no_dra_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DRA_NODE", "DRA_DEVICE", "DRA_FAIL_COUNT", "DRA_KUBECONFIG", "DRA_TAINT_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    "argv,message",
    [
        (["withdraw"], "faultctl withdraw: no node: pass --node or set DRA_NODE"),
        (
            ["withdraw", "--node", NODE],
            "faultctl withdraw: withdraw needs a device: pass --device or set DRA_DEVICE",
        ),
        (
            ["taint", "--node", NODE, "--device", "d"],
            "faultctl taint: taint needs a taint key: pass --key or set DRA_TAINT_KEY",
        ),
    ],
)
def test_missing_values_are_one_line_errors(argv, message, capsys) -> None:
    assert faultctl.main(argv) == 1
    assert capsys.readouterr().err == message + "\n"


def test_values_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRA_NODE", NODE)
    monkeypatch.setenv("DRA_DEVICE", "fa80-0")
    monkeypatch.setenv("DRA_KUBECONFIG", "/kc")
    args = faultctl.parser().parse_args(["unhealthy"])
    assert (args.node, args.device, args.kubeconfig) == (NODE, "fa80-0", "/kc")


def test_an_unreachable_cluster_is_one_line(capsys, tmp_path) -> None:
    missing = tmp_path / "no-kubeconfig"
    argv = ["withdraw", "--node", NODE, "--device", "d", "--kubeconfig", str(missing)]
    assert faultctl.main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("faultctl withdraw: ") and err.count("\n") == 1, err


def test_each_action_and_its_undo_on_the_control_channel() -> None:
    core = FakeCore()
    control = FakeDriverControl(core)

    def act(*argv: str) -> None:
        _, action = faultctl.ACTIONS[argv[0]]
        action(control, faultctl.parser().parse_args([*argv, "--node", NODE]))

    act("withdraw", "--device", "fa80-0")
    act("unhealthy", "--device", "fa80-1", "--message", "ecc")
    act("fail-prepare", "--count", "2")
    act("delay-prepare", "--seconds", "1.5")
    act("taint", "--device", "fa80-0", "--key", "k.io/x", "--effect", "NoExecute")
    parsed = parse_controls(core.data(), NODE)
    assert parsed.device("fa80-0").withdrawn and parsed.device("fa80-0").taints
    assert parsed.device("fa80-1").health == "Unhealthy"
    assert parsed.fail_prepare.count == 2 and parsed.prepare_delay_seconds == 1.5
    act("restore", "--device", "fa80-0")
    act("healthy", "--device", "fa80-1")
    act("clear-fail-prepare")
    act("clear-delay-prepare")
    act("untaint", "--device", "fa80-0", "--key", "k.io/x")
    assert core.data() == {}
