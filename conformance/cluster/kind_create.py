"""How `kind create cluster` is called on a host that may be loaded (a CI runner shared with
other jobs): waits lengthened in proportion to the load, kubeadm's own health-check timeouts
raised to match, and a failure said in one line that names the cluster and kind's reason."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from conformance.cluster.kindconfig import minor_of

# kubeadm's health checks of the control plane and of a kubelet wait 4 minutes by default; at a
# load of 25-115 on 2 cores `wait-control-plane` ran out of them ("context deadline exceeded").
# Twice that on an idle host, more in proportion to the load.
KUBEADM_HEALTH_WAIT_S = 480
# No `kind create --wait`: an offline cluster's pod network starts only once the node-network
# RBAC is applied after the creation, so its nodes cannot be Ready inside it (measured: kind
# waited its whole --wait for a NotReady control plane). The nodes' readiness is awaited after.
NODES_READY_S = 240
MAX_LOAD_SCALE = 3.0


def load_scale(load1: float, cpus: int) -> float:
    """How much longer set-up waits on this host: 1 up to one runnable task per core, then in
    proportion to the load per core, at most MAX_LOAD_SCALE."""
    return min(max(load1 / max(cpus, 1), 1.0), MAX_LOAD_SCALE)


def host_load_scale() -> tuple[float, str]:
    """(the scale for this host now, what it was measured from)."""
    load1 = os.getloadavg()[0]
    cpus = os.cpu_count() or 1
    return load_scale(load1, cpus), f"load {load1:.1f} on {cpus} core(s)"


@dataclass(frozen=True)
class CreateWaits:
    """Every wait of one creation, in seconds."""

    scale: float = 1.0

    @property
    def kubeadm_s(self) -> int:
        return int(KUBEADM_HEALTH_WAIT_S * self.scale)

    @property
    def nodes_ready_s(self) -> int:
        return int(NODES_READY_S * self.scale)

    @property
    def command_s(self) -> int:
        """The whole `kind create cluster`: kubeadm init and the joins may each use theirs."""
        return 2 * self.kubeadm_s + 300


def kubeadm_wait_patches(kubernetes: str, seconds: int) -> list[str]:
    """kind config patches raising kubeadm's health-check and bootstrap timeouts to `seconds`:
    v1beta4's `timeouts` (kind writes v1beta4 from 1.36 on), v1beta3's
    `apiServer.timeoutForControlPlane` before."""
    major, minor = (int(n) for n in minor_of(kubernetes).split("."))
    if (major, minor) < (1, 36):
        return [f"kind: ClusterConfiguration\napiServer:\n  timeoutForControlPlane: {seconds}s\n"]
    init = ("controlPlaneComponentHealthCheck", "kubeletHealthCheck")
    join = ("kubeletHealthCheck", "tlsBootstrap", "discovery")
    return [
        f"kind: {kind}\ntimeouts:\n" + "".join(f"  {name}: {seconds}s\n" for name in names)
        for kind, names in (("InitConfiguration", init), ("JoinConfiguration", join))
    ]


def create_args(
    name: str, image: str, config_file: str, kubeconfig: Path, waits: CreateWaits
) -> list[str]:
    return [
        "create",
        "cluster",
        "--name",
        name,
        "--image",
        image,
        "--config",
        config_file,
        "--kubeconfig",
        str(kubeconfig),
        # always keep failed nodes so their logs can be exported; we delete them after
        "--retain",
    ]


_NOISE = ("To see the stack trace", "Stack Trace:")
_REASON = re.compile(r"error|fail|deadline|timed out|timeout|refused|no space|denied", re.I)


def failure_reason(stderr: str, limit: int = 300) -> str:
    """kind's reason in one line: its last two lines that say what went wrong (kubeadm's phase
    and the cause, not the Go stack trace), else its last line."""
    lines = [
        ln.strip()
        for ln in (stderr or "").splitlines()
        if ln.strip() and ".go:" not in ln and not ln.strip().startswith(_NOISE)
    ]
    said = [ln for ln in lines if _REASON.search(ln)][-2:] or lines[-1:]
    if not said:
        return "kind printed nothing"
    return " | ".join(ln if len(ln) <= limit else ln[: limit - 3] + "..." for ln in said)


def retry_line(error: BaseException, attempt: int, attempts: int) -> str:
    """The line a retried creation prints: the failure's first line (it names the cluster
    and the reason), which attempt it was, and that another follows."""
    first = (str(error).splitlines() or [type(error).__name__])[0]
    return f"{first} (attempt {attempt} of {attempts}); creating it once more"


def tree_size(path: Path) -> int:
    """Bytes of every file under `path`."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def human_size(size: int) -> str:
    return f"{size / 1024:.0f} KB" if size < 1024**2 else f"{size / 1024**2:.1f} MB"
