"""The run context: the profile plus the cluster facts, read once per run and immutable.

The xdist controller (or the single pytest process) reads the cluster once; workers get the
same context as JSON through `workerinput`, so every process decides applicability and
device capacity from identical facts. Feature gates are read from the API server's
`kubernetes_feature_enabled` metric - what the cluster runs, not what we assume.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException

from conformance.cel import cel_evaluator
from conformance.cel.selection import kind_device_sets
from conformance.kube.client import K8sClients
from conformance.model import kube_version
from conformance.model.devices import PublishedDevice, published_devices
from conformance.model.feature_gates import gates_from_metrics
from conformance.model.frozen import FrozenMap
from conformance.model.profile import Profile
from conformance.model.profile_parse import load_profile
from conformance.model.readiness_failure import ReadinessFailure
from conformance.progress import Progress

RESOURCE_GROUP = "resource.k8s.io"


@dataclass(frozen=True)
class ClusterInfo:
    provider: str  # "kind" | "existing"
    name: str
    kubeconfig: str
    context: str | None
    provisioned: bool  # created by this run: disruptive requirements always run
    node_containers: Mapping[str, str] = field(default_factory=FrozenMap)


@dataclass(frozen=True)
class ClusterFacts:
    git_version: str
    served_resources: Mapping[str, tuple[str, ...]]
    feature_gates: Mapping[str, bool] | None
    feature_gates_error: str | None
    nodes: tuple[str, ...]
    devices: tuple[PublishedDevice, ...]
    device_classes: Mapping[str, Mapping[str, Any]]


def read_served_resources(k8s: K8sClients) -> dict[str, tuple[str, ...]]:
    """resource.k8s.io group versions -> resource names (subresources left out)."""
    try:
        group = k8s.get_json(f"/apis/{RESOURCE_GROUP}")
    except ApiException as exc:
        if exc.status == 404:
            return {}
        raise
    served: dict[str, tuple[str, ...]] = {}
    for version in group.get("versions") or ():
        gv = version["groupVersion"]
        resources = k8s.get_json(f"/apis/{gv}").get("resources") or ()
        served[gv] = tuple(sorted(r["name"] for r in resources if "/" not in r["name"]))
    return served


def read_feature_gates(k8s: K8sClients) -> tuple[dict[str, bool] | None, str | None]:
    try:
        text = k8s.get_raw("/metrics", accept="text/plain")
    except ApiException as exc:
        return None, (
            f"GET /metrics answered {exc.status} {exc.reason}; grant the harness "
            "'get' on nonResourceURLs /metrics or use a cluster-admin kubeconfig"
        )
    gates = gates_from_metrics(text)
    if not gates:
        return None, "the API server's /metrics has no kubernetes_feature_enabled series"
    return gates, None


def read_cluster_facts(k8s: K8sClients, profile: Profile) -> ClusterFacts:
    # Raw JSON: the client's strict VersionInfo model rejects servers that omit a field.
    git_version = k8s.get_json("/version").get("gitVersion", "")
    served = read_served_resources(k8s)
    gates, gates_error = read_feature_gates(k8s)
    nodes = tuple(
        sorted(
            n.metadata.name for n in k8s.core.list_node(label_selector=profile.node_selector).items
        )
    )
    slices = [
        k8s.to_dict(s)
        for s in k8s.resource.list_resource_slice(
            field_selector=f"spec.driver={profile.driver}"
        ).items
    ]
    classes: dict[str, Mapping[str, Any]] = {}
    for name in profile.all_class_names():
        try:
            classes[name] = k8s.to_dict(k8s.resource.read_device_class(name))
        except ApiException as exc:
            if exc.status != 404:
                raise
    return ClusterFacts(
        git_version,
        served,
        gates,
        gates_error,
        nodes,
        published_devices(slices, profile.driver),
        classes,
    )


@dataclass(frozen=True)
class RunContext:
    run_id: str
    run_dir: Path
    profile: Profile
    cluster: ClusterInfo
    git_version: str
    served_resources: Mapping[str, tuple[str, ...]]
    feature_gates: Mapping[str, bool] | None
    feature_gates_error: str | None
    nodes: tuple[str, ...]  # the nodes the profile selects
    devices: tuple[PublishedDevice, ...]  # latest generation of every pool of the driver
    device_sets: Mapping[str, frozenset[str]]  # device kind -> ids of the devices it may get
    workload_image: str
    timeout_scale: float = 1.0
    allow_disruptive: bool = False
    # Set when the driver never became ready: the run reports without running scenarios.
    readiness_failure: ReadinessFailure | None = None

    # --- ApplicabilityFacts (conformance.model.requirements) ------------------------------

    @property
    def version(self) -> tuple[int, int] | None:
        return kube_version.minor(self.git_version)

    @property
    def capabilities(self) -> frozenset[str]:
        return self.profile.capabilities

    @property
    def profile_fields(self) -> frozenset[str]:
        return self.profile.gating_fields

    @property
    def provisioned(self) -> bool:
        return self.cluster.provisioned

    @property
    def profile_source(self) -> str:
        return self.profile.shown_source

    # --- conveniences for scenarios --------------------------------------------------------

    @property
    def harness_dir(self) -> Path:
        """Run-private state (lease book, namespace registry), not part of the report."""
        return self.run_dir / ".harness"

    def timeout(self, name: str) -> float:
        """The profile's timeout `name` in seconds, times --dra-timeout-scale."""
        return self.profile.timeouts.get(name, self.timeout_scale)

    def devices_by_node(self) -> Mapping[str | None, tuple[PublishedDevice, ...]]:
        by_node: dict[str | None, list[PublishedDevice]] = {}
        for d in self.devices:
            by_node.setdefault(d.node, []).append(d)
        return FrozenMap({k: tuple(v) for k, v in by_node.items()})

    def device(self, device_id: str) -> PublishedDevice | None:
        return next((d for d in self.devices if d.id == device_id), None)

    def devices_of_kind(self, kind: str) -> tuple[PublishedDevice, ...]:
        ids = self.device_sets[kind]
        return tuple(d for d in self.devices if d.id in ids)

    def serves(self, group_version: str, resource: str) -> bool:
        return resource in self.served_resources.get(group_version, ())

    def device_taint_rule_api_version(self) -> str | None:
        """The newest resource.k8s.io version serving devicetaintrules (v1 from 1.37)."""
        for version in ("v1", "v1beta2", "v1beta1", "v1alpha3"):
            if self.serves(f"{RESOURCE_GROUP}/{version}", "devicetaintrules"):
                return f"{RESOURCE_GROUP}/{version}"
        return None

    # --- controller -> workers ---------------------------------------------------------------

    def to_json(self) -> str:
        return json.dumps(
            {
                "run_id": self.run_id,
                "run_dir": str(self.run_dir),
                "profile": str(self.profile.source),
                "cluster": {
                    **{
                        k: getattr(self.cluster, k)
                        for k in ("provider", "name", "kubeconfig", "context", "provisioned")
                    },
                    "node_containers": dict(self.cluster.node_containers),
                },
                "git_version": self.git_version,
                "served_resources": {k: list(v) for k, v in self.served_resources.items()},
                "feature_gates": None if self.feature_gates is None else dict(self.feature_gates),
                "feature_gates_error": self.feature_gates_error,
                "nodes": list(self.nodes),
                "devices": [d.to_dict() for d in self.devices],
                "device_sets": {k: sorted(v) for k, v in self.device_sets.items()},
                "workload_image": self.workload_image,
                "timeout_scale": self.timeout_scale,
                "allow_disruptive": self.allow_disruptive,
                "readiness_failure": None
                if self.readiness_failure is None
                else self.readiness_failure.to_dict(),
            }
        )

    @classmethod
    def from_json(cls, text: str, profile: Profile | None = None) -> RunContext:
        data = json.loads(text)
        c = data["cluster"]
        return cls(
            run_id=data["run_id"],
            run_dir=Path(data["run_dir"]),
            profile=profile or load_profile(data["profile"]),
            cluster=ClusterInfo(
                c["provider"],
                c["name"],
                c["kubeconfig"],
                c["context"],
                c["provisioned"],
                FrozenMap(c.get("node_containers") or {}),
            ),
            git_version=data["git_version"],
            served_resources=FrozenMap({k: tuple(v) for k, v in data["served_resources"].items()}),
            feature_gates=None
            if data["feature_gates"] is None
            else FrozenMap(data["feature_gates"]),
            feature_gates_error=data["feature_gates_error"],
            nodes=tuple(data["nodes"]),
            devices=tuple(PublishedDevice.from_dict(d) for d in data["devices"]),
            device_sets=FrozenMap({k: frozenset(v) for k, v in data["device_sets"].items()}),
            workload_image=data["workload_image"],
            timeout_scale=data["timeout_scale"],
            allow_disruptive=data["allow_disruptive"],
            readiness_failure=None
            if data.get("readiness_failure") is None
            else ReadinessFailure.from_dict(data["readiness_failure"]),
        )


def build_run_context(
    *,
    run_id: str,
    run_dir: Path,
    profile: Profile,
    cluster: ClusterInfo,
    facts: ClusterFacts,
    workload_image: str,
    timeout_scale: float = 1.0,
    allow_disruptive: bool = False,
    readiness_failure: ReadinessFailure | None = None,
) -> RunContext:
    # The selector evaluator is built here, before any lease decision (minutes on a cold
    # cache, with progress lines); workers then find it built.
    evaluator = cel_evaluator(Progress())
    device_sets = kind_device_sets(
        profile, facts.devices, facts.device_classes, evaluator=evaluator
    )
    return RunContext(
        run_id=run_id,
        run_dir=run_dir,
        profile=profile,
        cluster=cluster,
        git_version=facts.git_version,
        served_resources=FrozenMap(facts.served_resources),
        feature_gates=None if facts.feature_gates is None else FrozenMap(facts.feature_gates),
        feature_gates_error=facts.feature_gates_error,
        nodes=facts.nodes,
        devices=facts.devices,
        device_sets=FrozenMap(device_sets),
        workload_image=workload_image,
        timeout_scale=timeout_scale,
        allow_disruptive=allow_disruptive,
        readiness_failure=readiness_failure,
    )
