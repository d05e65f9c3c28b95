"""The driver's image: built (a named builder, a Go module, or `docker build` through the
Docker SDK) and loaded into the kind nodes when the profile asks, so an air-gapped kind
cluster never pulls."""

from __future__ import annotations

from dataclasses import dataclass

from conformance.install.errors import InstallError
from conformance.model.profile import ImageSpec
from conformance.progress import Progress

# In manifests and helm values, replaced by the image the profile builds (install.image).
IMAGE_PLACEHOLDER = "IMAGE_PLACEHOLDER"


@dataclass(frozen=True)
class KindTarget:
    """Where locally built images go: the kind cluster's name (None: an existing cluster)."""

    cluster_name: str | None = None


def _docker_build(spec: ImageSpec, progress: Progress) -> None:
    from docker.errors import APIError, BuildError

    from conformance import docker_client

    assert spec.ref is not None and spec.build_context is not None
    with progress.stage(f"docker build {spec.ref}"):
        try:
            docker_client.client().images.build(
                path=str(spec.build_context),
                dockerfile=str(spec.dockerfile) if spec.dockerfile is not None else None,
                buildargs=dict(spec.build_args),
                tag=spec.ref,
                rm=True,
            )
        except (BuildError, APIError) as exc:
            log = getattr(exc, "build_log", None) or ()
            lines = [str(e.get("stream") or e.get("error") or "") for e in log]
            tail = "".join(lines)[-2000:] or str(exc)
            raise InstallError(
                f"docker build of {spec.ref} failed: {exc}\n{tail}",
                "fix the build, or build the image yourself and drop install.image.build",
            ) from None


def _build_image(spec: ImageSpec, progress: Progress) -> str:
    if spec.go_module is not None:
        from conformance.images import gomodule

        return gomodule.build_image(spec.go_module, progress)
    if spec.builder is not None:
        from conformance.images import harness

        return harness.build_named_image(spec.builder, progress)
    assert spec.ref is not None  # the profile guarantees ref when there is no builder
    if spec.build_context is not None:
        _docker_build(spec, progress)
    return spec.ref


def prepare_image(spec: ImageSpec | None, target: KindTarget, progress: Progress) -> str | None:
    """Build the image if the profile says how, and load it into the kind nodes."""
    if spec is None:
        return None
    ref = _build_image(spec, progress)
    if spec.load and target.cluster_name:
        from conformance.cluster import kind_images

        kind_images.load_into_kind(target.cluster_name, ref, progress)
    return ref
