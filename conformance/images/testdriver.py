"""The Kubernetes e2e DRA test driver (`test/e2e/dra/test-driver` of k8s.io/kubernetes) as a
container image, built offline: the static Go binary from the module proxy (the same wrapper
module and caches as the node image's Kubernetes build) in an image holding nothing else.

It is the second driver the suite certifies with a profile only
(docs/examples/k8s-test-driver/); the profile names it as `install.image.builder:
k8s-test-driver`.
"""

from __future__ import annotations

from pathlib import Path

from conformance import docker_client, gobuild
from conformance.cache import build_lock, cache_root
from conformance.images import components
from conformance.images.cached_image import build_once
from conformance.images.tarbuild import TarBuilder
from conformance.images.versions import NodeVersions
from conformance.progress import Progress

REPOSITORY = "localhost/dra-conformance/k8s-test-driver"
PACKAGE = "k8s.io/kubernetes/test/e2e/dra/test-driver"
BINARY = "test-driver"
# Where the binary sits in the image; the DaemonSet's command names it.
BINARY_PATH = f"usr/local/bin/{BINARY}"


def image_ref(kubernetes_version: str) -> str:
    """One image per Kubernetes release: the driver's code is fixed by the module version."""
    return f"{REPOSITORY}:{kubernetes_version}"


def component(versions: NodeVersions) -> gobuild.GoComponent:
    """The test driver as a Go build: k8s.io/kubernetes with its staging modules pointed at
    their tagged releases, as for the node image's binaries."""
    work = cache_root() / "gobuild"
    work.mkdir(parents=True, exist_ok=True)
    return gobuild.GoComponent(
        name="k8s-test-driver",
        version=versions.kubernetes,
        module="k8s.io/kubernetes",
        packages=(PACKAGE,),
        replaces=components.staging_replaces(versions, work),  # same replaces as the node image
        binaries=(BINARY,),
        toolchain=components.toolchain_for(versions.kubernetes),
    )


def build_binary(versions: NodeVersions, progress: Progress) -> Path:
    """The built binary, cached by version (a complete output directory is never rebuilt)."""
    comp = component(versions)
    if not gobuild.is_built(comp):
        with build_lock(f"k8s-test-driver-{versions.kubernetes}"):
            gobuild.build(comp, progress)
    return gobuild.output_dir(comp) / BINARY


def image_layout(binary: Path) -> TarBuilder:
    """The image's root filesystem: the binary, and /tmp (klog may write there)."""
    tar = TarBuilder()
    tar.add_file(BINARY_PATH, binary, 0o755)
    tar.add_dir("tmp", 0o1777)
    return tar


def build_image(progress: Progress, versions: NodeVersions | None = None) -> str:
    versions = versions or NodeVersions()
    ref = image_ref(versions.kubernetes)
    return build_once(ref, "k8s-test-driver-image", lambda: _build_image(ref, versions, progress))


def _build_image(ref: str, versions: NodeVersions, progress: Progress) -> str:
    binary = build_binary(versions, progress)
    with progress.stage(f"build image {ref}"):
        data = image_layout(binary).close()
        repo, tag = ref.rsplit(":", 1)
        docker_client.client().api.import_image_from_data(
            data.read(),
            repository=repo,
            tag=tag,
            changes=[f'ENTRYPOINT ["/{BINARY_PATH}"]'],
        )
    return ref
