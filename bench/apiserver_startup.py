"""Start-up time of the test API server (tests/kube_apiserver): what the session fixture costs.

    .venv/bin/python bench/apiserver_startup.py [--runs 3] [--cold]

Each run is the fixture's path: ensure the component image, start etcd + kube-apiserver +
the namespace controller, wait for /readyz and /healthz, tear down. `--cold` first removes the
kube-apiserver tag, so the first run rebuilds the component image from the Go build cache (it
never pulls). Prints one line per run with the load average, since the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from kube_apiserver.control_plane import control_plane  # noqa: E402
from kube_apiserver.image import KUBERNETES, apiserver_ref, ensure_component_image  # noqa: E402

from conformance import docker_client  # noqa: E402
from conformance.images.versions import NodeVersions  # noqa: E402


def one_run() -> dict[str, float]:
    begin = time.monotonic()
    image = ensure_component_image()
    image_seconds = time.monotonic() - begin
    with control_plane(image, KUBERNETES) as (_, timings):
        ready = time.monotonic() - begin
    return {
        "image": image_seconds,
        **{k: v + image_seconds for k, v in timings.items()},
        "ready_total": ready,
        "with_teardown": time.monotonic() - begin,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cold", action="store_true", help="untag the image before run 1")
    args = parser.parse_args()
    if args.cold:
        docker_client.client().images.remove(apiserver_ref(NodeVersions(kubernetes=KUBERNETES)))
    for i in range(args.runs):
        load = os.getloadavg()[0]
        figures = one_run()
        text = ", ".join(f"{k} {v:.1f} s" for k, v in figures.items())
        print(f"run {i + 1} (load {load:.1f}): {text}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
