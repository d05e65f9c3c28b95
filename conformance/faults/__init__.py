"""Fault injection for scenarios, any driver, chosen per fault kind by the profile.

- `interface`: `FaultInjector` (what scenarios call and vendors implement),
  `FaultContext` (what an injector is made with) and the errors.
- the fault kinds (`FaultKind`) and the profile's `faults` section are profile data:
  `conformance.model.fault_config` (re-exported here).
- one module per method: `taint_rule` (DeviceTaintRules, every driver), `command` (argv on the
  harness host), `exec` (argv in the driver's kubelet-plugin pod), `python` (a vendor's class).
- `registry`: from the profile to injectors, and which fault kinds a profile cannot inject.
- `steps`: every injection and undo is an Allure step named after the fault and the device,
  for any injector (`InjectorBase` subclasses by themselves, others wrapped by the registry).

The harness names no driver here: the bundled fake driver's control channel is a `python`
plug-in like any vendor's (drivers/fake/fakedriver/client/faults.py).
"""

from conformance.faults.interface import (
    DeviceRef,
    FaultCommandError,
    FaultContext,
    FaultError,
    FaultInjector,
    FaultKind,
    FaultNotSupported,
    InjectorBase,
)
from conformance.faults.registry import (
    ProfileFaults,
    fault_context,
    injector_for,
    missing_faults,
    missing_faults_reason,
    missing_faults_remedy,
)
from conformance.faults.taint_rule import DeviceTaintRuleInjector
from conformance.model.fault_config import (
    ENTRY_POINT_GROUP,
    FAULT_KINDS,
    TAINT_EFFECTS,
    FaultsConfig,
    FaultSpec,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "FAULT_KINDS",
    "TAINT_EFFECTS",
    "DeviceRef",
    "DeviceTaintRuleInjector",
    "FaultCommandError",
    "FaultContext",
    "FaultError",
    "FaultInjector",
    "FaultKind",
    "FaultNotSupported",
    "FaultSpec",
    "FaultsConfig",
    "InjectorBase",
    "ProfileFaults",
    "fault_context",
    "injector_for",
    "missing_faults",
    "missing_faults_reason",
    "missing_faults_remedy",
]
