"""A third-party driver built from a public Go module at a pinned version (the profile's
`install.image.goModule`): its main packages compiled from the Go module proxy, offline and
cached by module and version like the suite's other Go builds, in an image holding only the
static binaries and /tmp, tagged `localhost/dra-conformance/go-module/<name>:<version>`.

A chart given as `goModule:<path>` is read from the same module version in the module cache,
so the binaries and the chart come from one release.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from conformance import gobuild
from conformance.errors import BuildError
from conformance.images.tarbuild import TarBuilder
from conformance.model.profile import GO_MODULE_CHART_PREFIX, GoModuleSpec
from conformance.model.profile_gomodule import binary_name, import_path
from conformance.progress import Progress

REPOSITORY_PREFIX = "localhost/dra-conformance/go-module"
# Records what was built, so a changed package list or binary directory rebuilds the image
# even though the tag (module version) is the same.
KEY_LABEL = "io.dra-conformance.go-module.key"


def image_name(module: str) -> str:
    """The module path's last element, as a lowercase image-name component."""
    last = module.rstrip("/").rsplit("/", 1)[-1].lower()
    if re.fullmatch(r"v[0-9]+", last) and "/" in module:  # a major-version suffix: .../v2
        last = module.rstrip("/").rsplit("/", 2)[-2].lower()
    return re.sub(r"[^a-z0-9._-]+", "-", last).strip("._-") or "module"


def image_tag(version: str) -> str:
    """A docker tag from a module version; `+incompatible` has a character tags refuse."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", version)[:128]


def image_ref(spec: GoModuleSpec) -> str:
    return f"{REPOSITORY_PREFIX}/{image_name(spec.module)}:{image_tag(spec.version)}"


def component(spec: GoModuleSpec) -> gobuild.GoComponent:
    packages = tuple(import_path(spec.module, p) for p in spec.packages)
    return gobuild.GoComponent(
        name=f"go-module-{image_name(spec.module)}",
        version=spec.version,
        module=spec.module,
        packages=packages,
        binaries=tuple(binary_name(spec.module, p) for p in spec.packages),
    )


def image_key(spec: GoModuleSpec) -> str:
    return f"{component(spec).key}:{spec.binary_dir}"


def image_layout(binaries: list[Path], binary_dir: str) -> TarBuilder:
    """The image's root filesystem: the binaries in `binary_dir`, and /tmp (klog writes
    there). No shell, no CA certificates: the profile docs say to add them if needed."""
    tar = TarBuilder()
    for binary in binaries:
        tar.add_file(f"{binary_dir.strip('/')}/{binary.name}", binary, 0o755)
    tar.add_dir("tmp", 0o1777)
    return tar


def image_changes(spec: GoModuleSpec) -> list[str]:
    """Charts run the binaries by name, so `binary_dir` leads PATH; one binary is also the
    entrypoint."""
    binary_dir = str(PurePosixPath("/") / spec.binary_dir)
    changes = [
        f"ENV PATH={binary_dir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        f"LABEL {KEY_LABEL}={image_key(spec)}",
    ]
    binaries = component(spec).binaries
    if len(binaries) == 1:
        changes.append(f'ENTRYPOINT ["{binary_dir.rstrip("/")}/{binaries[0]}"]')
    return changes


def chart_path(chart: str) -> str | None:
    """The path inside the module of a `goModule:<path>` chart; None for any other chart."""
    if not chart.startswith(GO_MODULE_CHART_PREFIX):
        return None
    return chart[len(GO_MODULE_CHART_PREFIX) :].strip("/")


def resolve_chart(chart: str, spec: GoModuleSpec) -> str:
    """A `goModule:<path>` chart as a directory of the module version in the module cache;
    any other chart unchanged."""
    inner = chart_path(chart)
    if inner is None:
        return chart
    root = gobuild.module_dir(spec.module, spec.version)
    directory = (root / inner).resolve()
    if not directory.is_relative_to(root.resolve()) or not (directory / "Chart.yaml").is_file():
        raise BuildError(
            f"install.chart: {spec.module}@{spec.version} has no chart at {inner!r}",
            "name the directory holding Chart.yaml, relative to the module root",
        )
    return str(directory)


def build_image(spec: GoModuleSpec, progress: Progress) -> str:
    """The image, built unless one with the same build key exists; its reference."""
    from conformance import docker_client
    from conformance.cache import build_lock

    ref, key = image_ref(spec), image_key(spec)
    if _built_key(ref) == key:
        return ref
    comp = component(spec)
    with build_lock(f"go-module-image-{comp.name}-{spec.version}"):
        if _built_key(ref) == key:
            return ref
        out = gobuild.build(comp, progress)
        with progress.stage(f"build image {ref}"):
            data = image_layout([out / b for b in comp.binaries], spec.binary_dir).close()
            repo, tag = ref.rsplit(":", 1)
            docker_client.client().api.import_image_from_data(
                data.read(), repository=repo, tag=tag, changes=image_changes(spec)
            )
    return ref


def _built_key(ref: str) -> str | None:
    from docker.errors import ImageNotFound

    from conformance import docker_client

    try:
        image = docker_client.client().images.get(ref)
    except ImageNotFound:
        return None
    return (image.labels or {}).get(KEY_LABEL)
