"""Before any requirement runs: can this cluster run the workload image, and can the harness
read what it needs? Every scenario's pods use the workload image; when the nodes cannot get
it, every test would wait out its timeout and the driver would be blamed. The preflight runs
one short pod with that image (no claim) on a node the profile selects, in a namespace of its
own labelled with the run, reads the pod's log and events as the scenarios do, and cleans up.
When it cannot, the run stops at set-up (no requirement runs) with one line naming the image
and the remedy. On a cluster it did not create, the profile's cluster block is checked first
(conformance.cluster.block_check): what the cluster lacks stops the run the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubernetes.client.exceptions import ApiException

from conformance.errors import ClusterError
from conformance.kube import objects, state, waits
from conformance.kube.builders import Builders
from conformance.kube.cleanup import (
    NamespaceRegistry,
    create_test_namespace,
    release_namespace,
)
from conformance.kube.client import K8sClients, load_clients
from conformance.kube.harness_causes import image_pull_failure
from conformance.model.naming import namespace_name
from conformance.model.profile import Profile
from conformance.run.context import RunContext

POD = "preflight"
MESSAGE_LIMIT = 200  # characters of a kubelet message in the one line

REMEDY = (
    "pass --dra-workload-image REF (any image with sh, env and sleep that the nodes can pull), "
    "or load {image} into every node (kind: `dra-conformance cluster up --name NAME` and "
    "`dra-conformance driver install --name NAME` load it; or `kind load docker-image {image} "
    "--name NAME`)"
)


class PreflightError(ClusterError):
    """The cluster cannot run the workload image, or the harness cannot read what it needs.
    Said on one line: the run's set-up error is one line."""

    def __str__(self) -> str:
        return f"{self.problem} -> {self.remedy}" if self.remedy else self.problem


def _short(text: Any) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 3] + "..."


def pod_state_line(pod: Mapping[str, Any] | None) -> str:
    """The pod's state in one line: phase, each container's waiting or terminated reason and
    message, an unmet scheduling condition."""
    if pod is None:
        return "the pod was not found"
    status = pod.get("status") or {}
    parts = [f"phase {status.get('phase') or 'unknown'}"]
    for container in status.get("containerStatuses") or ():
        for key in ("waiting", "terminated"):
            found = (container.get("state") or {}).get(key)
            if found:
                message = f": {_short(found.get('message'))}" if found.get("message") else ""
                parts.append(
                    f"container {container.get('name')} {key} ({found.get('reason')}){message}"
                )
    for condition in status.get("conditions") or ():
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            parts.append(f"not scheduled: {_short(condition.get('message'))}")
    return ", ".join(parts)


def hopeless(pod: Mapping[str, Any] | None) -> str | None:
    """Why the preflight pod will not run by waiting longer (pure): its image cannot be
    pulled, or its container exited (the workload only exits when asked: the image lacks
    sh, env or sleep)."""
    failure = image_pull_failure(pod)
    if failure is not None:
        return f"the nodes cannot pull it ({failure.reason}: {_short(failure.message)})"
    for container in ((pod or {}).get("status") or {}).get("containerStatuses") or ():
        now, last = container.get("state") or {}, container.get("lastState") or {}
        ended = now.get("terminated") or last.get("terminated")
        if ended:
            return (
                f"its container exited ({ended.get('reason')}, exit code "
                f"{ended.get('exitCode')}): the image must have sh, env and sleep"
            )
    if (pod or {}).get("status", {}).get("phase") in ("Succeeded", "Failed"):
        return f"the pod ended ({pod_state_line(pod)})"
    return None


def check_workload_image(context: RunContext) -> None:
    """Raise PreflightError unless one pod with the workload image runs on a node the
    profile selects and its log and events can be read. Nothing to prove when no workload
    will run (the driver never became ready, or no node is selected)."""
    if context.readiness_failure is not None or not context.nodes or not context.workload_image:
        return
    k8s = load_clients(context.cluster.kubeconfig, context.cluster.context)
    build = Builders(context.run_id)
    registry = NamespaceRegistry(context.harness_dir / "namespaces")
    namespace = namespace_name(context.run_id, POD)
    try:
        create_test_namespace(k8s, build, registry, namespace, POD)
    except ApiException as exc:
        raise _access_error(f"create namespace {namespace}", exc) from None
    try:
        _prove(context, k8s, build, namespace, sorted(context.nodes)[0])
    finally:
        # Waits only until its pod is gone; the namespace finishes deleting in the background.
        release_namespace(k8s, namespace, timeout=context.timeout("podDeleted"))


