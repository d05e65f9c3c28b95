"""Registration misbehaviours: a plugin that unregisters, registers only once, or advertises
its health services wrongly."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fakedriver.controls import FaultState

NAMES = frozenset(
    {
        "unregistered",  # the registration socket is removed (the kubelet drops the plugin)
        "register-once",  # GetInfo fails once registered: a restarted kubelet cannot re-register
        "health-not-advertised",  # health served, but GetInfo does not advertise it
        "health-v1alpha1-only",  # (legal) GetInfo advertises only the v1alpha1 health service
    }
)


def withheld(faults: FaultState) -> str:
    """Why the registration socket is not served ("" to serve it): the kubelet deregisters
    the plugin, while the driver keeps claiming to be ready (the lie a broken vendor driver
    tells)."""
    return "misbehaviour unregistered" if faults.misbehaving("unregistered") else ""


def refuse_registration(faults: FaultState, registered_once: bool) -> str:
    """register-once: a plugin that treats registration as a one-time event (its registration
    server stays, but cannot answer again)."""
    if registered_once and faults.misbehaving("register-once"):
        return "misbehaviour register-once: this plugin was registered already"
    return ""


def advertised(faults: FaultState, versions: list[str]) -> list[str]:
    """The services GetInfo advertises of those served. health-not-advertised leaves the
    health services out (a 1.37 kubelet then never calls them, a 1.36 one calls v1alpha1
    anyway); health-v1alpha1-only (legal) advertises only the older one."""
    # Here, not at import: the harness reads the misbehaviours' names (fakedriver.controls)
    # where the generated gRPC stubs are not installed.
    from fakedriver.grpcapi import HEALTH_SERVICES

    health = set(HEALTH_SERVICES.values())
    if faults.misbehaving("health-not-advertised"):
        return [v for v in versions if v not in health]
    if faults.misbehaving("health-v1alpha1-only"):
        return [v for v in versions if v not in health or v == HEALTH_SERVICES["v1alpha1"]]
    return versions
