"""Fault injection for scenarios, any driver, chosen per fault kind by the profile.

| module       | owns                                                                         |
|--------------|------------------------------------------------------------------------------|
| `interface`  | `FaultInjector` (what scenarios call, vendors implement), `FaultContext`, errors |
| `taint_rule` | the `device-taint-rule` method: DeviceTaintRules, every driver               |
| `command`    | the `command` method: argv templates on the harness host, an undo per fault  |
| `exec`       | the `exec` method: the same argv in the driver's kubelet-plugin pod          |
| `python`     | the `python` method: a vendor's injector class (`module:Class`, entry point) |
| `registry`   | from the profile to injectors; which fault kinds a profile cannot inject     |
| `steps`      | every injection and undo an Allure step named after the fault and the device |
| `check`      | what `profile check` verifies of the methods without injecting anything      |

The fault kinds (`FaultKind`) and the profile's `faults` section are profile data:
`conformance.model.fault_config` (re-exported here).

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
