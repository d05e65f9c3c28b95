"""What a node's kubelet says about DRA, read through the API server's node proxy (needs
`nodes/proxy` get, which the harness's cluster-admin kubeconfig has)."""

from __future__ import annotations

import os
import subprocess

from conformance.kube.client import K8sClients


def kubelet_metrics(k8s: K8sClients, node: str) -> str:
    """The kubelet's metrics page as Prometheus text (parsed by conformance.metrics)."""
    return k8s.get_raw(f"/api/v1/nodes/{node}/proxy/metrics", accept="text/plain")


def run_node_command(
    name: str, argv: list[str], node: str, kubeconfig: str, timeout: float
) -> None:
    """Run the profile's `nodeCommands.<name>` (already expanded) on this host; a failure is
    one line naming the command."""
    shown = " ".join(argv)
    env = {**os.environ, "DRA_NODE": node, "DRA_KUBECONFIG": kubeconfig}
    try:
        done = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except FileNotFoundError:
        raise RuntimeError(f"nodeCommands.{name}: no executable {argv[0]!r}") from None
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"nodeCommands.{name} `{shown}` timed out after {timeout:g}s") from None
    if done.returncode != 0:
        last = [ln.strip() for ln in (done.stderr or "").splitlines() if ln.strip()][-1:]
        raise RuntimeError(
            f"nodeCommands.{name} `{shown}` exited {done.returncode}"
            + (f": {last[0][:300]}" if last else "")
        )
