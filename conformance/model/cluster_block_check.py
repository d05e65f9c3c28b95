"""Does a cluster the suite did not create provide what the profile's cluster block asks for?
Pure comparisons of what was read (conformance.cluster.block_check reads it): feature gates
from each component's `kubernetes_feature_enabled` metric, kubelet fields from its /configz,
labels from the Node objects. What cannot be read from the API (containerd's settings, a
node's mounts) is said once as not checkable here: a warning, never a missing requirement.
"""

from __future__ import annotations

import json
import shlex
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from conformance.model.cdi_paths import DEFAULT_SPEC_DIRS
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


NRI_PLUGIN = "io.containerd.nri.v1.nri"
# `containerd config dump` prints the whole configuration, defaults included.
CONFIG_DUMP = ("containerd", "config", "dump")


def node_settings(block: ClusterRequirements, *, reachable: bool = False) -> list[str]:
    """The block's settings the API cannot show; with a way onto the nodes (`reachable`),
    only those that `runtime_findings` and `mount_findings` cannot check either."""
    runtime = block.containerd
    asked = [
        ("cluster.containerd.nri", runtime.nri is not None and not reachable),
        ("cluster.containerd.cdiSpecDirs", bool(runtime.cdi_spec_dirs) and not reachable),
        ("cluster.containerd.configPatches", bool(runtime.config_patches)),
        ("cluster.extraMounts", bool(block.extra_mounts) and not reachable),
    ]
    return [name for name, on in asked if on]


def unchecked_findings(
    block: ClusterRequirements, *, reachable: bool = False, why: str = ""
) -> list[Finding]:
    """What cannot be checked from here: containerd's configuration and the nodes' mounts
    without a way onto the nodes (nodeCommands.exec), a config patch always."""
    why = why or "the API shows no node's runtime or mounts; nodeCommands.exec would let it"
    detail = f"not checkable here ({why}): make sure it holds"
    return [
        Finding("every node", name, detail, "unchecked")
        for name in node_settings(block, reachable=reachable)
    ]


def _tables(value: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(value, Mapping):
        yield value
        for child in value.values():
            yield from _tables(child)


def runtime_findings(node: str, dump: str, block: ClusterRequirements) -> list[Finding]:
    """NRI and the CDI spec directories in the node's `containerd config dump`."""
    where, runtime = f"node {node} (containerd)", block.containerd
    try:
        config = tomllib.loads(dump)
    except tomllib.TOMLDecodeError as exc:
        return [Finding(where, "cluster.containerd", f"not checkable: {exc}", "unchecked")]
    found = []
    if runtime.nri is not None:
        nri = (config.get("plugins") or {}).get(NRI_PLUGIN)
        on = isinstance(nri, Mapping) and nri.get("disable") is False
        if on != runtime.nri:
            state = "on" if on else "off" if nri is not None else "absent"
            detail = f"is {state} (want {'on' if runtime.nri else 'off'})"
            found.append(Finding(where, "cluster.containerd.nri", detail))
    if runtime.cdi_spec_dirs:
        # v2 configs keep it in the CRI plugin's table, v3 in its runtime's; defaults if unset
        read = [t["cdi_spec_dirs"] for t in _tables(config) if "cdi_spec_dirs" in t]
        dirs = set(read[0]) if read else set(DEFAULT_SPEC_DIRS)
        for directory in runtime.cdi_spec_dirs:
            if directory not in dirs:
                detail = f"lacks {directory} (it reads {', '.join(sorted(dirs))})"
                found.append(Finding(where, "cluster.containerd.cdiSpecDirs", detail))
    return found


def mount_script(block: ClusterRequirements) -> str:
    """A shell line printing each mount's container path that does not exist on the node."""
    return (
        "".join(
            f"[ -e {shlex.quote(p)} ] || echo {shlex.quote(p)}; "
            for p in (m.container_path for m in block.extra_mounts)
        )
        + "true"
    )


def mount_findings(node: str, absent: str) -> list[Finding]:
    """`absent`: what `mount_script` printed (one path a line)."""
    return [
        Finding(f"node {node}", "cluster.extraMounts", f"{path} does not exist on the node")
        for path in absent.splitlines()
        if path
    ]


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
