"""The CDI spec files on a node that name a claim (DRA-CORE-008), read by a short-lived pod.

A CDI-based driver writes one spec per prepared claim, with the claim UID in the file name
(the fake driver: `<driver>-<claimUID>.json`; the kubeletplugin helpers and the example
driver: a transient spec name built from the claim UID) or at least in its contents (device
names). The pod mounts the parents of the container runtime's default CDI spec directories
read-only (hostPath: a privileged pod in Pod Security terms) and prints every spec file
whose name or contents hold the UID. Parents, not the directories: a missing directory is
then just empty, and `/var/run` (a symlink on most hosts) is resolved on the host.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException

from conformance.kube import objects, state, waits
from conformance.model.outcome import not_run
from conformance.report.steps import attach_yaml, step
from conformance.scenario_api.scope import WorkloadScope

# containerd's and CRI-O's default cdi_spec_dirs.
CDI_SPEC_DIRS = ("/etc/cdi", "/var/run/cdi")
HOST = "/host"
END = "=== CDI END"


@dataclass(frozen=True)
class SpecFile:
    path: str  # on the node
    in_name: bool
    in_contents: bool

    def __str__(self) -> str:
        where = [w for w, hit in (("name", self.in_name), ("contents", self.in_contents)) if hit]
        return f"{self.path} (UID in its {' and '.join(where)})"


def listing_script(uid: str, dirs: Sequence[str] = CDI_SPEC_DIRS, host: str = HOST) -> str:
    """Print `NAME <path>` / `CONTENT <path>` for each spec file (.json, .yaml) in `dirs` whose
    name / contents hold `uid`, then END (so a truncated log is told apart from none)."""
    quoted = shlex.quote(uid)
    lines = []
    for directory in dirs:
        mounted = shlex.quote(host + directory)
        lines.append(
            f'for f in {mounted}/*.json {mounted}/*.yaml; do [ -f "$f" ] || continue; '
            f'p="${{f#{host}}}"; '
            f'case "${{f##*/}}" in *{quoted}*) echo "NAME $p";; esac; '
            f'grep -qF {quoted} "$f" && echo "CONTENT $p"; done'
        )
    lines.append(f"echo '{END}'")
    return "\n".join(lines)


def parse_listing(text: str) -> list[SpecFile] | None:
    """The spec files the script reported; None when its END line is missing."""
    if END not in text:
        return None
    names: set[str] = set()
    contents: set[str] = set()
    for line in text.splitlines():
        kind, _, path = line.partition(" ")
        if kind == "NAME":
            names.add(path)
        elif kind == "CONTENT":
            contents.add(path)
    return [SpecFile(p, p in names, p in contents) for p in sorted(names | contents)]


def reader_pod(body: dict[str, Any], dirs: Sequence[str] = CDI_SPEC_DIRS) -> dict[str, Any]:
    """`body` (a pod with one container) with the parents of `dirs` mounted read-only."""
    parents = sorted({posixpath.dirname(d.rstrip("/")) for d in dirs})
    volumes = [
        {"name": f"host-{i}", "hostPath": {"path": parent, "type": "Directory"}}
        for i, parent in enumerate(parents)
    ]
    spec = body["spec"]
    spec["volumes"] = volumes
    spec["containers"][0]["volumeMounts"] = [
        {"name": v["name"], "mountPath": HOST + parent, "readOnly": True}
        for v, parent in zip(volumes, parents, strict=True)
    ]
    return body


def cdi_specs_naming(workload: WorkloadScope, uid: str, node: str, name: str) -> list[SpecFile]:
    """The spec files on `node` naming claim `uid`, read by pod `name` (deleted after) in the
    workload's namespace."""
    dirs = ", ".join(CDI_SPEC_DIRS)
    ref = workload.ref(name)
    with step(f"list the CDI spec files naming claim {uid} in {dirs} on node {node}"):
        body = workload.build.pod(
            name,
            workload.namespace,
            image=workload.context.workload_image,
            containers=[{"name": "list", "command": ["/bin/sh", "-c", listing_script(uid)]}],
            node_name=node,
            restart_policy="Never",
            termination_grace_period_seconds=0,
        )
        try:
            objects.create(workload.k8s, reader_pod(body))
        except ApiException as exc:
            if exc.status in (401, 403):
                not_run(
                    f"a pod mounting {dirs} of node {node} read-only (hostPath) was refused: "
                    f"{exc.status} {exc.reason}: {exc.body}",
                    "allow hostPath pods (Pod Security level privileged) in the test namespaces",
                )
            raise
        phase = state.pod_phase
        waits.wait_until(
            lambda: state.read_pod(workload.k8s, workload.namespace, name),
            lambda pod: phase(pod) == "Succeeded",
            describe=f"pod {ref} (listing the CDI spec files of node {node}) to succeed",
            timeout=workload.timeout("podRunning"),
            show=state.pod_summary,
            abort=lambda pod: "it failed" if phase(pod) == "Failed" else None,
        )
        log = workload.k8s.core.read_namespaced_pod_log(name, workload.namespace, container="list")
        objects.delete(workload.k8s, "Pod", name, workload.namespace)
        found = parse_listing(log)
        assert found is not None, f"pod {ref} printed no complete listing: {log!r}"
        attach_yaml(f"CDI spec files naming {uid} on {node}", [str(f) for f in found])
        return found
