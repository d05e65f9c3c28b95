"""The node image's cold build as a graph, timed without a fully cold Kubernetes compile
(bench/cold.md): the node image and its rootfs image are removed, the Kubernetes binaries and
the debootstrapped rootfs are moved aside (never deleted: `--aside DIR`), the Go build cache
stays warm; then `cluster image` rebuilds them and its task times are read from its log.

    python bench/cold_graph.py [--k8s v1.36.3] [--aside DIR]

Prints each task's time, their sum, the wall time and the load average. Pick a version no test
run uses (v1.36.3): its node image is missing while this runs.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from conformance import docker_client  # noqa: E402
from conformance.cache import cache_root  # noqa: E402
from conformance.images import nodeimage, rootfs  # noqa: E402
from conformance.images.versions import NodeVersions, rootfs_key  # noqa: E402

FINISHED = re.compile(r"\] (.+?) finished \((?:(\d+)m(\d+)s|([\d.]+)s)\)$")


def _seconds(match: re.Match[str]) -> float:
    minutes, secs, plain = match.group(2, 3, 4)
    return float(plain) if plain else int(minutes) * 60 + int(secs)


def make_cold(v: NodeVersions, aside: Path) -> None:
    """Remove the two images; move the binaries and the rootfs into `aside`."""
    images = docker_client.client().images
    for ref in (nodeimage.node_image_ref(v), rootfs.base_image_ref(v)):
        if docker_client.image_exists(ref):
            images.remove(ref)
    aside.mkdir(parents=True, exist_ok=True)
    built = re.compile(rf"kubernetes-{re.escape(v.kubernetes)}-[0-9a-f]{{12}}")
    moved = [
        *(p for p in (cache_root() / "bin").iterdir() if built.fullmatch(p.name)),
        cache_root() / "rootfs" / f"node-{rootfs_key(v)}",
    ]
    for path in moved:
        if path.exists():
            shutil.move(path, aside / path.name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k8s", default="v1.36.3")
    parser.add_argument("--aside", type=Path, help="where the moved entries go (default: new)")
    args = parser.parse_args()
    v = NodeVersions.for_kubernetes(args.k8s)
    aside = args.aside or Path(tempfile.mkdtemp(prefix="cold-graph-aside-"))
    make_cold(v, aside)
    print(f"moved aside into {aside}; load average {os.getloadavg()}")
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "cluster", "image", "--k8s", args.k8s],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - start
    times = {m.group(1): _seconds(m) for m in map(FINISHED.search, result.stderr.splitlines()) if m}
    for name, seconds in sorted(times.items(), key=lambda kv: -kv[1]):
        print(f"{name:24} {seconds:8.1f} s")
    total = sum(times.values())
    print(f"sum of task times {total:.1f} s; wall {wall:.1f} s (exit {result.returncode})")
    print(f"load average at the end {os.getloadavg()}")
    if result.returncode != 0:
        print(result.stderr[-3000:], file=sys.stderr)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
