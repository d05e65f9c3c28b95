"""Which pods with ResourceClaims started containers while a run went on: the count the
kubelet's NodePrepareResources calls are checked against (a watch on every namespace)."""

from __future__ import annotations

import threading
from typing import Any

from kubernetes import watch

from conformance.kube.client import K8sClients


class ClaimPodWatch:
    """Context manager: pods (by uid) with claims whose containers started, and the claims
    (namespace/name) each used, seen while it was open."""

    def __init__(self, k8s: K8sClients) -> None:
        self.k8s = k8s
        self.started: dict[str, tuple[str, ...]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ClaimPodWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=15)

    def _run(self) -> None:
        while not self._stop.is_set():
            stream = watch.Watch()
            try:
                for event in stream.stream(
                    self.k8s.core.list_pod_for_all_namespaces, timeout_seconds=5
                ):
                    self._see(event["object"])
                    if self._stop.is_set():
                        break
            except Exception:  # noqa: BLE001 - an expired watch starts again
                continue
            finally:
                stream.stop()

    def _see(self, pod: Any) -> None:
        if not pod.spec.resource_claims or pod.metadata.uid in self.started:
            return
        statuses = pod.status.container_statuses or []
        if not any(s.state and (s.state.running or s.state.terminated) for s in statuses):
            return
        # a template's claim is named in the status, a claim of its own in the spec
        names = [s.resource_claim_name for s in pod.status.resource_claim_statuses or []]
        names += [c.resource_claim_name for c in pod.spec.resource_claims]
        ns = pod.metadata.namespace
        self.started[pod.metadata.uid] = tuple(f"{ns}/{n}" for n in names if n)

    @property
    def claims(self) -> set[str]:
        return {claim for claims in self.started.values() for claim in claims}
