"""What runs left on a cluster, by run id: namespaces and cluster-scoped objects labelled
`dra-conformance.io/run`, nodes labelled `cordoned-by-run`, and injected faults (counted by
the caller's fault reader, e.g. the fake driver's control channel). Used by the header of a new
run (leftovers of dead runs) and by `dra-conformance cleanup`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from conformance.kube.cleanup import labelled_cluster_objects
from conformance.kube.client import K8sClients
from conformance.model.naming import CORDONED_BY_LABEL, RUN_LABEL


@dataclass
class RunLeftovers:
    run_id: str
    namespaces: list[str] = field(default_factory=list)
    cluster_objects: list[str] = field(default_factory=list)  # "Kind/name"
    cordoned: list[str] = field(default_factory=list)  # node names
    faults: int = 0

    def names(self) -> list[str]:
        """Every leftover, named (for an error message)."""
        return [
            *(f"Namespace/{n}" for n in self.namespaces),
            *self.cluster_objects,
            *(f"cordon of node {n}" for n in self.cordoned),
            *([f"{self.faults} injected fault(s)"] if self.faults else []),
        ]

    def describe(self) -> str:
        parts = []
        if self.namespaces:
            parts.append(f"{len(self.namespaces)} namespace(s)")
        kinds: dict[str, int] = {}
        for name in self.cluster_objects:
            kinds[name.split("/", 1)[0]] = kinds.get(name.split("/", 1)[0], 0) + 1
        parts += [f"{n} {kind}(s)" for kind, n in sorted(kinds.items())]
        if self.cordoned:
            parts.append(f"{len(self.cordoned)} cordoned node(s)")
        if self.faults:
            parts.append(f"{self.faults} injected fault(s)")
        return ", ".join(parts)


def find_leftovers(
    k8s: K8sClients,
    *,
    api_versions: Sequence[str] | None = None,
    fault_counts: Mapping[str, int] | None = None,
    include_terminating: bool = False,
) -> dict[str, RunLeftovers]:
    """run id -> what is labelled with it. Namespaces already terminating go away on their
    own and are left out unless `include_terminating`."""
    runs: dict[str, RunLeftovers] = {}

    def of(run_id: str) -> RunLeftovers:
        return runs.setdefault(run_id, RunLeftovers(run_id))

    for ns in k8s.core.list_namespace(label_selector=RUN_LABEL).items:
        if ns.metadata.deletion_timestamp is None or include_terminating:
            of(ns.metadata.labels[RUN_LABEL]).namespaces.append(ns.metadata.name)
    for kind, _, name, run_id in labelled_cluster_objects(k8s, RUN_LABEL, api_versions):
        of(run_id).cluster_objects.append(f"{kind}/{name}")
    for node in k8s.core.list_node(label_selector=CORDONED_BY_LABEL).items:
        of(node.metadata.labels[CORDONED_BY_LABEL]).cordoned.append(node.metadata.name)
    for run_id, count in (fault_counts or {}).items():
        of(run_id).faults += count
    return runs


def dead_runs_note(leftovers: Mapping[str, RunLeftovers], live: set[str], current: str) -> str:
    """One header line naming leftovers of runs with no live process, or ""."""
    dead = {r: left for r, left in sorted(leftovers.items()) if r != current and r not in live}
    if not dead:
        return ""
    described = "; ".join(f"run {r}: {left.describe()}" for r, left in dead.items())
    commands = " / ".join(f"dra-conformance cleanup --run-id {r}" for r in dead)
    return (
        f"dra-conformance: this cluster holds leftovers of run(s) with no live process "
        f"({described}); remove them with: {commands}"
    )
