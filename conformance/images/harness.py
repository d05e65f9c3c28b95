"""Images the harness itself needs in the cluster, built locally (offline and online alike):
the workload image (busybox from Debian's busybox-static) and the fake driver image (Debian
python3 + pip packages + the driver package). conformance/cluster/kind_images.py loads them
into a kind cluster's nodes."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from conformance import docker_client
from conformance.cache import cache_root, digest
from conformance.errors import BuildError, HostError
from conformance.images import rootfs
from conformance.images.cached_image import build_once
from conformance.images.tarbuild import TarBuilder
from conformance.images.versions import DEBIAN_SUITE
from conformance.progress import Progress
from conformance.suite_root import SUITE_ROOT

REPO_ROOT = SUITE_ROOT  # the checkout, or conformance/_suite of a wheel
WORKLOAD_REPOSITORY = "localhost/dra-conformance/workload"
DRIVER_REPOSITORY = "localhost/dra-conformance/fake-driver"
PYTHON_BASE_REPOSITORY = "localhost/dra-conformance/python-base"
PYTHON_PACKAGES = ("python3", "ca-certificates")


def _busybox() -> Path:
    for candidate in (Path("/bin/busybox"), Path("/usr/bin/busybox")):
        if candidate.exists():
            return candidate
    raise HostError(
        "busybox (static) is needed for the workload image", "apt-get install busybox-static"
    )


def _file_digest(*paths: Path) -> str:
    h = hashlib.sha256()
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for f in files:
            if "__pycache__" in f.parts:
                continue
            h.update(str(f.relative_to(path) if path.is_dir() else f.name).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:12]


def workload_image_ref() -> str:
    return f"{WORKLOAD_REPOSITORY}:{digest('workload', _file_digest(_busybox()))}"


def build_workload_image(progress: Progress) -> str:
    ref = workload_image_ref()
    return build_once(ref, "workload-image", lambda: _build_workload_image(ref, progress))


def _build_workload_image(ref: str, progress: Progress) -> str:
    busybox = _busybox()
    applets = subprocess.run(
        [str(busybox), "--list"], capture_output=True, text=True, check=True
    ).stdout.split()
    with progress.stage("build workload image"):
        tar = TarBuilder()
        tar.add_file("bin/busybox", busybox, 0o755)
        for applet in applets:
            if applet != "busybox":
                tar.add_symlink(f"bin/{applet}", "busybox")
        for d in ("etc", "proc", "sys", "dev"):
            tar.add_dir(d)
        tar.add_dir("tmp", 0o1777)
        data = tar.close()
        repo, tag = ref.rsplit(":", 1)
        docker_client.client().api.import_image_from_data(
            data.read(),
            repository=repo,
            tag=tag,
            changes=["ENV PATH=/bin", 'ENTRYPOINT ["/bin/sh", "-c"]', 'CMD ["env"]'],
        )
    return ref


def python_base_ref() -> str:
    return f"{PYTHON_BASE_REPOSITORY}:{digest('python-base', DEBIAN_SUITE, PYTHON_PACKAGES)}"


def build_python_base(progress: Progress) -> str:
    ref = python_base_ref()
    if docker_client.image_exists(ref):
        return ref
    return rootfs.import_debootstrap_image(
        ref, DEBIAN_SUITE, PYTHON_PACKAGES, "python-base", progress
    )


def run_pip(args: list[str], what: str) -> None:
    """pip of this interpreter, quiet; a failure is a BuildError naming `what`."""
    result = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet", *args],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise BuildError(
            f"{what} failed:\n{result.stderr[-1500:]}",
            "check that PyPI (or your mirror) is reachable",
        )


# What the driver's dependencies install but the driver never imports: the Kubernetes client's
# asyncio copy and the aiohttp stack only it uses, about a fifth of the image. Every kind node
# imports the image, so each megabyte is paid again per node and per cluster.
UNUSED_IN_DRIVER_IMAGE = (
    "kubernetes/aio",
    "aiohttp",
    "aiohttp_retry",
    "aiohappyeyeballs",
    "aiosignal",
    "frozenlist",
    "multidict",
    "propcache",
    "yarl",
)


def _prune(site: Path) -> None:
    for relative in UNUSED_IN_DRIVER_IMAGE:
        shutil.rmtree(site / relative, ignore_errors=True)


def _pip_site(requirements: Path, progress: Progress) -> Path:
    key = digest("pip", requirements.read_text(), sys.version_info[:2], UNUSED_IN_DRIVER_IMAGE)
    site = cache_root() / "pip-site" / key
    if (site / ".complete").exists():
        return site
    with progress.stage("pip install driver dependencies for the image"):
        shutil.rmtree(site, ignore_errors=True)
        run_pip(
            ["install", "--no-compile", "--target", str(site), "-r", str(requirements)],
            "pip install for the driver image",
        )
        _prune(site)
        (site / ".complete").write_text("")
    return site


def _generate_driver_stubs() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "fakedriver.protogen"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT / "drivers/fake",
    )
    if result.returncode != 0:
        raise BuildError(
            f"generating the driver's gRPC stubs failed:\n{result.stderr[-1500:]}",
            "pip install grpcio-tools",
        )


def driver_image_ref(package: Path, requirements: Path) -> str:
    content = _file_digest(package, requirements)
    return f"{DRIVER_REPOSITORY}:{digest('driver', content, UNUSED_IN_DRIVER_IMAGE)}"


FAKE_DRIVER_PACKAGE = REPO_ROOT / "drivers/fake/fakedriver"
FAKE_DRIVER_REQUIREMENTS = REPO_ROOT / "drivers/fake/image-requirements.txt"


def fake_driver_image_ref() -> str:
    """The fake driver image's reference, its gRPC stubs generated first: they are part of
    its content, so the key is only right with them."""
    _generate_driver_stubs()
    return driver_image_ref(FAKE_DRIVER_PACKAGE, FAKE_DRIVER_REQUIREMENTS)


def build_driver_image(progress: Progress) -> str:
    """The fake driver image: python-base + pip site + the `fakedriver` package (with stubs)."""
    package, requirements = FAKE_DRIVER_PACKAGE, FAKE_DRIVER_REQUIREMENTS
    ref = fake_driver_image_ref()
    return build_once(
        ref, "driver-image", lambda: _build_driver_image(ref, package, requirements, progress)
    )


def _build_driver_image(ref: str, package: Path, requirements: Path, progress: Progress) -> str:
    base = build_python_base(progress)
    site = _pip_site(requirements, progress)
    client = docker_client.client()
    with progress.stage("build fake driver image"):
        container = client.containers.create(base, command=["true"])
        try:
            tar = TarBuilder()
            tar.add_tree("opt/fakedriver/site", site)
            for f in sorted(package.rglob("*")):
                if f.is_file() and "__pycache__" not in f.parts:
                    tar.add_file(
                        f"opt/fakedriver/app/fakedriver/{f.relative_to(package)}", f, 0o644
                    )
            container.put_archive("/", tar.close())
            repo, tag = ref.rsplit(":", 1)
            container.commit(
                repository=repo,
                tag=tag,
                changes=[
                    "ENV PYTHONPATH=/opt/fakedriver/app:/opt/fakedriver/site",
                    "ENV PYTHONUNBUFFERED=1",
                    'ENTRYPOINT ["python3", "-m", "fakedriver"]',
                ],
            )
        finally:
            container.remove(force=True)
    return ref


def _build_k8s_test_driver_image(progress: Progress) -> str:
    from conformance.images import testdriver

    return testdriver.build_image(progress)


# The suite's own image builders, by the name a profile gives in `install.image.builder`
# (conformance/model/profile.py IMAGE_BUILDERS lists the same names).
BUILDERS: dict[str, Callable[[Progress], str]] = {
    "fake-driver": build_driver_image,
    "k8s-test-driver": _build_k8s_test_driver_image,
}


def build_named_image(builder: str, progress: Progress) -> str:
    """The image of the suite's builder `builder`, built when missing; its reference."""
    try:
        build = BUILDERS[builder]
    except KeyError:
        raise BuildError(
            f"unknown image builder {builder!r}", f"use one of {', '.join(sorted(BUILDERS))}"
        ) from None
    return build(progress)
