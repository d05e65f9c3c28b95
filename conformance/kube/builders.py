"""Plain-dict builders for the objects scenarios create (no YAML templates in tests).

Dicts in the API's camelCase wire form: the 37.x client accepts them as request bodies, and a
test reads exactly what is sent. Every object carries the run label (and the test label when
known), which is what the end-of-run sweep deletes by. Unit tests parse each builder's output
with the client's strict pydantic models, so a misspelt field fails there, not on a cluster.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from conformance.model.naming import RUN_LABEL, TEST_LABEL
from conformance.model.opaque_config import OPAQUE_BEGIN, OPAQUE_END, OpaqueExpect

if TYPE_CHECKING:  # conformance.model.profile -> faults -> faults.taint_rule builds its rules here
    from conformance.model.profile import Verification

ENV_BEGIN, ENV_END = "=== ENV BEGIN", "=== ENV END"
FILE_BEGIN, FILE_END = "=== FILE BEGIN", "=== FILE END"
COMMAND_BEGIN, COMMAND_END = "=== COMMAND BEGIN", "=== COMMAND END"
EXIT_FILE = "/tmp/exit"

ClaimRef = str | tuple[str, str]  # pod claim name, or (pod claim name, request name)


def workload_command(
    verification: Verification | None = None, opaque_expect: OpaqueExpect | None = None
) -> list[str]:
    """The workload (docs/CONTRACTS.md): print the environment (and the profile's file or
    command output) between markers, then sleep until /tmp/exit exists.

    PID 1 gets no default signal handlers, so without the trap every pod deletion would wait
    out the whole grace period; `sleep & wait` lets the trap run at once. The opaque-config
    block (a file or command of the profile's opaqueConfig.expect) comes before the
    environment, so it is complete once the environment block is.
    """
    lines = ["trap 'exit 0' TERM"]
    if opaque_expect is not None and opaque_expect.method != "env":
        shown = (
            f"cat {shlex.quote(opaque_expect.path or '')}"
            if opaque_expect.method == "file"
            else shlex.join(opaque_expect.command)
        )
        lines += [f"echo '{OPAQUE_BEGIN}'", shown + " 2>&1", f"echo '{OPAQUE_END}'"]
    lines += [f"echo '{ENV_BEGIN}'", "env | sort", f"echo '{ENV_END}'"]
    if verification is not None and verification.method == "file" and verification.path:
        lines += [
            f"echo '{FILE_BEGIN}'",
            f"cat {shlex.quote(verification.path)}",
            f"echo '{FILE_END}'",
        ]
    if verification is not None and verification.method == "command":
        lines += [
            f"echo '{COMMAND_BEGIN}'",
            shlex.join(verification.command) + " 2>&1",
            f"echo '{COMMAND_END}'",
        ]
    lines.append(f"while [ ! -e {EXIT_FILE} ]; do sleep 1 & wait $!; done")
    return ["/bin/sh", "-c", "\n".join(lines)]


def container(
    name: str = "main",
    *,
    image: str | None = None,
    claims: Sequence[ClaimRef] = (),
    limits: Mapping[str, str | int] | None = None,
    command: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A container; `image`/`command` default to the pod's workload when left None."""
    body: dict[str, Any] = {"name": name}
    if image is not None:
        body["image"] = image
    if command is not None:
        body["command"] = list(command)
    if env:
        body["env"] = [{"name": k, "value": v} for k, v in env.items()]
    resources: dict[str, Any] = {}
    if claims:
        resources["claims"] = [
            {"name": c} if isinstance(c, str) else {"name": c[0], "request": c[1]} for c in claims
        ]
    if limits:
        resources["limits"] = {k: str(v) for k, v in limits.items()}
    if resources:
        body["resources"] = resources
    return body


@dataclass(frozen=True)
class PodClaim:
    """An entry of pod.spec.resourceClaims: an existing claim, or one generated per pod."""

    name: str
    claim: str | None = None
    template: str | None = None

    def to_dict(self) -> dict[str, str]:
        if (self.claim is None) == (self.template is None):
            raise ValueError(f"pod claim {self.name!r}: give exactly one of claim or template")
        if self.claim is not None:
            return {"name": self.name, "resourceClaimName": self.claim}
        return {"name": self.name, "resourceClaimTemplateName": self.template or ""}


@dataclass(frozen=True)
class Placement:
    """The node a test's devices were leased on, and the node selector that pins a pod there."""

    node: str
    node_selector: Mapping[str, str]


class Builders:
    """Builders bound to one run (and test), so nothing created can miss its labels."""

    def __init__(
        self,
        run_id: str,
        test_label: str | None = None,
        verification: Verification | None = None,
        *,
        home: Placement | None = None,
    ) -> None:
        self.run_id = run_id
        self.test_label = test_label
        self.verification = verification
        # Pods that name no placement of their own go here (the device lease's node).
        self.home = home

    def workload_command(self, *, opaque_expect: OpaqueExpect | None = None) -> list[str]:
        return workload_command(self.verification, opaque_expect)

    def labels(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        labels = {RUN_LABEL: self.run_id}
        if self.test_label:
            labels[TEST_LABEL] = self.test_label
        labels.update(extra or {})
        return labels

    def _meta(
        self,
        name: str,
        namespace: str | None = None,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "labels": self.labels(labels)}
        if namespace is not None:
            meta["namespace"] = namespace
        if annotations:
            meta["annotations"] = dict(annotations)
        return meta

    def namespace(self, name: str, *, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": self._meta(name, labels=labels),
        }

    def device_class(
        self,
        name: str,
        *,
        selectors: Sequence[str] = (),
        config: Sequence[Mapping[str, Any]] = (),
        extended_resource_name: str | None = None,
    ) -> dict[str, Any]:
        spec: dict[str, Any] = {}
        if selectors:
            spec["selectors"] = [{"cel": {"expression": e}} for e in selectors]
        if config:
            spec["config"] = [{"opaque": dict(c["opaque"])} for c in config]
        if extended_resource_name:
            spec["extendedResourceName"] = extended_resource_name
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": self._meta(name),
            "spec": spec,
        }

    @staticmethod
    def _claim_spec(
        requests: Sequence[Mapping[str, Any]],
        constraints: Sequence[Mapping[str, Any]],
        config: Sequence[Mapping[str, Any]],
    ) -> dict[str, Any]:
        if not requests:
            raise ValueError("a claim needs at least one request")
        devices: dict[str, Any] = {"requests": [dict(r) for r in requests]}
        if constraints:
            devices["constraints"] = [dict(c) for c in constraints]
        if config:
            devices["config"] = [dict(c) for c in config]
        return {"devices": devices}

    def resource_claim(
        self,
        name: str,
        namespace: str,
        requests: Sequence[Mapping[str, Any]],
        *,
        constraints: Sequence[Mapping[str, Any]] = (),
        config: Sequence[Mapping[str, Any]] = (),
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": self._meta(name, namespace, labels, annotations),
            "spec": self._claim_spec(requests, constraints, config),
        }

    def resource_claim_template(
        self,
        name: str,
        namespace: str,
        requests: Sequence[Mapping[str, Any]],
        *,
        constraints: Sequence[Mapping[str, Any]] = (),
        config: Sequence[Mapping[str, Any]] = (),
    ) -> dict[str, Any]:
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": self._meta(name, namespace),
            "spec": {
                "metadata": {"labels": self.labels()},
                "spec": self._claim_spec(requests, constraints, config),
            },
        }

    def pod(
        self,
        name: str,
        namespace: str,
        *,
        image: str,
        claims: Sequence[PodClaim] = (),
        containers: Sequence[Mapping[str, Any]] | None = None,
        node_selector: Mapping[str, str] | None = None,
        node_name: str | None = None,
        priority_class_name: str | None = None,
        tolerations: Sequence[Mapping[str, Any]] = (),
        restart_policy: str | None = None,
        labels: Mapping[str, str] | None = None,
        termination_grace_period_seconds: int = 5,
    ) -> dict[str, Any]:
        """A workload pod. Without `containers`, one container `main` uses every pod claim.
        Containers without image/command get the workload image and command."""
        if containers is None:
            containers = [container("main", claims=[c.name for c in claims])]
        command = workload_command(self.verification)
        spec_containers = []
        for c in containers:
            filled = dict(c)
            filled.setdefault("image", image)
            filled.setdefault("command", command)
            spec_containers.append(filled)
        spec: dict[str, Any] = {
            "containers": spec_containers,
            "terminationGracePeriodSeconds": termination_grace_period_seconds,
        }
        if claims:
            spec["resourceClaims"] = [c.to_dict() for c in claims]
        if not node_selector and not node_name and self.home is not None:
            node_selector = self.home.node_selector
        if node_selector:
            spec["nodeSelector"] = dict(node_selector)
        if node_name:
            spec["nodeName"] = node_name
        if priority_class_name:
            spec["priorityClassName"] = priority_class_name
        if tolerations:
            spec["tolerations"] = [dict(t) for t in tolerations]
        if restart_policy:
            spec["restartPolicy"] = restart_policy
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": self._meta(name, namespace, labels),
            "spec": spec,
        }

    def deployment(
        self, name: str, namespace: str, *, replicas: int, pod: Mapping[str, Any]
    ) -> dict[str, Any]:
        """A Deployment whose pods are `pod` (from `pod()`); selects on `app=<name>`."""
        selector = {"app.kubernetes.io/name": name}
        spec = {k: v for k, v in pod["spec"].items() if k not in ("nodeName", "restartPolicy")}
        template_labels = {**pod["metadata"].get("labels", {}), **selector}
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": self._meta(name, namespace, selector),
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": selector},
                "template": {"metadata": {"labels": template_labels}, "spec": spec},
            },
        }

    def priority_class(
        self,
        name: str,
        value: int,
        *,
        preemption_policy: str | None = None,
        description: str | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": self._meta(name),
            "value": value,
        }
        if preemption_policy:
            body["preemptionPolicy"] = preemption_policy
        if description:
            body["description"] = description
        return body

    def device_taint_rule(
        self,
        name: str,
        *,
        driver: str,
        key: str,
        effect: str,
        pool: str | None = None,
        device: str | None = None,
        value: str | None = None,
        api_version: str = "resource.k8s.io/v1",
    ) -> dict[str, Any]:
        """A DeviceTaintRule (v1 in 1.37, v1beta2 in 1.36, v1alpha3 in 1.35: pass the one the
        cluster serves). Effects: None, NoSchedule, NoExecute."""
        selector: dict[str, str] = {"driver": driver}
        if pool:
            selector["pool"] = pool
        if device:
            selector["device"] = device
        taint: dict[str, str] = {"key": key, "effect": effect}
        if value is not None:
            taint["value"] = value
        return {
            "apiVersion": api_version,
            "kind": "DeviceTaintRule",
            "metadata": self._meta(name),
            "spec": {"deviceSelector": selector, "taint": taint},
        }

    def pod_disruption_budget(
        self,
        name: str,
        namespace: str,
        *,
        match_labels: Mapping[str, str],
        min_available: int | str | None = None,
        max_unavailable: int | str | None = None,
    ) -> dict[str, Any]:
        if (min_available is None) == (max_unavailable is None):
            raise ValueError("give exactly one of min_available or max_unavailable")
        spec: dict[str, Any] = {"selector": {"matchLabels": dict(match_labels)}}
        if min_available is not None:
            spec["minAvailable"] = min_available
        else:
            spec["maxUnavailable"] = max_unavailable
        return {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": self._meta(name, namespace),
            "spec": spec,
        }
