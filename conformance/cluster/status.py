"""`cluster status`: nodes, version, served DRA resources and enabled DRA feature gates, read
through the Kubernetes Python client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from conformance.kube.client import K8sClients, clients_for
from conformance.model.feature_gates import gates_from_metrics

# The gates of DRA and of what it builds on, as `cluster status` shows them.
DRA_GATE_PREFIXES = ("DRA", "ResourceHealth", "Dynamic")
# The server prints the table (`kubectl get -o wide` asks the same): its columns, its ages.
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
DRA_GROUP = "resource.k8s.io"


def dra_gates(metrics_text: str) -> dict[str, bool]:
    gates = gates_from_metrics(metrics_text)
    return {name: on for name, on in gates.items() if name.startswith(DRA_GATE_PREFIXES)}


def render_table(table: dict[str, Any]) -> list[str]:
    """A meta.k8s.io Table as aligned text, every column (the wide view)."""
    header = [c["name"].upper().replace(" ", "-") for c in table.get("columnDefinitions") or ()]
    rows = [[str(cell) for cell in row["cells"]] for row in table.get("rows") or ()]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return [
        "   ".join(cell.ljust(width) for cell, width in zip(r, widths, strict=True)).rstrip()
        for r in [header, *rows]
    ]


def served_resources(k8s: K8sClients, group: dict[str, Any]) -> list[str]:
    """`<resource>.<group>` for every top-level resource any served version of `group` has."""
    names: set[str] = set()
    for version in group["versions"]:
        listing = k8s.get_json(f"/apis/{version['groupVersion']}")
        names |= {f"{r['name']}.{DRA_GROUP}" for r in listing["resources"] if "/" not in r["name"]}
    return sorted(names)


def describe(kubeconfig: Path) -> str:
    lines = [f"kubeconfig: {kubeconfig}"]
    try:
        # A client of its own: the kubeconfig of a recreated cluster has new credentials.
        k8s = clients_for(k8s_config.new_client_from_config(config_file=str(kubeconfig)))
        lines.append(f"server version: {k8s.version.get_code().git_version}")
        lines.append("nodes:")
        lines += ["  " + ln for ln in render_table(json.loads(k8s.get_raw("/api/v1/nodes", TABLE)))]
        group = k8s.get_json(f"/apis/{DRA_GROUP}")
        lines.append(f"served {DRA_GROUP} resources: " + ", ".join(served_resources(k8s, group)))
        lines.append(f"{DRA_GROUP} versions: " + ", ".join(v["version"] for v in group["versions"]))
        gates = dra_gates(k8s.get_raw("/metrics", accept="text/plain"))
        lines.append(
            "DRA feature gates (apiserver): "
            + ", ".join(f"{k}={'on' if v else 'off'}" for k, v in sorted(gates.items()))
        )
    except (ApiException, urllib3.exceptions.HTTPError, OSError, k8s_config.ConfigException) as exc:
        lines.append(f"cluster unreachable: {exc}")
    return "\n".join(lines)
