"""Fixtures of the device-loss suite: fault injectors that undo themselves (the driver restart
is shared: scenarios/conftest.py).

Everything here is torn down before the test's device lease is released (each fixture depends
on `device_lease`), so the next test never meets a tainted, withdrawn or failing device.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s_client

from conformance.faults import (
    DeviceRef,
    DeviceTaintRuleInjector,
    FaultInjector,
    FaultKind,
    ProfileFaults,
)
from conformance.kube import waits
from conformance.kube.client import K8sClients
from conformance.kube.slices import current_devices
from conformance.model.devices import PublishedDevice
from conformance.run.context import RunContext


def _taint_rule_version(context: RunContext) -> str | None:
    group_version = context.device_taint_rule_api_version()
    return group_version.split("/", 1)[1] if group_version else None


@pytest.fixture
def taint_rules(
    dra_context: RunContext, k8s: K8sClients, device_lease: Any
) -> Iterator[DeviceTaintRuleInjector]:
    """DeviceTaintRules on single devices: works with every driver. Deleted after the test."""
    version = _taint_rule_version(dra_context)
    if version is None:
        pytest.fail(
            "the cluster enables DRADeviceTaintRules but serves no resource.k8s.io version "
            f"with devicetaintrules (served: {sorted(dra_context.served_resources)})"
        )
    injector = DeviceTaintRuleInjector(
        k8s_client.CustomObjectsApi(k8s.api_client), dra_context.run_id, api_version=version
    )
    try:
        yield injector
    finally:
        injector.restore()


class SliceTaints:
    """Taints the driver itself publishes (fault kind driver-taint): each taint() returns once
    it is in the device's spec.devices[].taints, which is what the scheduler and the eviction
    controller read; the driver's word that it applied it is not enough."""

    def __init__(self, injector: FaultInjector, k8s: K8sClients, timeout: float) -> None:
        self.injector, self.k8s, self.timeout = injector, k8s, timeout

    def taint(
        self, device: DeviceRef, key: str, value: str = "", effect: str = "NoSchedule"
    ) -> None:
        def read() -> list[PublishedDevice]:
            return [d for d in current_devices(self.k8s, device.driver, device.node)
                    if (d.pool, d.name) == (device.pool, device.device)]  # fmt: skip

        before = {t for d in read() for t in d.taints}
        self.injector.taint(device, key, value, effect)
        wanted = (key, value, effect)

        def other_effect(found: list[PublishedDevice]) -> str | None:
            # The taint published with another effect than asked for (a driver that does not
            # know the effect) is a wrong answer, not a slow one.
            if any(wanted in d.taints for d in found):
                return None
            wrong = [t for d in found for t in d.taints if t[:2] == wanted[:2] and t not in before]
            if not wrong:
                return None
            published = wrong[0][2]
            return f"the driver published taint {key}={value} with effect {published}, not {effect}"

        waits.wait_until(
            read,
            lambda found: any(wanted in d.taints for d in found),
            describe=f"the driver to publish taint {key}={value}:{effect} in spec.devices[]"
            f".taints of {device.pool}/{device.device} (fault driver-taint)",
            timeout=self.timeout,
            show=lambda found: [{"device": d.id, "taints": d.taints} for d in found],
            abort=other_effect,
        )

    def untaint(self, device: DeviceRef, key: str) -> None:
        self.injector.untaint(device, key)


@pytest.fixture
def driver_taints(dra_context: RunContext, k8s: K8sClients, faults: ProfileFaults) -> SliceTaints:
    return SliceTaints(faults.new(FaultKind.DRIVER_TAINT), k8s, dra_context.timeout("default"))
