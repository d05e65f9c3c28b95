"""Command line for the fake driver's fault controls, for profiles whose faults use the
`command` method (dra-conformance exports DRA_NODE, DRA_DEVICE, DRA_KUBECONFIG, ...):

    faults:
      withdraw:
        method: command
        command: [python, -m, fakedriver.client.faultctl, withdraw]
        undo: [python, -m, fakedriver.client.faultctl, restore]

Each action returns once the driver on the node reports it applied the change; a failure is one
line on stderr and exit code 1.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from fakedriver.client.channel import ALL_NODES, FAKE_DRIVER_NAMESPACE, FakeDriverControl

# action -> (needs a device, what it does to the control channel)
Action = Callable[[FakeDriverControl, argparse.Namespace], str]
ACTIONS: dict[str, tuple[bool, Action]] = {
    "withdraw": (True, lambda c, a: c.withdraw(a.node, a.device)),
    "restore": (True, lambda c, a: c.restore(a.node, a.device)),
    "unhealthy": (True, lambda c, a: c.set_unhealthy(a.node, a.device, a.message)),
    "healthy": (True, lambda c, a: c.set_healthy(a.node, a.device)),
    "fail-prepare": (False, lambda c, a: c.fail_prepare(a.node, a.device or None, a.count)),
    "clear-fail-prepare": (False, lambda c, a: c.clear_fail_prepare(a.node, a.device or None)),
    "delay-prepare": (False, lambda c, a: c.delay_prepare(a.node, a.seconds)),
    "clear-delay-prepare": (False, lambda c, a: c.delay_prepare(a.node, 0)),
    "fail-binding": (True, lambda c, a: c.fail_binding(a.node, a.device, a.count)),
    "clear-fail-binding": (True, lambda c, a: c.clear_fail_binding(a.node, a.device)),
    "taint": (True, lambda c, a: c.add_taint(a.node, a.device, a.key, a.value, a.effect)),
    "untaint": (True, lambda c, a: c.remove_taint(a.node, a.device, a.key)),
}


def _env_int(name: str) -> int | None:
    raw = os.environ.get(name, "")
    return int(raw) if raw.strip() else None


def parser() -> argparse.ArgumentParser:
    env = os.environ.get
    p = argparse.ArgumentParser(prog="python -m fakedriver.client.faultctl", description=__doc__)
    p.add_argument("action", choices=sorted(ACTIONS))
    p.add_argument("--node", default=env("DRA_NODE", ""), help="default $DRA_NODE; * for all")
    p.add_argument("--device", default=env("DRA_DEVICE", ""), help="default $DRA_DEVICE")
    p.add_argument("--message", default=env("DRA_FAULT_MESSAGE") or "injected by faultctl")
    p.add_argument(
        "--count",
        type=int,
        default=None,
        help="fail-prepare: default every prepare; fail-binding: every allocation",
    )
    p.add_argument("--seconds", type=float, default=float(env("DRA_DELAY_SECONDS") or 0))
    p.add_argument("--key", default=env("DRA_TAINT_KEY", ""))
    p.add_argument("--value", default=env("DRA_TAINT_VALUE", ""))
    p.add_argument("--effect", default=env("DRA_TAINT_EFFECT") or "NoSchedule")
    p.add_argument("--kubeconfig", default=env("DRA_KUBECONFIG") or None)
    p.add_argument("--context", default=env("DRA_KUBE_CONTEXT") or None)
    p.add_argument("--namespace", default=FAKE_DRIVER_NAMESPACE, help="of the control ConfigMap")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the driver")
    p.add_argument("--no-wait", action="store_true", help="do not wait for the driver")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.count is None:
        args.count = _env_int("DRA_FAIL_COUNT")
    needs_device, action = ACTIONS[args.action]
    problem = None
    if not args.node:
        problem = "no node: pass --node or set DRA_NODE"
    elif needs_device and not args.device:
        problem = f"{args.action} needs a device: pass --device or set DRA_DEVICE"
    elif args.action in ("taint", "untaint") and not args.key:
        problem = f"{args.action} needs a taint key: pass --key or set DRA_TAINT_KEY"
    if problem:
        print(f"faultctl {args.action}: {problem}", file=sys.stderr)
        return 1
    try:
        api = k8s_config.new_client_from_config(config_file=args.kubeconfig, context=args.context)
        control = FakeDriverControl(k8s_client.CoreV1Api(api), namespace=args.namespace)
        action(control, args)
        if not args.no_wait and args.node != ALL_NODES:
            control.wait_applied(args.node, timeout=args.timeout)
    except Exception as exc:  # noqa: BLE001 - one line for the harness's error message
        text = " ".join(str(exc).split())[:400]
        print(f"faultctl {args.action}: {type(exc).__name__}: {text}", file=sys.stderr)
        return 1
    print(f"faultctl {args.action}: node {args.node} device {args.device or '-'}: applied")
    return 0


if __name__ == "__main__":
    sys.exit(main())
