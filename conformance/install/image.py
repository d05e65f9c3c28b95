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


def image_source(spec: ImageSpec) -> str | None:
    """How the profile's image is had without asking Docker: `built` here (a builder, a Go
    module, a build context) or `nodes` (not loaded: the nodes pull it); None: it must be in
    the local engine or pulled into it."""
    if spec.go_module is not None or spec.builder is not None or spec.build_context is not None:
        return "built"
    return None if spec.load else "nodes"


def check_image_obtainable(spec: ImageSpec | None, kind_cluster: str | None = None) -> None:
    """Before any cluster work: the driver's image can be had (built here, in the local engine,
    on every node of the kind cluster `kind_cluster` already, or pullable from its registry),
    else one line saying which image and what to do."""
    if spec is None or image_source(spec) is not None:
        return
    from docker.errors import APIError, DockerException

    from conformance import docker_client
    from conformance.cluster import kind_images

    assert spec.ref is not None
    if docker_client.image_exists(spec.ref):
        return
    if kind_cluster and kind_images.every_node_has_image(kind_cluster, spec.ref):
        return
    try:
        docker_client.client().api.inspect_distribution(spec.ref)
    except (APIError, DockerException) as exc:
        said = getattr(exc, "explanation", None) or str(exc)
        raise InstallError(
            f"the driver image {spec.ref} is not in the local Docker engine, the profile gives "
            f"no build for it, and it cannot be pulled ({str(said).splitlines()[0]})",
            f"build or pull it first (docker pull {spec.ref}), or say how to build it in the "
            "profile's install.image (builder, build or goModule; docs/profile.md)",
        ) from None


def _pull(ref: str, progress: Progress) -> None:
    from docker.errors import APIError

    from conformance import docker_client

    if docker_client.image_exists(ref):
        return
    with progress.stage(f"docker pull {ref}"):
        try:
            docker_client.client().images.pull(ref)
        except APIError as exc:
            raise InstallError(
                f"docker pull {ref} failed: {exc.explanation or exc}",
                f"pull it yourself (docker pull {ref}) or build it (install.image.build)",
            ) from None


def build_image(spec: ImageSpec, progress: Progress) -> str:
    """The image built as the profile says (nothing to build: its reference)."""
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


def prepare_image(
    spec: ImageSpec | None, target: KindTarget, progress: Progress, built: str | None = None
) -> str | None:
    """Build the image if the profile says how (unless `built` already), and load it into the
    kind nodes."""
    if spec is None:
        return None
    ref = built or build_image(spec, progress)
    if spec.load and target.cluster_name:
        from conformance.cluster import kind_images

        # Loaded from the local engine: pulled there first, when a node lacks it.
        pull = (lambda: _pull(ref, progress)) if image_source(spec) is None else None
        kind_images.load_into_kind(target.cluster_name, ref, progress, pull)
    return ref
