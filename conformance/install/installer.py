"""Install, uninstall and await a driver the way its profile says: manifests (server-side
apply, conformance/install/manifests.py), helm (conformance/install/helm.py), or preinstalled
(nothing to do). The driver's image is built or loaded first when the profile asks for it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import tenacity

from conformance.errors import ClusterError
from conformance.install.errors import InstallError
from conformance.install.helm import helm_install, helm_uninstall
from conformance.install.image import KindTarget, prepare_image
from conformance.install.manifests import (
    applied_manifests,
    apply_manifests,
    delete_manifests,
    manifest_files,
    parse_documents,
    render_documents,
    render_files,
    uses_workload_image,
)
from conformance.kube.client import K8sClients, load_clients
from conformance.kube.readiness import (
    ReadinessState,
    readiness_problems,
    readiness_state,
    what_the_cluster_said,
)
from conformance.model.frozen import FrozenMap
from conformance.model.profile import HelmInstall, ManifestsInstall, Profile
from conformance.model.readiness_failure import ReadinessFailure
from conformance.progress import Progress

__all__ = [
    "DriverNotReady",
    "InstallError",
    "KindTarget",
    "ensure_reachable",
    "install",
    "uninstall",
    "wait_ready",
]


def install(
    profile: Profile,
    kubeconfig: str,
    context: str | None = None,
    target: KindTarget | None = None,
    progress: Progress | None = None,
    built_image: str | None = None,
) -> dict[str, Any]:
    """Apply the profile's install method. Idempotent: a second install changes nothing.

    Returns what was applied, as summary.json's `driver.install` names it: `{"method":
    "manifests", "image", "manifests": [{"path", "sha256"}], "applied": True}` (each file's
    text as applied, the image substituted), `{"method": "helm", "image", "applied": True}`
    or `{"method": "preinstalled"}`. `built_image`: the image a background build made
    (conformance/install/prebuild.py), loaded rather than built again."""
    progress = progress or Progress()
    target = target or KindTarget()
    method = profile.install
    if isinstance(method, ManifestsInstall):
        image = prepare_image(method.image, target, progress, built_image)
        files = manifest_files(method.paths)
        rendered = render_files(files, image, _workload_image(files, target, progress))
        documents = parse_documents(rendered)
        with progress.stage(f"install {profile.driver} (server-side apply)"):
            apply_manifests(load_clients(kubeconfig, context), documents)
        return {
            "method": "manifests",
            "image": image,
            "manifests": applied_manifests(rendered),
            "applied": True,
        }
    if isinstance(method, HelmInstall):
        image = prepare_image(method.image, target, progress, built_image)
        helm_install(method, image, kubeconfig, context, progress)
        return {"method": "helm", "image": image, "applied": True}
    return {"method": "preinstalled"}


def _workload_image(files: list[Path], target: KindTarget, progress: Progress) -> str | None:
    """The suite's workload image when a manifest names it: built if missing and, on a kind
    cluster, loaded into its nodes (an existing cluster's nodes must be able to pull it)."""
    if not uses_workload_image(files):
        return None
    from conformance.cluster.kind_images import workload_image

    return workload_image(target.cluster_name, progress)


def uninstall(
    profile: Profile, kubeconfig: str, context: str | None = None, progress: Progress | None = None
) -> None:
    """Remove what install created (manifests in reverse order, or the helm release)."""
    progress = progress or Progress()
    method = profile.install
    if isinstance(method, ManifestsInstall):
        documents = render_documents(manifest_files(method.paths), "unused")
        with progress.stage(f"uninstall {profile.driver}"):
            delete_manifests(load_clients(kubeconfig, context), documents)
    elif isinstance(method, HelmInstall):
        helm_uninstall(method, kubeconfig, context, progress)


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


def wait_ready(
    profile: Profile,
    kubeconfig: str,
    context: str | None = None,
    timeout: float | None = None,
    progress: Progress | None = None,
) -> ReadinessState:
    """Until the DaemonSet is rolled out and ready and every selected node has its slices;
    DriverNotReady (with what the cluster said) when that does not happen in time."""
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
