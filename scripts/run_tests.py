"""`make test`: the project's own tests in two tiers that run side by side.

- main: `pytest tests` without the broken-driver checks (unit tests, then the e2e tier on the
  cluster `dra-conformance-e2e`, which its last test deletes);
- broken: `pytest tests/e2e/broken tests/e2e/chaos` on a cluster of its own
  (`dra-conformance-e2e-broken`): each check switches a fake-driver misbehaviour on, or
  disturbs the cluster, for the whole cluster, so it cannot share one with the main tier's
  whole-suite runs, and it mostly waits on the cluster, not the CPU.

The broken tier's output goes to reports/tests/broken.log and is printed when it ends; its
cluster is deleted afterwards (also on failure or Ctrl-C) unless
DRA_CONFORMANCE_E2E_BROKEN_CLUSTER names a cluster of your own. Extra arguments go to both
pytest runs. Exit code: the main tier's, else the broken tier's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BROKEN_DIR = "tests/e2e/broken"
# Chaos runs disturb their cluster (a node stopped, the driver's namespace deleted): they go with
# the broken-driver checks, which run one at a time on a cluster of their own.
CHAOS_DIR = "tests/e2e/chaos"
DEFAULT_BROKEN_CLUSTER = "dra-conformance-e2e-broken"
LOG = ROOT / "reports" / "tests" / "broken.log"


def stamp(message: str) -> None:
    print(f"[test tiers {time.strftime('%H:%M:%S')}] {message}", flush=True)


def pytest_cmd(*args: str) -> list[str]:
    # the slowest tests in the CI log, beside the e2e stage wall times
    return [sys.executable, "-m", "pytest", "--durations=10", *args]


def delete_cluster(name: str) -> None:
    cmd = [sys.executable, "-m", "conformance.cli", "cluster", "down", "--name", name]
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        stamp(f"could not delete cluster {name}: {result.stderr.strip()[-500:]}")


def main(extra: list[str]) -> int:
    own_cluster = os.environ.get("DRA_CONFORMANCE_E2E_BROKEN_CLUSTER")
    cluster = own_cluster or DEFAULT_BROKEN_CLUSTER
    LOG.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "DRA_CONFORMANCE_E2E_CLUSTER": cluster}
    started = time.monotonic()
    stamp(f"broken-driver tier started on cluster {cluster}; its output: {LOG.relative_to(ROOT)}")
    with open(LOG, "w") as log:
        broken = subprocess.Popen(
            pytest_cmd(BROKEN_DIR, CHAOS_DIR, *extra),
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    main_rc = 2
    try:
        main_rc = subprocess.call(
            pytest_cmd("tests", f"--ignore={BROKEN_DIR}", f"--ignore={CHAOS_DIR}", *extra), cwd=ROOT
        )
        if broken.poll() is None:
            stamp("main tier done; waiting for the broken-driver tier")
        broken_rc = broken.wait()
    except KeyboardInterrupt:
        stamp("interrupted: stopping the broken-driver tier")
        broken.terminate()
        broken_rc = broken.wait()
        main_rc = 130
    finally:
        if not own_cluster:
            delete_cluster(cluster)
    print(LOG.read_text(errors="replace"), flush=True)
    stamp(
        f"broken-driver tier: exit {broken_rc} after {time.monotonic() - started:.0f} s "
        f"(main tier: exit {main_rc})"
    )
    return main_rc or broken_rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
