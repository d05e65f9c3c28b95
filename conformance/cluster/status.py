"""`cluster status`: nodes, version, served DRA resources and enabled DRA feature gates."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

DRA_GATE = re.compile(
    r'kubernetes_feature_enabled\{name="((?:DRA|ResourceHealth|Dynamic)[^"]*)"'
    r',stage="([^"]*)"\}\s+(\d)'
)


def _kubectl(kubeconfig: Path, *args: str) -> str:
    result = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if result.returncode != 0:
        raise RuntimeError(result.stderr.strip())
    return result.stdout


def dra_gates(metrics_text: str) -> dict[str, bool]:
    return {m.group(1): m.group(3) == "1" for m in DRA_GATE.finditer(metrics_text)}


def describe(kubeconfig: Path) -> str:
    lines = [f"kubeconfig: {kubeconfig}"]
    try:
        version = json.loads(_kubectl(kubeconfig, "version", "-o", "json"))["serverVersion"]
        lines.append(f"server version: {version['gitVersion']}")
        lines.append("nodes:")
        lines += [
            "  " + ln for ln in _kubectl(kubeconfig, "get", "nodes", "-o", "wide").splitlines()
        ]
        resources = _kubectl(
            kubeconfig, "api-resources", "--api-group=resource.k8s.io", "-o", "name"
        ).split()
        lines.append("served resource.k8s.io resources: " + ", ".join(sorted(resources)))
        versions = json.loads(_kubectl(kubeconfig, "get", "--raw", "/apis/resource.k8s.io"))
        lines.append(
            "resource.k8s.io versions: " + ", ".join(v["version"] for v in versions["versions"])
        )
        gates = dra_gates(_kubectl(kubeconfig, "get", "--raw", "/metrics"))
        lines.append(
            "DRA feature gates (apiserver): "
            + ", ".join(f"{k}={'on' if v else 'off'}" for k, v in sorted(gates.items()))
        )
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        lines.append(f"cluster unreachable: {exc}")
    return "\n".join(lines)
