"""When the DRA feature gates the catalog names went GA (docs/versions.md, "GA feature gates").

The suite reads a cluster's gates from the API server's `kubernetes_feature_enabled` metrics. A
gate that went GA is later removed from Kubernetes, and then missing from the metrics, while its
behaviour stays on for good. So a gate the cluster does not report counts as on from the minor
version it went GA in, and a gate locked to on counts as on from the minor it was locked in even
when the metrics cannot be read. Before its GA a missing gate means the cluster lacks the
behaviour (the requirement is not applicable).

Source: `pkg/features/kube_features.go` of k8s.io/kubernetes v1.37.2 (`PreRelease: GA`,
`LockToDefault: true`); `removal` is the release its comment there plans the removal for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from conformance.model.metrics_text import only_families

# The API server's gauge: one sample per gate, `name` its gate, 1 on and 0 off.
FEATURE_METRIC = "kubernetes_feature_enabled"

Minor = tuple[int, int]


@dataclass(frozen=True)
class GaGate:
    ga: Minor  # the first minor in which the gate is GA (on by default)
    locked: Minor | None = None  # the first minor in which it can no longer be switched off
    removal: Minor | None = None  # planned removal from Kubernetes, as the source says


GA_GATES: Mapping[str, GaGate] = {
    "DynamicResourceAllocation": GaGate(ga=(1, 34), locked=(1, 35), removal=(1, 38)),
    "DRAAdminAccess": GaGate(ga=(1, 36), locked=(1, 36), removal=(1, 39)),
    "DRAPrioritizedList": GaGate(ga=(1, 36), locked=(1, 37), removal=(1, 40)),
    "DRADeviceTaints": GaGate(ga=(1, 37), locked=(1, 38), removal=(1, 41)),
    "DRADeviceTaintRules": GaGate(ga=(1, 37), locked=(1, 38), removal=(1, 41)),
    "DRAExtendedResource": GaGate(ga=(1, 37), locked=(1, 37), removal=(1, 40)),
    "DRAResourceClaimDeviceStatus": GaGate(ga=(1, 37), locked=(1, 37), removal=(1, 40)),
}


def implied_on(gate: str, version: Minor | None, *, metrics_read: bool) -> bool:
    """True if `gate` is on in a cluster of `version` without the metrics saying so: missing
    from metrics that were read, at or after its GA; metrics unread, at or after its lock."""
    history = GA_GATES.get(gate)
    if history is None or version is None:
        return False
    since = history.ga if metrics_read else history.locked
    return since is not None and version >= since


def gates_from_metrics(metrics_text: str) -> dict[str, bool]:
    """An API server's /metrics page -> {gate: on}."""
    gates: dict[str, bool] = {}
    for family in text_string_to_metric_families(only_families(metrics_text, [FEATURE_METRIC])):
        for sample in family.samples:
            if sample.name == FEATURE_METRIC and "name" in sample.labels:
                gates[sample.labels["name"]] = sample.value == 1.0
    return gates


def ga_since(gate: str, version: Minor | None) -> Minor | None:
    """The minor `gate` went GA in when a cluster of `version` has it GA (on by default), else
    None. A GA gate switched off is the cluster's choice, not something the driver lacks."""
    history = GA_GATES.get(gate)
    if history is None or version is None or version < history.ga:
        return None
    return history.ga
