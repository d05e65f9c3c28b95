"""Run a command in a container (the API server's exec, over a websocket), and restart a
workload container by asking it to exit."""

from __future__ import annotations

from collections.abc import Sequence

from kubernetes import client as k8s_client
from kubernetes.stream import stream

from conformance.kube.builders import EXIT_FILE
from conformance.kube.client import K8sClients


def exec_in_container(
    k8s: K8sClients, namespace: str, pod: str, container: str, argv: Sequence[str]
) -> str:
    """stdout+stderr of `argv`. A private ApiClient: `stream` swaps the client's request
    function while it runs, which must not race with other calls on the shared client."""
    api = k8s_client.CoreV1Api(k8s_client.ApiClient(k8s.api_client.configuration))
    return stream(
        api.connect_get_namespaced_pod_exec,
        pod,
        namespace,
        command=list(argv),
        container=container,
        stderr=True,
        stdin=False,
        stdout=True,
        tty=False,
    )


def ask_workload_to_exit(k8s: K8sClients, namespace: str, pod: str, container: str) -> None:
    """The workload sleeps until EXIT_FILE exists; it then exits 0 and, with the default
    restartPolicy Always, the kubelet starts the container again."""
    exec_in_container(k8s, namespace, pod, container, ["/bin/sh", "-c", f"touch {EXIT_FILE}"])


FOUND_MARKER, ABSENT_MARKER = "--dra-file-found--", "--dra-file-absent--"


def read_container_file(
    k8s: K8sClients, namespace: str, pod: str, container: str, path: str
) -> str | None:
    """The text of file `path` in the container, None when there is no such file. A marker line
    first tells an absent file from an empty one and from an error message."""
    script = f'if [ -f "$1" ]; then echo {FOUND_MARKER}; cat "$1"; else echo {ABSENT_MARKER}; fi'
    out = exec_in_container(k8s, namespace, pod, container, ["/bin/sh", "-c", script, "sh", path])
    marker, _, text = out.partition("\n")
    if marker == ABSENT_MARKER:
        return None
    if marker != FOUND_MARKER:
        raise RuntimeError(f"reading {path} in container {container} of {namespace}/{pod}: {out}")
    return text
