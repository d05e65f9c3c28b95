"""Diagnostics of a failed test: what a person needs to explain the failure without the cluster.

Written to `<run dir>/diagnostics/<test>/` and attached to Allure: the namespace's claims and
pods (describe-like), its events, the driver's ResourceSlices, the driver pods' logs and, where
the run can reach its nodes (conformance.node_access), the kubelet journal of the nodes
involved. Every step is independent (a failing one is noted in errors.txt, the others still
run), and every text goes through `redact`: reports get published, tokens and keys must never
be in them.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes.client.exceptions import ApiException

from conformance.kube import state
from conformance.kube.client import K8sClients

_REDACTED = "<redacted>"
_SENSITIVE_NAME = re.compile(r"(token|passw|secret|credential|private|api[-_]?key)", re.I)
_TEXT_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.S),
        "-----BEGIN PRIVATE KEY-----" + _REDACTED + "-----END PRIVATE KEY-----",
    ),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 " + _REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"), _REDACTED),
    (
        re.compile(
            r"(?i)((?:client-key|client-certificate|certificate-authority|token)-data"
            r"|token|password|secret)(\"?\s*[:=]\s*\"?)[^\s\",}]+"
        ),
        r"\1\2" + _REDACTED,
    ),
)


def redact(text: str) -> str:
    for pattern, replacement in _TEXT_RULES:
        text = pattern.sub(replacement, text)
    return text


def redact_object(obj: Any) -> Any:
    """Drop Secret data, values of sensitive-looking keys and env vars; strip managedFields."""
    if isinstance(obj, Mapping):
        if obj.get("kind") == "Secret":
            return {
                "kind": "Secret",
                "metadata": {"name": (obj.get("metadata") or {}).get("name")},
                "data": _REDACTED,
            }
        out: dict[str, Any] = {}
        for key, value in obj.items():
            if key == "managedFields":
                continue
            if isinstance(key, str) and _SENSITIVE_NAME.search(key) and isinstance(value, str):
                out[key] = _REDACTED
            else:
                out[key] = redact_object(value)
        # env entries {name: API_TOKEN, value: ...}
        if (
            isinstance(out.get("name"), str)
            and "value" in out
            and _SENSITIVE_NAME.search(out["name"])
        ):
            out["value"] = _REDACTED
        return out
    if isinstance(obj, list | tuple):
        return [redact_object(v) for v in obj]
    return obj


def to_yaml(objects: Any) -> str:
    return redact(yaml.safe_dump(redact_object(objects), sort_keys=False, width=120))


# --- describe-like text ---------------------------------------------------------------------


def describe_pod(pod: Mapping[str, Any], events: Iterable[Mapping[str, Any]] = ()) -> str:
    """`kubectl describe pod`, reduced to what matters for DRA."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    lines = [
        f"Name:         {meta.get('namespace')}/{meta.get('name')}",
        f"Node:         {spec.get('nodeName') or '<none>'}",
        f"NodeSelector: {spec.get('nodeSelector') or '<none>'}",
        f"Priority:     {spec.get('priorityClassName') or '<none>'} ({spec.get('priority')})",
        f"Phase:        {status.get('phase')}"
        + (f"  reason={status.get('reason')}" if status.get("reason") else ""),
    ]
    if status.get("message"):
        lines.append(f"Message:      {status['message']}")
    if meta.get("deletionTimestamp"):
        lines.append(f"Deleting:     since {meta['deletionTimestamp']}")
    lines.append("ResourceClaims:")
    claim_status = {
        c.get("name"): c.get("resourceClaimName") for c in status.get("resourceClaimStatuses") or ()
    }
    for c in spec.get("resourceClaims") or ():
        source = c.get("resourceClaimName") or f"template {c.get('resourceClaimTemplateName')}"
        generated = claim_status.get(c.get("name"))
        lines.append(f"  {c.get('name')}: {source}" + (f" -> {generated}" if generated else ""))
    ext = status.get("extendedResourceClaimStatus")
    if ext:
        lines.append(f"  extended resources: {ext.get('resourceClaimName')}")
    lines.append("Conditions:")
    for c in status.get("conditions") or ():
        lines.append(
            f"  {c.get('type')}={c.get('status')}"
            + (f" {c.get('reason')}" if c.get("reason") else "")
            + (f": {c.get('message')}" if c.get("message") else "")
        )
    lines.append("Containers:")
    statuses = {c.get("name"): c for c in status.get("containerStatuses") or ()}
    for c in spec.get("containers") or ():
        st = statuses.get(c.get("name"), {})
        state_name, detail = next(iter((st.get("state") or {"unknown": {}}).items()))
        reason = (detail or {}).get("reason") or ""
        claims = [
            x.get("name") + (f"/{x['request']}" if x.get("request") else "")
            for x in (c.get("resources") or {}).get("claims") or ()
        ]
        lines.append(
            f"  {c.get('name')}: {state_name} {reason} ready={st.get('ready')} "
            f"restarts={st.get('restartCount', 0)} claims={claims}"
        )
        limits = (c.get("resources") or {}).get("limits")
        if limits:
            lines.append(f"    limits: {limits}")
        for health in st.get("allocatedResourcesStatus") or ():
            for r in health.get("resources") or ():
                lines.append(f"    {health.get('name')}: {r.get('resourceID')} {r.get('health')}")
    lines.append("Events:")
    lines += [f"  {line}" for line in format_events(events).splitlines()] or ["  <none>"]
    return "\n".join(lines)


