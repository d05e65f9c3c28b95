"""The profile's `cluster` block: what a cluster must provide for the driver (docs/profile.md,
"cluster"). Applied when the suite creates the kind cluster (conformance.cluster.kindconfig),
checked before any test on a cluster it did not create (conformance.cluster.block_check).

A kind cluster records the digest of the block it was made with in a node label, so a cluster
made for one profile is never silently reused for a profile that needs another.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from conformance.model.cdi_paths import Directories
from conformance.model.frozen import FrozenMap
from conformance.model.typed import (
    Boolean,
    Strict,
    checked,
    choice,
    fail,
    listed,
    mapping_of,
    wrong,
)

# The node label a kind cluster made by the suite carries: the digest of its cluster block.
DIGEST_LABEL = "dra-conformance.io/cluster-block"
DIGEST_LENGTH = 16  # hex characters: a label value, and plenty to tell two blocks apart

_GATE_RE = re.compile(r"^[A-Z][A-Za-z0-9]*$")
_KUBELET_KEY_RE = re.compile(r"^[a-z][A-Za-z0-9]*$")
_LABEL_NAME_RE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_LABEL_PREFIX_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_LABEL_VALUE_RE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
# Set elsewhere in the block, or by the suite itself: a second place would only conflict.
_KUBELET_RESERVED = {
    "kind": "it is always KubeletConfiguration",
    "apiVersion": "the suite writes kubelet.config.k8s.io/v1beta1",
    "featureGates": "set cluster.featureGates, which reaches every component",
}
# The kubelet refuses to set labels of these domains on its own node (NodeRestriction).
_RESTRICTED_LABEL_DOMAINS = ("kubernetes.io", "k8s.io")
_ALLOWED_LABEL_PREFIX = "node-restriction.kubernetes.io"
PROPAGATIONS = ("None", "HostToContainer", "Bidirectional")


@dataclass(frozen=True)
class Mount:
    host_path: str
    container_path: str
    read_only: bool = False
    propagation: str | None = None


@dataclass(frozen=True)
class ContainerdSettings:
    nri: bool | None = None  # None: the runtime's default
    cdi_spec_dirs: tuple[str, ...] = ()  # besides the runtime's defaults
    config_patches: tuple[str, ...] = ()  # TOML merged into containerd's config


@dataclass(frozen=True)
class ClusterRequirements:
    feature_gates: Mapping[str, bool] = field(default_factory=FrozenMap)
    kubelet: Mapping[str, Any] = field(default_factory=FrozenMap)
    containerd: ContainerdSettings = field(default_factory=ContainerdSettings)
    extra_mounts: tuple[Mount, ...] = ()
    node_labels: Mapping[str, str] = field(default_factory=FrozenMap)

    @property
    def empty(self) -> bool:
        return self == ClusterRequirements()

    def as_json(self) -> dict[str, Any]:
        """The block in its document form (camelCase keys), for the digest and messages."""
        containerd = self.containerd
        return {
            "featureGates": dict(sorted(self.feature_gates.items())),
            "kubelet": _plain(self.kubelet),
            "containerd": {
                "nri": containerd.nri,
                "cdiSpecDirs": list(containerd.cdi_spec_dirs),
                "configPatches": list(containerd.config_patches),
            },
            "extraMounts": [
                {
                    "hostPath": m.host_path,
                    "containerPath": m.container_path,
                    "readOnly": m.read_only,
                    "propagation": m.propagation,
                }
                for m in self.extra_mounts
            ],
            "nodeLabels": dict(sorted(self.node_labels.items())),
        }

    def digest(self) -> str | None:
        """The label value recording this block on a cluster; None for an empty block (a
        cluster without the label was made with none)."""
        if self.empty:
            return None
        canonical = json.dumps(self.as_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:DIGEST_LENGTH]


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _gate_name(value: Any) -> str:
    if not isinstance(value, str) or not _GATE_RE.match(value):
        wrong("a feature gate name such as DRAListTypeAttributes", value)
    return value


def _kubelet_key(value: Any) -> str:
    if not isinstance(value, str) or not _KUBELET_KEY_RE.match(value):
        wrong("a KubeletConfiguration field such as cpuManagerPolicy", value)
    if value in _KUBELET_RESERVED:
        fail(f"'{value}' cannot be set here: {_KUBELET_RESERVED[value]}")
    return value


def _label_key(value: Any) -> str:
    if not isinstance(value, str):
        wrong("a label key such as example.com/pool", value)
    prefix, _, name = value.rpartition("/")
    if (prefix and not _LABEL_PREFIX_RE.match(prefix)) or not _LABEL_NAME_RE.match(name):
        wrong("a label key such as example.com/pool", value)
    restricted = any(prefix == d or prefix.endswith("." + d) for d in _RESTRICTED_LABEL_DOMAINS)
    if restricted and prefix != _ALLOWED_LABEL_PREFIX:
        fail(
            f"'{value}': a kubelet may not label its node in the kubernetes.io or k8s.io "
            f"domains; use your own domain or {_ALLOWED_LABEL_PREFIX}/"
        )
    if value == DIGEST_LABEL:
        fail(f"'{value}' is the suite's own label")
    return value


def _label_value(value: Any) -> str:
    if not isinstance(value, str) or not _LABEL_VALUE_RE.match(value):
        wrong("a label value (a string of at most 63 characters)", value)
    return value


def _toml(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        wrong("a TOML fragment of containerd's config", value)
    try:
        tomllib.loads(value)
    except tomllib.TOMLDecodeError as exc:
        fail(f"not valid TOML: {exc}")
    return value


def _absolute(value: Any) -> str:
    if not isinstance(value, str) or not value.startswith("/") or "\0" in value:
        wrong("an absolute path", value)
    return posixpath.normpath(value)


AbsolutePath = checked(str, _absolute, {"type": "string", "pattern": "^/"})
GateName = checked(str, _gate_name, {"type": "string", "pattern": _GATE_RE.pattern})
KubeletKey = checked(str, _kubelet_key, {"type": "string", "pattern": _KUBELET_KEY_RE.pattern})
LabelKey = checked(str, _label_key, {"type": "string", "minLength": 1})
LabelValue = checked(str, _label_value, {"type": "string", "maxLength": 63})
TomlPatch = checked(str, _toml, {"type": "string", "minLength": 1})


class ContainerdSection(Strict):
    """`cluster.containerd`: the node's container runtime."""

    nri: Boolean | None = Field(None, description="NRI on (true) or off (false)")
    cdi_spec_dirs: Directories = Field((), description="CDI spec directories besides defaults")
    config_patches: listed(TomlPatch, "TOML strings") = Field(  # type: ignore[valid-type]
        (), description="TOML fragments merged into containerd's config.toml"
    )


