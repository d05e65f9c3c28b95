"""Does a cluster the suite did not create provide what the profile's cluster block asks for?
Pure comparisons of what was read (conformance.cluster.block_check reads it): feature gates
from each component's `kubernetes_feature_enabled` metric, kubelet fields from its /configz,
labels from the Node objects. What cannot be read from the API (containerd's settings, a
node's mounts) is said once as not checkable here: a warning, never a missing requirement.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from conformance.model.cluster_block import ClusterRequirements
from conformance.model.schema import parse_duration

Severity = Literal["missing", "unchecked"]


@dataclass(frozen=True)
class Finding:
    where: str  # "node w1", "the API server"
    setting: str  # "cluster.featureGates.X"
    detail: str
    severity: Severity = "missing"

    def line(self) -> str:
        return f"{self.where}: {self.setting} {self.detail}"


def _shown(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def gate_findings(
    where: str, gates: Mapping[str, bool] | None, block: ClusterRequirements, why: str = ""
) -> list[Finding]:
    """The block's gates against one component's metric (None: unread, `why`)."""
    if not block.feature_gates:
        return []
    if gates is None:
        return [Finding(where, "cluster.featureGates", f"not checkable here: {why}", "unchecked")]
    found = []
    for gate, wanted in block.feature_gates.items():
        if gate not in gates:
            found.append(
                Finding(
                    where,
                    f"cluster.featureGates.{gate}",
                    f"is unknown there (want {str(wanted).lower()})",
                )
            )
        elif gates[gate] != wanted:
            found.append(
                Finding(
                    where,
                    f"cluster.featureGates.{gate}",
                    f"is {str(gates[gate]).lower()} (want {str(wanted).lower()})",
                )
            )
    return found


def same(wanted: Any, actual: Any) -> bool:
    """`actual` (the kubelet's /configz) provides `wanted` (the profile's): a mapping holds at
    least the wanted keys, durations compare by length ("5m" is "5m0s"), the rest by value."""
    if isinstance(wanted, Mapping):
        return isinstance(actual, Mapping) and all(
            key in actual and same(value, actual[key]) for key, value in wanted.items()
        )
    if isinstance(wanted, str) and isinstance(actual, str) and wanted != actual:
        seconds = parse_duration(wanted)
        return seconds is not None and seconds == parse_duration(actual)
    if isinstance(wanted, list) and isinstance(actual, list):
        return len(wanted) == len(actual) and all(map(same, wanted, actual))
    return (
        type(wanted) is type(actual)
        and wanted == actual
        or (
            isinstance(wanted, int | float)
            and isinstance(actual, int | float)
            and not isinstance(wanted, bool)
            and not isinstance(actual, bool)
            and wanted == actual
        )
    )


def kubelet_findings(
    node: str, config: Mapping[str, Any] | None, block: ClusterRequirements, why: str = ""
) -> list[Finding]:
    """The block's kubelet fields against the node's /configz `kubeletconfig` (None: unread)."""
    where = f"node {node}"
    if not block.kubelet:
        return []
    if config is None:
        return [Finding(where, "cluster.kubelet", f"not checkable here: {why}", "unchecked")]
    found = []
    for key, wanted in block.kubelet.items():
        if key not in config:
            detail = f"is not set in its kubelet's configuration (want {_shown(wanted)})"
            found.append(Finding(where, f"cluster.kubelet.{key}", detail))
        elif not same(wanted, config[key]):
            detail = f"is {_shown(config[key])} (want {_shown(wanted)})"
            found.append(Finding(where, f"cluster.kubelet.{key}", detail))
    return found


def label_findings(
    node: str, labels: Mapping[str, str], block: ClusterRequirements
) -> list[Finding]:
    found = []
    for key, wanted in block.node_labels.items():
        if labels.get(key) != wanted:
            has = f"is {labels[key]!r}" if key in labels else "is missing"
            detail = f"{has} (want {wanted!r})"
            found.append(Finding(f"node {node}", f"cluster.nodeLabels.{key}", detail))
    return found


def unchecked_findings(block: ClusterRequirements) -> list[Finding]:
    """What the API cannot show: containerd's configuration and the nodes' mounts."""
    runtime = block.containerd
    asked = [
        ("cluster.containerd.nri", runtime.nri is not None),
        ("cluster.containerd.cdiSpecDirs", bool(runtime.cdi_spec_dirs)),
        ("cluster.containerd.configPatches", bool(runtime.config_patches)),
        ("cluster.extraMounts", bool(block.extra_mounts)),
    ]
    detail = "not checkable here (the API shows no node's runtime or mounts): make sure it holds"
    return [Finding("every node", name, detail, "unchecked") for name, on in asked if on]


def missing_line(findings: list[Finding]) -> str | None:
    """One line for every missing requirement (the first in full, then how many more)."""
    missing = [f for f in findings if f.severity == "missing"]
    if not missing:
        return None
    rest = f" (and {len(missing) - 1} more: " if len(missing) > 1 else ""
    more = "; ".join(f.line() for f in missing[1:])
    return (
        "the cluster lacks what the profile's cluster block asks for: "
        f"{missing[0].line()}{rest}{more}{')' if rest else ''}"
    )
