"""What an e2e test needs to see a run's leftovers: the `run` command line, a tenacity poll,
the cluster's lease book as stored, and everything on the cluster that is still a run's
(namespaces, claims, DeviceTaintRules, PriorityClasses, cordons, faults recorded in the fake
driver's control channel)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from fakedriver.client.channel import FakeDriverControl
from tenacity import retry, retry_if_exception_type, stop_after_delay, wait_fixed

from conformance.kube import objects
from conformance.kube.client import K8sClients
from conformance.model.naming import CORDONED_BY_LABEL, RUN_LABEL
from conformance.run.cluster_lease_book import CONFIG_MAP, NAMESPACE

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
RULE_VERSION = "resource.k8s.io/v1"


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "conformance.cli", *args]


def run_cmd(cluster: str, run_id: str, report_dir: Path, *extra: str) -> list[str]:
    return cli(
        "run",
        "--profile",
        "drivers/fake/profile.yaml",
        "--name",
        cluster,
        "--run-id",
        run_id,
        "--report-dir",
        str(report_dir),
        "--allow-disruptive",
        "--dra-skip-install",
        *extra,
    )


class NotYet(AssertionError):
    pass


def poll(check: Any, timeout: float, interval: float = 1.0) -> Any:
    return retry(
        retry=retry_if_exception_type(NotYet),
        stop=stop_after_delay(timeout),
        wait=wait_fixed(interval),
        reraise=True,
    )(check)()


def stored_book(k8s: K8sClients) -> dict[str, Any]:
    """The cluster's lease book as stored: entries by ticket, heartbeats (owner -> [time,
    expiry]). Read without a transaction, which would add this process's heartbeat and drop
    the entries of expired owners."""
    config_map = k8s.core.read_namespaced_config_map(CONFIG_MAP, NAMESPACE)
    return json.loads((config_map.data or {}).get("book") or "{}")


def left_of(k8s: K8sClients, run_id: str) -> dict[str, list[str]]:
    """Everything on the cluster that is still the run's."""
    selector = f"{RUN_LABEL}={run_id}"
    rules = objects.ops_for(k8s, "DeviceTaintRule", RULE_VERSION).list(label_selector=selector)
    pcs = k8s.scheduling.list_priority_class(label_selector=selector)
    claims = k8s.resource.list_resource_claim_for_all_namespaces(label_selector=selector)
    cordoned = k8s.core.list_node(label_selector=f"{CORDONED_BY_LABEL}={run_id}")
    records = FakeDriverControl(k8s.core).read_records()
    return {
        "namespaces": [
            n.metadata.name for n in k8s.core.list_namespace(label_selector=selector).items
        ],
        "claims": [f"{c.metadata.namespace}/{c.metadata.name}" for c in claims.items],
        "DeviceTaintRules": [r.metadata.name for r in rules.items],
        "PriorityClasses": [p.metadata.name for p in pcs.items],
        "cordons": [n.metadata.name for n in cordoned.items],
        "faults": [key for key, run in records.items() if run == run_id],
    }


def cordoning_worker(run: Any, k8s: K8sClients, run_id: str, timeout: float = 600) -> int:
    """The pid of the process that cordoned a node for `run_id` (recorded on the node), once
    one has; fails if the run ends first."""
    from conformance.kube.drain import CORDONED_BY_PID_ANNOTATION

    def cordoned() -> int:
        if run.poll() is not None:
            raise AssertionError(f"the run ended (exit {run.returncode}) before it cordoned")
        nodes = k8s.core.list_node(label_selector=f"{CORDONED_BY_LABEL}={run_id}").items
        if not nodes:
            raise NotYet("no node cordoned by the run yet")
        return int(nodes[0].metadata.annotations[CORDONED_BY_PID_ANNOTATION])

    return poll(cordoned, timeout=timeout, interval=0.5)
