"""A node's CDI spec files and the kubelet's DRA checkpoint, read by a short-lived pod
(DRA-CORE-008; which specs are a claim's: conformance.model.cdi_lookup).

The pod mounts, read-only (hostPath: a privileged pod in Pod Security terms), the parents of the
container runtime's spec directories (the defaults /etc/cdi and /var/run/cdi, and the profile's
`cdi.specDirs`) and the kubelet's root directory (`cdi.kubeletRootDir`), and prints every spec
file (.json, .yaml) and the checkpoint `dra_manager_state`, each between marker lines.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

from kubernetes.client.exceptions import ApiException

from conformance.kube import objects, state, waits
from conformance.model.cdi_lookup import (
    CHECKPOINT,
    CHECKPOINT_END,
    CHECKPOINT_FILE,
    END,
    SPEC,
    SPEC_END,
    NodeCdi,
    parse_dump,
    reader_mounts,
)
from conformance.model.cdi_paths import DEFAULT_KUBELET_ROOT_DIR, DEFAULT_SPEC_DIRS
from conformance.model.outcome import not_run
from conformance.observe.steps import attach_yaml, step
from conformance.scenario_api.scope import WorkloadScope

HOST = "/host"


def dump_script(
    dirs: Sequence[str] = DEFAULT_SPEC_DIRS,
    kubelet_root_dir: str = DEFAULT_KUBELET_ROOT_DIR,
    host: str = HOST,
) -> str:
    """Print each spec file in `dirs` and the kubelet's checkpoint between marker lines, then
    END (so a truncated log is told apart from none). Needs only sh and cat."""
    lines = []
    for directory in dirs:
        mounted = shlex.quote(host + directory)
        lines.append(
            f'for f in {mounted}/*.json {mounted}/*.yaml; do [ -f "$f" ] || continue; '
            f'echo "{SPEC}${{f#{host}}}"; cat "$f"; echo; echo \'{SPEC_END}\'; done'
        )
    checkpoint = shlex.quote(f"{host}{kubelet_root_dir}/{CHECKPOINT_FILE}")
    lines.append(
        f"if [ -f {checkpoint} ]; then echo '{CHECKPOINT}'; cat {checkpoint}; echo; "
        f"echo '{CHECKPOINT_END}'; fi"
    )
    lines.append(f"echo '{END}'")
    return "\n".join(lines)


def reader_pod(
    body: dict[str, Any],
    dirs: Sequence[str] = DEFAULT_SPEC_DIRS,
    kubelet_root_dir: str = DEFAULT_KUBELET_ROOT_DIR,
) -> dict[str, Any]:
    """`body` (a pod with one container) with what `dump_script` reads mounted read-only."""
    mounts = reader_mounts(dirs, kubelet_root_dir)
    volumes = [
        {"name": f"host-{i}", "hostPath": {"path": path, "type": "Directory"}}
        for i, path in enumerate(mounts)
    ]
    spec = body["spec"]
    spec["volumes"] = volumes
    spec["containers"][0]["volumeMounts"] = [
        {"name": v["name"], "mountPath": HOST + path, "readOnly": True}
        for v, path in zip(volumes, mounts, strict=True)
    ]
    return body


def read_node_cdi(workload: WorkloadScope, node: str, name: str) -> NodeCdi:
    """The CDI spec files and the kubelet's DRA checkpoint of `node`, read by pod `name`
    (deleted after) in the workload's namespace."""
    paths = workload.profile.cdi
    dirs = paths.spec_dirs
    ref = workload.ref(name)
    checkpoint = f"{paths.kubelet_root_dir}/{CHECKPOINT_FILE}"
    with step(f"read the CDI spec files in {', '.join(dirs)} and {checkpoint} on node {node}"):
        body = workload.build.pod(
            name,
            workload.namespace,
            image=workload.context.workload_image,
            containers=[
                {
                    "name": "read",
                    "command": ["/bin/sh", "-c", dump_script(dirs, paths.kubelet_root_dir)],
                }
            ],
            node_name=node,
            restart_policy="Never",
            termination_grace_period_seconds=0,
        )
        try:
            objects.create(workload.k8s, reader_pod(body, dirs, paths.kubelet_root_dir))
        except ApiException as exc:
            if exc.status in (401, 403):
                not_run(
                    f"a pod mounting {', '.join(reader_mounts(dirs, paths.kubelet_root_dir))} "
                    f"of node {node} read-only (hostPath) was refused: {exc.status} "
                    f"{exc.reason}: {exc.body}",
                    "allow hostPath pods (Pod Security level privileged) in the test namespaces",
                )
            raise
        phase = state.pod_phase
        waits.wait_until(
            lambda: state.read_pod(workload.k8s, workload.namespace, name),
            lambda pod: phase(pod) == "Succeeded",
            describe=f"pod {ref} (reading the CDI spec files of node {node}) to succeed",
            timeout=workload.timeout("podRunning"),
            show=state.pod_summary,
            abort=lambda pod: "it failed" if phase(pod) == "Failed" else None,
        )
        log = workload.k8s.core.read_namespaced_pod_log(name, workload.namespace, container="read")
        objects.delete(workload.k8s, "Pod", name, workload.namespace)
        found = parse_dump(log)
        assert found is not None, f"pod {ref} printed no complete listing: {log[-2000:]!r}"
        attach_yaml(
            f"CDI spec files on {node}",
            {"specs": sorted(found.specs), "checkpoint": found.checkpoint is not None},
        )
        return found
