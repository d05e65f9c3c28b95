"""The suite as a container image, built offline like the fake driver's: the Debian python base,
the suite's wheel and its dependencies installed with pip, the selector helper built here (a
pod has no Go), and node with the Allure generator when this host has them.

The tag is the suite's version (`localhost/dra-conformance/suite:<version>`); the image is also
tagged `<version>-<key>`, the key a digest of everything that goes in, so a rebuild with
nothing changed is a no-op and a changed suite never hides behind an old image of its version.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from conformance import docker_client
from conformance.cache import build_lock, cache_root, digest
from conformance.errors import BuildError
from conformance.images import harness
from conformance.images.tarbuild import TarBuilder
from conformance.progress import Progress
from conformance.suite_root import SUITE_ROOT

REPOSITORY = "localhost/dra-conformance/suite"
CONTENT_LABEL = "io.dra-conformance.content"
OPT = "opt/dra-conformance"
APP = f"/{OPT}/app"  # the suite's wheel, installed (pip --target)
SITE = f"/{OPT}/site"  # its dependencies
SUITE_DIR = f"{APP}/conformance/_suite"  # scenarios/, the catalog, drivers/fake/
# What the wheel is made of (pyproject.toml [tool.setuptools]): the key covers these.
SOURCES = ("pyproject.toml", "conformance", "scenarios", "drivers/fake")
ENTRYPOINT = '["dra-conformance", "run", "--cluster", "in-cluster"]'
DEFAULT_ARGS = '["--profile", "/profile/profile.yaml", "--report-dir", "/tmp/results"]'


@dataclass(frozen=True)
class ReportTools:
    """The Allure generator to carry: node and the npm prefix holding the `allure` package
    (None: the image writes allure-results only, its report says the HTML is missing)."""

    node: Path | None = None
    npm_prefix: Path | None = None


@dataclass(frozen=True)
class SuiteImage:
    ref: str  # <repository>:<version>
    content_ref: str  # <repository>:<version>-<key>
    built: bool  # False: an image of that content existed


def suite_version() -> str:
    return metadata.version("dra-conformance")


def _tree_digest(root: Path, names: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for name in names:
        path = root / name
        files = sorted(path.rglob("*")) if path.is_dir() else [path]
        for f in files:
            if not f.is_file() or "__pycache__" in f.parts or "_gen" in f.parts:
                continue
            h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def _file_sha(path: Path | None) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path else ""


def _dependencies() -> list[str]:
    with open(SUITE_ROOT / "pyproject.toml", "rb") as f:
        return list(tomllib.load(f)["project"]["dependencies"])


def _dependency_site(progress: Progress) -> Path:
    """The suite's dependencies for the image's Python (the base's python3 is this minor)."""
    deps = _dependencies()
    site = cache_root() / "pip-site" / digest("suite-deps", deps, sys.version_info[:2])
    if (site / ".complete").exists():
        return site
    with progress.stage("pip install the suite's dependencies for its image"):
        shutil.rmtree(site, ignore_errors=True)
        harness.run_pip(
            ["install", "--no-compile", "--target", str(site), *deps],
            "pip install for the suite image",
        )
        (site / ".complete").write_text("")
    return site


def _wheel(workdir: Path, progress: Progress) -> Path:
    with progress.stage("build the suite's wheel"):
        harness.run_pip(
            ["wheel", "--no-deps", "--no-build-isolation", "-w", str(workdir), str(SUITE_ROOT)],
            "pip wheel for the suite image",
        )
    wheels = sorted(workdir.glob("dra_conformance-*.whl"))
    if not wheels:
        raise BuildError(f"pip wheel wrote no dra_conformance wheel into {workdir}")
    return wheels[-1]


def _check_checkout() -> None:
    if not (SUITE_ROOT / "scenarios").is_dir() or SUITE_ROOT.name == "_suite":
        raise BuildError(
            f"dra-conformance image builds from a checkout of the suite; {SUITE_ROOT} is an "
            "installed copy",
            "run it from a git checkout (pip install -e .)",
        )


def content_key(tools: ReportTools, cel_helper: Path, workload_ref: str, deps: Path) -> str:
    """A digest of everything the image is made of."""
    npm_marker = tools.npm_prefix / "package-lock.json" if tools.npm_prefix else None
    return digest(
        "suite-image",
        _tree_digest(SUITE_ROOT, SOURCES),
        deps.name,
        harness.python_base_ref(),
        _file_sha(cel_helper),
        _file_sha(tools.node),
        _file_sha(npm_marker if npm_marker and npm_marker.is_file() else None),
        workload_ref,
    )


def _env(tools: ReportTools, workload_ref: str) -> list[str]:
    env = [
        f"ENV PYTHONPATH={APP}:{SITE}",
        "ENV PYTHONUNBUFFERED=1",
        "ENV PYTHONDONTWRITEBYTECODE=1",
        "ENV HOME=/tmp",
        "ENV DRA_CONFORMANCE_CACHE=/tmp/dra-conformance-cache",
        f"ENV DRA_CEL_HELPER=/{OPT}/bin/dra-cel",
        f"ENV DRA_WORKLOAD_IMAGE={workload_ref}",
    ]
    if tools.npm_prefix is not None:
        env.append(f"ENV DRA_CONFORMANCE_NPM_PREFIX=/{OPT}/npm")
    return env


def _archive(
    tar: TarBuilder, wheel_site: Path, deps: Path, cel_helper: Path, tools: ReportTools
) -> None:
    tar.add_tree(SITE.lstrip("/"), deps)
    tar.add_tree(APP.lstrip("/"), wheel_site)
    tar.add_file(f"{OPT}/bin/dra-cel", cel_helper, 0o755)
    tar.add_bytes(
        "usr/local/bin/dra-conformance",
        b'#!/bin/sh\nexec python3 -m conformance.cli "$@"\n',
        0o755,
    )
    tar.add_dir("profile")
    if tools.node is not None and tools.npm_prefix is not None:
        tar.add_file("usr/local/bin/node", tools.node, 0o755)
        tar.add_tree(f"{OPT}/npm", tools.npm_prefix)


def build_suite_image(
    tools: ReportTools, cel_helper: Path, progress: Progress, rebuild: bool = False
) -> SuiteImage:
    """Build the image unless one of the same content exists; tag it `<version>` too."""
    _check_checkout()
    version = suite_version()
    workload_ref = harness.workload_image_ref()
    deps = _dependency_site(progress)
    key = content_key(tools, cel_helper, workload_ref, deps)
    image = SuiteImage(f"{REPOSITORY}:{version}", f"{REPOSITORY}:{version}-{key}", built=False)
    with build_lock("suite-image", f"the suite image {image.ref}", progress.note):
        if rebuild or not docker_client.image_exists(image.content_ref):
            _build(image, key, tools, cel_helper, workload_ref, deps, progress)
            image = SuiteImage(image.ref, image.content_ref, built=True)
        docker_client.client().images.get(image.content_ref).tag(REPOSITORY, version)
    return image


def _build(
    image: SuiteImage,
    key: str,
    tools: ReportTools,
    cel_helper: Path,
    workload_ref: str,
    deps: Path,
    progress: Progress,
) -> None:
    base = harness.build_python_base(progress)
    with tempfile.TemporaryDirectory(prefix="dra-suite-image-") as tmp:
        wheel = _wheel(Path(tmp) / "wheel", progress)
        wheel_site = Path(tmp) / "app"
        harness.run_pip(
            ["install", "--no-deps", "--target", str(wheel_site), str(wheel)],
            "pip install for the suite image",
        )
        shutil.rmtree(wheel_site / "bin", ignore_errors=True)  # scripts for the host's python
        client = docker_client.client()
        layer = Path(tmp) / "layer.tar"
        with progress.stage(f"build {image.content_ref}"), open(layer, "w+b") as f:
            tar = TarBuilder(f)
            _archive(tar, wheel_site, deps, cel_helper, tools)
            container = client.containers.create(base, command=["true"])
            try:
                container.put_archive("/", tar.close())
                repo, tag = image.content_ref.rsplit(":", 1)
                container.commit(
                    repository=repo,
                    tag=tag,
                    changes=[
                        *_env(tools, workload_ref),
                        f"LABEL {CONTENT_LABEL}={key}",
                        f"WORKDIR {SUITE_DIR}",
                        f"ENTRYPOINT {ENTRYPOINT}",
                        f"CMD {DEFAULT_ARGS}",
                    ],
                )
            finally:
                container.remove(force=True)
