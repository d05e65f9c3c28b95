"""What the chaos tests share: a run started in its own process group, and what must hold after
it was interrupted (summary written, verdict not CONFORMANT, nothing of the run left)."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

from leftovers_check import NotYet, left_of, poll, run_cmd

from conformance.kube.client import K8sClients
from conformance.model.profile import SUITE_ROOT

CUT_SHORT = ("error", "not-run")


def start(cluster: str, run_id: str, report_dir: Path, *selection: str) -> subprocess.Popen:
    return subprocess.Popen(
        run_cmd(cluster, run_id, report_dir, "-n", "4", *selection),
        cwd=SUITE_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, like a terminal's foreground job
        # A shell's background job (`cmd &`) inherits SIGINT ignored, and Python then never
        # turns SIGINT into KeyboardInterrupt: give the run the default, as a terminal does.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def summary_of(report_dir: Path, output: str) -> dict[str, Any]:
    path = report_dir / "summary.json"
    assert path.is_file(), f"no summary.json after the interruption:\n{output[-3000:]}"
    summary = json.loads(path.read_text())
    assert summary["verdict"] not in ("CONFORMANT", "PASSED-PARTIAL"), output[-3000:]
    return summary


def statuses_of(summary: dict[str, Any]) -> dict[str, str]:
    return {r["id"]: r["status"] for r in summary.get("requirements", [])}


def nothing_left(k8s: K8sClients, run_id: str, output: str) -> None:
    def empty() -> None:
        left = left_of(k8s, run_id)
        # Tiers run one test at a time on this cluster: any cordon now is the run's.
        left["unschedulable nodes"] = [
            n.metadata.name for n in k8s.core.list_node().items if n.spec.unschedulable
        ]
        if any(left.values()):
            raise NotYet(f"the run left: {left}")

    try:
        poll(empty, timeout=30)  # namespaces finish terminating
    except NotYet as exc:
        raise AssertionError(f"{exc}\n{output[-3000:]}") from None
