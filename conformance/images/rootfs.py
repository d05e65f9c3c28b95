"""The Debian bookworm root filesystem of the node image, from Debian packages (debootstrap)."""

from __future__ import annotations

import re
import shutil
import subprocess
import tarfile
from pathlib import Path

from conformance import docker_client
from conformance.cache import cache_root
from conformance.errors import BuildError, HostError
from conformance.images.cached_image import build_once
from conformance.images.versions import NodeVersions, rootfs_key
from conformance.progress import Progress

DEFAULT_MIRROR = "http://deb.debian.org/debian"


def debian_mirror() -> str:
    """The Debian mirror this host's apt already uses (air-gapped labs often have their own)."""
    sources = [Path("/etc/apt/sources.list"), *Path("/etc/apt/sources.list.d").glob("*")]
    for path in sources:
        try:
            text = path.read_text()
        except OSError:
            continue
        for match in re.finditer(
            r"(?:^deb\s+(?:\[[^\]]*\]\s+)?|^URIs:\s*)(\S+/debian)/?\s", text, re.MULTILINE
        ):
            return match.group(1)
    return DEFAULT_MIRROR


def unmount_below(root: Path) -> None:
    """Lazily unmount every mount point under `root`, deepest first."""
    prefix = str(root.resolve())
    try:
        lines = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return
    points = [ln.split()[1] for ln in lines if len(ln.split()) > 1]
    below = [p for p in points if p == prefix or p.startswith(prefix + "/")]
    for point in sorted(below, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True)


def base_image_ref(v: NodeVersions) -> str:
    return f"localhost/dra-conformance/node-base:{rootfs_key(v)}"


def ensure_base_image(v: NodeVersions, progress: Progress) -> str:
    """The node rootfs as an image; built only when the image is missing."""
    ref = base_image_ref(v)
    if docker_client.image_exists(ref):
        return ref
    return import_debootstrap_image(
        ref, v.debian_suite, v.node_packages, f"node-{rootfs_key(v)}", progress
    )


def import_debootstrap_image(
    ref: str, suite: str, packages: tuple[str, ...], name: str, progress: Progress
) -> str:
    """debootstrap a minbase rootfs with `packages` (cached on disk) and import it as `ref`."""
    return build_once(
        ref,
        f"rootfs-{name}",
        lambda: _import_debootstrap_image(ref, suite, packages, name, progress),
    )


def _import_debootstrap_image(
    ref: str, suite: str, packages: tuple[str, ...], name: str, progress: Progress
) -> str:
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise HostError(
            "debootstrap is not installed; it builds root filesystems from Debian packages",
            "apt-get install debootstrap",
        )
    target = cache_root() / "rootfs" / name
    if not (target / ".complete").exists():
        tmp = target.with_name(name + ".tmp")
        unmount_below(tmp)  # a failed debootstrap leaves /proc (and more) mounted in its target
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.parent.mkdir(parents=True, exist_ok=True)
        log = target.with_name(name + ".log")
        with progress.stage(f"debootstrap {suite} rootfs ({name})"):
            with open(log, "w") as out:
                result = subprocess.run(
                    [
                        debootstrap,
                        "--variant=minbase",
                        f"--include={','.join(packages)}",
                        suite,
                        str(tmp),
                        debian_mirror(),
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            if result.returncode != 0:
                excerpt = "\n".join(log.read_text().splitlines()[-20:])
                raise BuildError(f"stage 'debootstrap' failed:\n{excerpt}", f"full log: {log}")
            for sub in ("var/cache/apt/archives", "var/lib/apt/lists"):
                for p in (tmp / sub).glob("*"):
                    if p.is_file():
                        p.unlink()
            shutil.rmtree(target, ignore_errors=True)
            tmp.rename(target)
            (target / ".complete").write_text("")
    with progress.stage(f"import {name} rootfs as image {ref}"):
        archive = target.with_name(name + ".tar")
        with tarfile.open(archive, "w") as tar:
            for entry in sorted(target.iterdir()):
                if entry.name != ".complete":
                    tar.add(entry, arcname=entry.name)
        repo, tag = ref.rsplit(":", 1)
        with open(archive, "rb") as data:
            docker_client.client().api.import_image_from_data(data, repository=repo, tag=tag)
        archive.unlink()
    return ref