def _prove(
    context: RunContext, k8s: K8sClients, build: Builders, namespace: str, node: str
) -> None:
    image = context.workload_image
    try:
        labels = k8s.to_dict(k8s.core.read_node(node))["metadata"].get("labels") or {}
        hostname = labels.get("kubernetes.io/hostname") or node
        objects.create(
            k8s,
            build.pod(
                POD,
                namespace,
                image=image,
                node_selector={"kubernetes.io/hostname": hostname},
                # The node may be cordoned or tainted by a disruptive test of another run on
                # the cluster (or one a killed run left): the image is what is proven here.
                tolerations=[{"operator": "Exists"}],
                restart_policy="Never",
                termination_grace_period_seconds=0,
            ),
        )
    except ApiException as exc:
        raise _access_error(f"create a pod in namespace {namespace}", exc) from None
    last: dict[str, Any] = {}

    def read() -> dict[str, Any] | None:
        last["pod"] = state.read_pod(k8s, namespace, POD)
        return last["pod"]

    timeout = context.timeout("podRunning")
    try:
        waits.wait_until(
            read,
            lambda pod: state.pod_is_ready(pod),
            describe=f"the preflight pod {namespace}/{POD} with image {image} to run",
            timeout=timeout,
            abort=hopeless,
        )
    except (waits.WaitAborted, waits.WaitTimeout):
        pod = last.get("pod")
        why = hopeless(pod) or (
            f"it was not running after {timeout:.0f} s on node {node} ({pod_state_line(pod)})"
        )
        raise PreflightError(
            f"the cluster cannot run the workload image {image}: {why}",
            REMEDY.format(image=image),
        ) from None
    except ApiException as exc:
        raise _access_error(f"read pod {namespace}/{POD}", exc) from None
    _read_output(context, k8s, namespace)


def _read_output(context: RunContext, k8s: K8sClients, namespace: str) -> None:
    """The scenarios read what a workload printed from its log, and why a pod is stuck from
    its events: both must be readable."""
    seen: dict[str, str] = {}

    def output() -> state.WorkloadOutput | None:
        try:
            return state.pod_workload_output(k8s, namespace, POD)
        except ValueError as exc:  # not printed yet
            seen["problem"] = str(exc)
            return None

    try:
        waits.wait_until(
            output,
            lambda out: out is not None,
            describe=f"the output of the preflight pod {namespace}/{POD}",
            timeout=context.timeout("converge"),
        )
    except waits.WaitTimeout:
        raise PreflightError(
            f"the workload image {context.workload_image} runs but its pod printed no "
            f"environment: {_short(seen.get('problem'))}",
            "pass --dra-workload-image REF: any image with sh, env and sleep",
        ) from None
    except ApiException as exc:
        raise _access_error(f"read the log of pod {namespace}/{POD}", exc) from None
    try:
        state.events_for(k8s, namespace)
    except ApiException as exc:
        raise _access_error(f"list the events of namespace {namespace}", exc) from None


def _access_error(what: str, exc: ApiException) -> PreflightError:
    return PreflightError(
        f"the harness cannot {what}: HTTP {exc.status} {exc.reason}",
        "run with an account that may create namespaces and pods and read pods, pod logs "
        "and events (--kubeconfig/--context)",
    )


def check_cluster_block(
    profile: Profile, kubeconfig: str, context: str | None, say: Callable[[str], None]
) -> None:
    """On a cluster the suite did not create, before the driver is installed: raise
    PreflightError (one line naming the node and the setting) when it lacks what the profile's
    cluster block asks for; `say` each setting that cannot be checked from here."""
    if profile.cluster.empty:
        return
    from conformance.cluster import block_check
    from conformance.node_access.commands import ProfileNodeCommands

    # containerd's settings and the mounts are read on the nodes only as the profile says
    run_on_node = (
        ProfileNodeCommands(profile.node_commands, kubeconfig).run
        if profile.node_commands.exec
        else None
    )
    try:
        warnings = block_check.require(
            load_clients(kubeconfig, context),
            profile.cluster,
            profile.node_selector,
            run_on_node,
        )
    except ClusterError as exc:
        raise PreflightError(exc.problem, exc.remedy) from None
    for warning in warnings:
        say(f"dra-conformance: {warning}")
