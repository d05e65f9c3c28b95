"""The control-plane component image the test API server runs from, built when missing.

The offline node-image build commits one image holding kube-apiserver, the other control-plane
binaries and etcd, tagged with every name kubeadm uses. A machine that never built a node image
(a cold CI runner, before the e2e tier's cluster fixture) builds just that image here, from the
same code and caches, under their build locks; nothing is ever pulled.
"""

from __future__ import annotations

from conformance import docker_client, gobuild
from conformance.cache import cache_root
from conformance.images import components, nodeimage, rootfs
from conformance.images.versions import NodeVersions
from conformance.progress import Progress

KUBERNETES = "v1.37.2"
# The Go components the image holds (containerd and kind belong to the node image only).
IMAGE_COMPONENTS = ("kubernetes", "etcd")


def apiserver_ref(versions: NodeVersions) -> str:
    return f"registry.k8s.io/kube-apiserver:{versions.kubernetes}"


def _build(versions: NodeVersions, progress: Progress) -> None:
    base = rootfs.ensure_base_image(versions, progress)
    bins = {
        c.name: gobuild.build(c, progress)
        for c in components.components(versions, cache_root() / "gobuild")
        if c.name in IMAGE_COMPONENTS
    }
    images = nodeimage.kubeadm_images(bins["kubernetes"] / "kubeadm", versions)
    # The same tag list the node-image build uses, so that build later finds them all present.
    tags = [i for i in images if "/coredns" not in i and "/pause:" not in i]
    nodeimage.build_components_image(base, bins, tags, progress)


def ensure_component_image(versions: NodeVersions | None = None) -> str:
    """The kube-apiserver image reference (etcd is in the same image), built if missing."""
    versions = versions or NodeVersions(kubernetes=KUBERNETES)
    ref = apiserver_ref(versions)
    if not docker_client.image_exists(ref):
        # Each build step takes its own lock (rootfs, Go builds, the component image itself).
        _build(versions, Progress())
    return ref