def format_events(events: Iterable[Mapping[str, Any]]) -> str:
    rows = []
    for e in events:
        obj = e.get("involvedObject") or {}
        when = e.get("lastTimestamp") or e.get("eventTime") or ""
        count = f" (x{e['count']})" if (e.get("count") or 1) > 1 else ""
        rows.append(
            f"{when} {e.get('type')} {e.get('reason')} {obj.get('kind')}/{obj.get('name')}"
            f"{count}: {e.get('message', '')}".strip()
        )
    return "\n".join(rows)


# --- collection -----------------------------------------------------------------------------


# kubeadm's static pods carry `component=<name>`
CONTROL_PLANE_COMPONENTS = ("kube-scheduler", "kube-controller-manager")


@dataclass(frozen=True)
class DiagnosticsRequest:
    namespace: str
    out_dir: Path
    driver: str
    since: float  # epoch seconds: when the test started
    driver_namespace: str | None = None
    driver_daemonset: str | None = None
    # (node, since epoch seconds, lines) -> the kubelet's journal; None: nodes out of reach
    kubelet_log: Callable[[str, int, int], str] | None = None
    kubelet_log_nodes: Sequence[str] = ()  # whose journal to read when no test pod had a node
    log_tail_lines: int = 500


@dataclass
class DiagnosticsResult:
    out_dir: Path
    files: list[Path] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        lines = [f"diagnostics: {self.out_dir}"]
        lines += [f"  {p.name}" for p in self.files]
        lines += [f"  (failed: {e})" for e in self.errors]
        return "\n".join(lines)


def collect_diagnostics(k8s: K8sClients, req: DiagnosticsRequest) -> DiagnosticsResult:
    req.out_dir.mkdir(parents=True, exist_ok=True)
    collector = _Collector(k8s, req)
    collector.step("claims", collector.claims)
    collector.step("events", collector.namespace_events)
    collector.step("pods", collector.pods_describe)
    collector.step("resourceslices", collector.slices)
    collector.step("driver logs", collector.driver_logs)
    collector.step("kubelet logs", collector.kubelet_logs)
    collector.step("control-plane logs", collector.control_plane_logs)
    result = collector.result
    if result.errors:
        collector.write("errors.txt", "\n".join(result.errors))
    return result