class MountSection(Strict):
    """One directory or device of the host mounted into every worker node."""

    host_path: AbsolutePath = Field(description="an absolute path on the machine running kind")
    container_path: AbsolutePath = Field(description="where it appears in the node")
    read_only: Boolean = Field(False, description="mounted read-only")
    propagation: choice(PROPAGATIONS) | None = Field(  # type: ignore[valid-type]
        None, description="mount propagation: None, HostToContainer or Bidirectional"
    )


class ClusterSection(Strict):
    """`cluster`: what the cluster must provide; applied on a kind cluster the suite makes,
    checked before any test elsewhere."""

    feature_gates: mapping_of(GateName, Boolean) = Field(  # type: ignore[valid-type]
        None,
        description="{Gate: true|false} on every component",
        json_schema_extra={"additionalProperties": False},
    )
    kubelet: mapping_of(KubeletKey, Any) = Field(  # type: ignore[valid-type]
        None,
        description="KubeletConfiguration fields, e.g. {cpuManagerPolicy: none}",
        json_schema_extra={"additionalProperties": False},
    )
    containerd: ContainerdSection | None = Field(None, description="{nri, cdiSpecDirs, ...}")
    extra_mounts: listed(MountSection, "mounts") = Field(  # type: ignore[valid-type]
        (), description="[{hostPath, containerPath, readOnly}] on every worker"
    )
    node_labels: mapping_of(LabelKey, LabelValue) = Field(  # type: ignore[valid-type]
        None, description="{key: value} on every worker"
    )

    def domain(self) -> ClusterRequirements:
        runtime = self.containerd or ContainerdSection()
        return ClusterRequirements(
            feature_gates=FrozenMap(self.feature_gates or {}),
            kubelet=FrozenMap(self.kubelet or {}),
            containerd=ContainerdSettings(
                runtime.nri, tuple(runtime.cdi_spec_dirs), tuple(runtime.config_patches)
            ),
            extra_mounts=tuple(
                Mount(m.host_path, m.container_path, m.read_only, m.propagation)
                for m in self.extra_mounts
            ),
            node_labels=FrozenMap(self.node_labels or {}),
        )
