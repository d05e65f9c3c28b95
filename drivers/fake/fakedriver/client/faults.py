"""The fake driver's fault plug-in for dra-conformance (profile method `python`):

    faults:
      withdraw: {method: python, entryPoint: "fakedriver.client.faults:FakeDriverFaults"}

Every fault kind, through the driver's control channel (fakedriver.client.channel). Each
injection waits until the driver on that node reports it applied the change, so a scenario
acts on a fault that is in effect. Options (faults.<kind>.options): `namespace` of the control
ConfigMap (default: the profile's readiness.daemonSet namespace, else dra-fake-driver).

Every fault is recorded with the run that injected it (FaultContext.run_id), so `sweep(run_id)`
undoes what a run left behind when it could not restore it itself (killed, interrupted).
"""

from __future__ import annotations

from collections.abc import Callable

from kubernetes import client as k8s_client

from conformance.faults import DeviceRef, FaultContext, FaultKind, InjectorBase
from fakedriver.client.channel import ALL_NODES, FAKE_DRIVER_NAMESPACE, FakeDriverControl

# The driver's error text for an injected prepare failure (fakedriver.controls).
PREPARE_FAILURE_TEXT = "injected prepare failure"


class FakeDriverInjector(InjectorBase):
    """Every fault kind on a FakeDriverControl; undone newest first by `restore()`."""

    kinds = frozenset(FaultKind)
    prepare_failure_text = PREPARE_FAILURE_TEXT

    def __init__(
        self, control: FakeDriverControl, wait: bool = True, timeout: float = 60.0
    ) -> None:
        self.control = control
        self.wait = wait
        self.timeout = timeout
        self._undo: list[tuple[str, str | None, Callable[[], str]]] = []

    def _applied(self, node: str) -> None:
        if self.wait and node != ALL_NODES:
            self.control.wait_applied(node, timeout=self.timeout)

    def _did(self, node: str, device: str | None, undo: Callable[[], str]) -> None:
        self._undo.append((node, device, undo))
        self._applied(node)

    def taint(
        self, device: DeviceRef, key: str, value: str = "", effect: str = "NoSchedule"
    ) -> None:
        node = device.node_name
        self.control.add_taint(node, device.device, key, value, effect)
        self._did(
            node,
            device.device,
            lambda: self.control.remove_taint(node, device.device, key, effect=effect),
        )

    def untaint(self, device: DeviceRef, key: str) -> None:
        self.control.remove_taint(device.node_name, device.device, key)
        self._applied(device.node_name)

    def mark_unhealthy(
        self, device: DeviceRef, message: str = "injected by dra-conformance"
    ) -> None:
        node = device.node_name
        self.control.set_unhealthy(node, device.device, message)
        self._did(node, device.device, lambda: self.control.set_healthy(node, device.device))

    def recover(self, device: DeviceRef) -> None:
        node = device.node_name
        self.control.set_healthy(node, device.device)
        self._applied(node)

    def withdraw(self, device: DeviceRef) -> None:
        node = device.node_name
        self.control.withdraw(node, device.device)
        self._did(node, device.device, lambda: self.control.restore(node, device.device))

    def restore_device(self, device: DeviceRef) -> None:
        """Publish a withdrawn device again."""
        self.control.restore(device.node_name, device.device)
        self._applied(device.node_name)

    def fail_prepare(
        self, node: str, device: DeviceRef | None = None, count: int | None = None
    ) -> None:
        name = device.device if device is not None else None
        self.control.fail_prepare(node, name, count)
        self._did(node, name, lambda: self.control.clear_fail_prepare(node, name))

    def delay_prepare(self, node: str, seconds: float) -> None:
        self.control.delay_prepare(node, seconds)
        self._did(node, None, lambda: self.control.delay_prepare(node, 0))

    def fail_binding(self, device: DeviceRef, count: int | None = 1) -> None:
        node, name = device.node_name, device.device
        self.control.fail_binding(node, name, count)
        self._did(node, name, lambda: self.control.clear_fail_binding(node, name))

    def restore(self) -> None:
        nodes: list[str] = []
        while self._undo:
            node, _, undo = self._undo.pop()
            undo()
            nodes.append(node)
        for node in dict.fromkeys(nodes):
            self._applied(node)

    def sweep(self, run_id: str) -> list[str]:
        """Undo every fault `run_id` injected through this control channel, by any process of
        the run; the ConfigMap is the driver's truth, so there is no wait for a driver that may
        be gone."""
        return self.control.sweep(run_id)

    def recorded_faults(self) -> dict[str, str]:
        """Fault -> the run that injected it, as the control ConfigMap records them."""
        return self.control.read_records()


class FakeDriverFaults(FakeDriverInjector):
    """The entry point: made by dra-conformance with the test's FaultContext."""

    def __init__(self, context: FaultContext) -> None:
        namespace = (
            context.options.get("namespace") or context.driver_namespace or FAKE_DRIVER_NAMESPACE
        )
        core = k8s_client.CoreV1Api(context.api_client)
        control = FakeDriverControl(core, namespace=namespace, run_id=context.run_id)
        super().__init__(control, timeout=context.timeout)