class _Collector:
    """One collection: each step writes its files; the pods' nodes and the namespace's events
    found by the earlier steps narrow the later ones."""

    def __init__(self, k8s: K8sClients, req: DiagnosticsRequest) -> None:
        self.k8s = k8s
        self.req = req
        self.result = DiagnosticsResult(req.out_dir)
        self.pods: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.since_s = max(1, int(time.time() - req.since) + 5)  # logs since the test started

    def write(self, name: str, text: str) -> None:
        path = self.req.out_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(redact(text))
        self.result.files.append(path)

    def step(self, name: str, fn: Callable[[], None]) -> None:
        try:
            fn()
        except ApiException as exc:
            self.result.errors.append(f"{name}: HTTP {exc.status} {exc.reason}")
        except Exception as exc:  # noqa: BLE001 - one failing step must not lose the rest
            self.result.errors.append(f"{name}: {type(exc).__name__}: {exc}")

    def claims(self) -> None:
        items = self.k8s.resource.list_namespaced_resource_claim(self.req.namespace).items
        self.write("claims.yaml", to_yaml([self.k8s.to_dict(c) for c in items]))

    def namespace_events(self) -> None:
        self.events.extend(state.events_for(self.k8s, self.req.namespace))
        self.write("events.txt", format_events(self.events) or "<no events>")

    def pods_describe(self) -> None:
        k8s = self.k8s
        self.pods.extend(
            k8s.to_dict(p) for p in k8s.core.list_namespaced_pod(self.req.namespace).items
        )
        texts = []
        for pod in self.pods:
            name = (pod.get("metadata") or {}).get("name")
            own = [e for e in self.events if (e.get("involvedObject") or {}).get("name") == name]
            texts.append(describe_pod(pod, own))
        self.write("pods.txt", "\n\n".join(texts) or "<no pods>")
        self.result.nodes = sorted(
            {p["spec"]["nodeName"] for p in self.pods if (p.get("spec") or {}).get("nodeName")}
        )

    def slices(self) -> None:
        items = self.k8s.resource.list_resource_slice(
            field_selector=f"spec.driver={self.req.driver}"
        ).items
        self.write("resourceslices.yaml", to_yaml([self.k8s.to_dict(s) for s in items]))

    def driver_logs(self) -> None:
        req, core = self.req, self.k8s.core
        if not (req.driver_namespace and req.driver_daemonset):
            return
        ds = self.k8s.apps.read_namespaced_daemon_set(req.driver_daemonset, req.driver_namespace)
        labels = ds.spec.selector.match_labels or {}
        selector = ",".join(f"{k}={v}" for k, v in labels.items())
        for pod in core.list_namespaced_pod(req.driver_namespace, label_selector=selector).items:
            if self.result.nodes and pod.spec.node_name not in self.result.nodes:
                continue  # only the nodes the test's pods ran on
            for c in pod.spec.containers:
                log = core.read_namespaced_pod_log(
                    pod.metadata.name,
                    req.driver_namespace,
                    container=c.name,
                    since_seconds=self.since_s,
                    tail_lines=req.log_tail_lines,
                )
                self.write(f"driver-logs/{pod.metadata.name}_{c.name}.log", log or "<empty>")

    def control_plane_logs(self) -> None:
        """The scheduler's and controller manager's log since the test started: a pod never
        scheduled, a claim never allocated or deallocated is decided there. With the previous
        container's log when one restarted (a crash). Only where they run as pods (kubeadm,
        kind); elsewhere the list is empty."""
        core, tail = self.k8s.core, self.req.log_tail_lines
        for component in CONTROL_PLANE_COMPONENTS:
            for pod in core.list_namespaced_pod(
                "kube-system", label_selector=f"component={component}"
            ).items:
                name = pod.metadata.name
                log = core.read_namespaced_pod_log(
                    name, "kube-system", since_seconds=self.since_s, tail_lines=tail
                )
                self.write(f"control-plane/{name}.log", log or "<empty>")
                statuses = pod.status.container_statuses or ()
                if any(s.restart_count for s in statuses):
                    previous = core.read_namespaced_pod_log(
                        name, "kube-system", previous=True, tail_lines=tail
                    )
                    self.write(f"control-plane/{name}.previous.log", previous or "<empty>")

    def kubelet_logs(self) -> None:
        req = self.req
        if req.kubelet_log is None:
            return
        for node in self.result.nodes or sorted(req.kubelet_log_nodes):
            try:
                text = req.kubelet_log(node, int(req.since) - 5, req.log_tail_lines * 6)
            except Exception as exc:  # noqa: BLE001 - written in its place, the rest goes on
                text = f"the kubelet's journal could not be read: {exc}"
            self.write(f"kubelet-{node}.log", text)


def attach_to_allure(result: DiagnosticsResult) -> None:
    """Attach every file to the current Allure test (no-op when allure is not recording)."""
    try:
        import allure
    except ImportError:
        return
    for path in result.files:
        kind = (
            allure.attachment_type.YAML if path.suffix == ".yaml" else allure.attachment_type.TEXT
        )
        allure.attach.file(
            str(path), name=str(path.relative_to(result.out_dir)), attachment_type=kind
        )
