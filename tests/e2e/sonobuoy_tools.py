"""Sonobuoy for the e2e test only: its CLI built from the Go module proxy (cached like kind and
helm), and its aggregator/worker image made here from that one static binary (no registry).

Upstream's image holds `/sonobuoy` with working directory `/`; the aggregator and the plugin's
worker sidecar both run `/sonobuoy <command>`, so the same file in a scratch image serves both.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from conformance import docker_client, gobuild
from conformance.cache import digest
from conformance.images.cached_image import build_once
from conformance.images.tarbuild import TarBuilder
from conformance.progress import Progress

SONOBUOY_VERSION = "v0.57.3"
# Built with a Go of its own release line, fetched from the Go module proxy: since the net/url
# fixes of Go 1.24.8 and 1.25.2, url.Parse refuses a bracketed IPv4 host, and Sonobuoy's
# workers dial the aggregator at exactly such a URL (https://[10.244.1.3]:8080).
SONOBUOY_GO = "go1.24.7"
MODULE = "github.com/vmware-tanzu/sonobuoy"
IMAGE_REPOSITORY = "localhost/dra-conformance/sonobuoy"


def sonobuoy_component() -> gobuild.GoComponent:
    return gobuild.GoComponent(
        name="sonobuoy",
        version=SONOBUOY_VERSION,
        module=MODULE,
        packages=(MODULE,),
        binaries=("sonobuoy",),
        toolchain=SONOBUOY_GO,
    )


def sonobuoy_binary(progress: Progress) -> Path:
    """The built CLI (cold: a few minutes on 2 cores, then cached)."""
    return gobuild.build(sonobuoy_component(), progress) / "sonobuoy"


def sonobuoy_image(binary: Path, progress: Progress) -> str:
    """A local image of `binary` at /sonobuoy, tagged by its content."""
    sha = hashlib.sha256(binary.read_bytes()).hexdigest()
    ref = f"{IMAGE_REPOSITORY}:{SONOBUOY_VERSION}-{digest('sonobuoy', sha)}"

    def build() -> str:
        with progress.stage(f"build {ref}"):
            tar = TarBuilder()
            tar.add_file("sonobuoy", binary, 0o755)
            tar.add_dir("tmp", 0o1777)
            tar.add_dir("etc")
            repo, tag = ref.rsplit(":", 1)
            docker_client.client().api.import_image_from_data(
                tar.close().read(),
                repository=repo,
                tag=tag,
                changes=[
                    "WORKDIR /",
                    'CMD ["/sonobuoy", "aggregator", "--no-exit", "-v", "3", "--logtostderr"]',
                ],
            )
        return ref

    return build_once(ref, "sonobuoy-image", build)
