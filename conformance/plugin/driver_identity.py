"""What the report names as the driver it certified: the images its pods run (by digest, as the
kubelet reports them), what it was installed from (a Helm chart's name and version, the digest
of each manifest as applied, or "preinstalled"), and the profile's text.

Read once by the controller after the driver is installed and awaited; none of it decides a
test, so nothing here may stop a run: a failure to read the images is recorded with its reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.install.helm import chart_identity
from conformance.install.identity import install_objects
from conformance.install.manifests import applied_manifests, manifest_files, render_files
from conformance.kube.client import load_clients
from conformance.kube.driver_images import read_driver_images
from conformance.model.driver_workloads import DriverMarks
from conformance.model.profile import HelmInstall, ImageSpec, ManifestsInstall, Profile
from conformance.observe.redact import redact_text
from conformance.run.context import RunContext

# The controller's reading, kept for the facts it hands to xdist workers.
DRIVER_IDENTITY_KEY = pytest.StashKey[dict[str, Any]]()
# What this run's install applied (conformance.install.installer.install), when it installed.
INSTALLED_KEY = pytest.StashKey[dict[str, Any]]()


def driver_identity(context: RunContext, applied: dict[str, Any] | None = None) -> dict[str, Any]:
    """The RunFacts fields this module fills: driver_images, driver_images_error,
    driver_install, profile_text. `applied`: what the run's install returned, if it installed."""
    images, images_error = _images(context)
    return {
        "driver_images": tuple(images),
        "driver_images_error": images_error,
        "driver_install": _install(context.profile, applied),
        "profile_text": _profile_text(context.profile.source),
    }


def _images(context: RunContext) -> tuple[list[dict[str, Any]], str]:
    profile = context.profile
    readiness = profile.readiness
    daemonset = (
        (readiness.daemonset_namespace, readiness.daemonset_name)
        if readiness.daemonset_namespace and readiness.daemonset_name
        else None
    )
    try:
        try:
            created = install_objects(profile)  # a Namespace the manifests create is the driver's
        except Exception:  # noqa: BLE001 - the profile's own namespaces still say where to look
            created = []
        namespaces = DriverMarks.of(profile, created).namespaces
        k8s = load_clients(context.cluster.kubeconfig, context.cluster.context)
        return read_driver_images(k8s, namespaces, daemonset)
    except Exception as exc:  # noqa: BLE001 - the report says why, the run goes on
        status = getattr(exc, "status", None)
        detail = f"HTTP {status} {getattr(exc, 'reason', '')}".strip() if status else str(exc)
        first = detail.splitlines()[0] if detail else ""
        return [], redact_text(f"could not read the driver's pods: {type(exc).__name__}: {first}")


def _install(profile: Profile, applied: dict[str, Any] | None = None) -> dict[str, Any]:
    """`{"method": "helm", "chart", "version"[, "image"], "applied"}`, `{"method": "manifests",
    "image", "manifests": [{"path", "sha256"}], "applied"}` or `{"method": "preinstalled"}`.

    `applied` true: the digests and image are what this run's install applied; false: the
    driver was on the cluster before the run, and the profile's files are described instead."""
    if applied and applied.get("method") == "manifests":
        return {**_go_module(getattr(profile.install, "image", None)), **applied}
    described = _described(profile)
    return {**described, **applied} if applied else described


def _described(profile: Profile) -> dict[str, Any]:
    method = profile.install
    try:
        if isinstance(method, HelmInstall):
            return {
                "method": "helm",
                **chart_identity(method),
                **_go_module(method.image),
                "applied": False,
            }
        if isinstance(method, ManifestsInstall):
            image = _substituted_image(method.image)
            files = manifest_files(method.paths)
            rendered = (
                render_files(files, image)
                if image is not None
                else [(f, f.read_text()) for f in files]
            )
            return {
                "method": "manifests",
                **_go_module(method.image),
                "image": image,
                "manifests": applied_manifests(rendered),
                "applied": False,
            }
    except Exception as exc:  # noqa: BLE001 - a file gone since the install: say so
        return {"method": method.method, "error": f"{type(exc).__name__}: {exc}"}
    return {"method": "preinstalled"}


def _go_module(spec: ImageSpec | None) -> dict[str, str]:
    """`{"goModule": "module@version"}`: the public release the driver was built from."""
    if spec is None or spec.go_module is None:
        return {}
    return {"goModule": f"{spec.go_module.module}@{spec.go_module.version}"}


def _substituted_image(spec: ImageSpec | None) -> str | None:
    """The reference an install puts in place of IMAGE_PLACEHOLDER, when the profile names it;
    None for the suite's own builders, whose reference is computed as they build (the files are
    then hashed as read, and the images read from the pods say what ran)."""
    if spec is None or spec.builder is not None:
        return None
    return spec.ref


def _profile_text(source: Path) -> str:
    """The profile as read, without credentials (summary.json makes its local paths portable)."""
    try:
        return redact_text(Path(source).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return ""
