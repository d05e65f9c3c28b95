"""Pinned versions of everything the offline node image is built from, and cache keys."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

from conformance.cache_dir import cache_root as cache_root  # re-exported: cluster/ uses it
from conformance.cluster.releases import release_for

# Bump when the way an artefact is assembled changes, so old cache entries are not reused.
BUILDER_REVISION = "1"

DEBIAN_SUITE = "bookworm"  # systemd 252: still boots on a cgroup v1 host (systemd >= 256 refuses)

NODE_PACKAGES = (
    "systemd",
    "systemd-sysv",
    "dbus",
    "conntrack",
    "iptables",
    "nftables",
    "iproute2",
    "ethtool",
    "util-linux",
    "mount",
    "kmod",
    "libseccomp2",
    "pigz",
    "e2fsprogs",
    "bash",
    "ca-certificates",
    "curl",
    "jq",
    "procps",
    "runc",
    "containernetworking-plugins",
    "socat",
)


# The helm CLI for `install.method: helm` when none is on PATH: built from the Go module proxy on
# first use. Kept out of NodeVersions, which keys the node image.
HELM_VERSION = "v4.3.2"


@dataclass(frozen=True)
class NodeVersions:
    kubernetes: str = "v1.37.2"
    containerd: str = "v2.4.2"
    etcd: str = "v3.7.3"
    kind: str = "v0.33.0"
    debian_suite: str = DEBIAN_SUITE
    node_packages: tuple[str, ...] = field(default=NODE_PACKAGES)

    @classmethod
    def for_kubernetes(cls, kubernetes: str) -> NodeVersions:
        """The pins for `kubernetes`: the etcd of its release (kubeadm asks for that tag)."""
        return cls(kubernetes=kubernetes, etcd=release_for(kubernetes).etcd_build)

    @property
    def staging(self) -> str:
        """Staging modules (k8s.io/api, ...) are tagged v0.<minor>.<patch>."""
        return "v0." + self.kubernetes.removeprefix("v1.")

    @property
    def minor(self) -> str:
        return self.kubernetes.removeprefix("v").rsplit(".", 1)[0]


def digest(*parts: object) -> str:
    text = json.dumps([BUILDER_REVISION, *parts], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def rootfs_key(v: NodeVersions) -> str:
    return digest("rootfs", v.debian_suite, sorted(v.node_packages))


def node_image_key(v: NodeVersions, extra_files_digest: str) -> str:
    return digest("node", asdict(v), extra_files_digest)
