"""`make test`: the project's own tests in tiers that run side by side.

- unit: `pytest tests` without tests/e2e (pure logic, and what a real API server decides), no
  cluster; apart from the main tier and niced, so it takes the CPU the clusters leave and its
  minutes are not on the critical path;
- main: the e2e tier without the broken-driver, chaos, gate and upgrade checks, on the cluster
  `dra-conformance-e2e`, which its last test deletes;
- broken shards: `tests/e2e/broken`, `tests/e2e/chaos` and `tests/e2e/test_gate.py` (it breaks
  the fake driver too), split in two, each shard on a cluster of its own
  (`dra-conformance-e2e-broken-1`, `-2`): each check switches a fake-driver misbehaviour on, or
  disturbs the cluster, for the whole cluster, so it cannot share one with another tier, and
  these checks mostly wait out timeouts of states a broken driver never reaches, not the CPU;
- whole-suite: `tests/e2e/test_run.py` (the whole suite `-n 4` and its reports), which in the
  main tier would make it the last shard by some fifteen minutes, then a third of the
  broken-driver checks (`WHOLE_SUITE_SHARD_BROKEN`), on a cluster of its own.

Tests marked `e2e_by_hand` are left out: past the CI budget on the 2-core CI machine (the
whole suite against a second driver, two machines sharing one lease book, the second and
third misbehaviour of a requirement that has one in CI, a legal variant of a driver that
passes, the Kubernetes upgrade gate with its in-place rehearsal, the Sonobuoy plugin's
in-cluster run). Run them by hand with `pytest -m e2e_by_hand tests/e2e`; bench/suite.md and
bench/cluster.md have their results.

Each shard's output goes to reports/tests/<shard>.log and is printed when it ends; its cluster
is deleted afterwards (also on failure or Ctrl-C). DRA_CONFORMANCE_E2E_BROKEN_CLUSTER names a
cluster of your own: the checks then run as one shard there. Extra arguments go to every pytest
run. Exit code: the main tier's, else the first failing shard's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BROKEN_DIR = "tests/e2e/broken"
# Chaos runs disturb their cluster (a node stopped, the driver's namespace deleted): they go with
# the broken-driver checks, which run one at a time on a cluster of their own.
CHAOS_DIR = "tests/e2e/chaos"
CLUSTER_PREFIX = "dra-conformance-e2e-broken"
# The upgrade gate and its in-place rehearsals run by hand (bench/cluster.md): a v1.36.3
# cluster, two gated runs and a node-by-node upgrade were a fifth of the tier's CPU.
UPGRADE_DIR = "tests/e2e/upgrade"
# The whole suite and its reports, on a cluster of its own: the main tier's longest file, moved
# off its critical path (bench/suite.md).
WHOLE_SUITE_RUN = "tests/e2e/test_run.py"
WHOLE_SUITE_CLUSTER = "dra-conformance-e2e-whole"
# `gate --baseline` breaks the fake driver to gate red, like a broken-driver check: it runs in
# the second broken shard instead of on the critical path.
GATE_BASELINE = "tests/e2e/test_gate.py"
# The second driver swaps the fake driver out and back: like a broken-driver check, it runs in
# the second broken shard, the shorter one, last.
SECOND_DRIVER = "tests/e2e/test_second_driver_figures.py"
# What the broken shards run between them, and what the main tier therefore leaves out.
BROKEN_PATHS = (BROKEN_DIR, CHAOS_DIR, GATE_BASELINE, SECOND_DRIVER)
NOT_IN_MAIN = (*BROKEN_PATHS, UPGRADE_DIR, WHOLE_SUITE_RUN)
# Every pytest run of the tiers leaves out what runs by hand (see the module's docstring).
NOT_BY_HAND = ("-m", "not e2e_by_hand")
LOGS = ROOT / "reports" / "tests"
# The first shard's files, chosen so the three shards take about as long (per-file times of
# one `.ci/run` side by side, bench/suite.md). Every other file of the two folders goes to the
# second shard, so a new file is never left out.
FIRST_SHARD = tuple(
    f"{BROKEN_DIR}/test_broken_{suite}.py"
    for suite in (
        "allocation",
        "node_restart",
        "extended_resource",
        "node_drain",
        "security",
        "no_preemption",
        "readiness",
        "lifecycle_race",
    )
)
# Broken-driver checks the whole-suite shard runs on its cluster once the whole suite's run is
# over.
WHOLE_SUITE_SHARD_BROKEN = tuple(
    f"{BROKEN_DIR}/test_broken_{suite}.py"
    for suite in (
        "lifecycle_republish",
        "device_status",
        "device_taint_none",
        "device_loss",
        "driver_update",
        "device_metadata",
    )
)


@dataclass
class Shard:
    cluster: str | None  # None: needs no cluster
    args: list[str]
    log: Path
    own_cluster: bool = False
    nice: int = 0  # added to the shard's niceness (its pytest and every child)
    process: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    ended: float | None = None

    def watch(self) -> None:
        assert self.process is not None
        self.process.wait()
        self.ended = time.monotonic()


def stamp(message: str) -> None:
    print(f"[test tiers {time.strftime('%H:%M:%S')}] {message}", flush=True)


def pytest_cmd(name: str, *args: str) -> list[str]:
    # the slowest tests in the CI log, beside the e2e stage wall times; every test's time in
    # reports/tests/<name>.xml, for bench/ and for balancing the shards
    junit = LOGS / f"{name}.xml"
    return [
        sys.executable,
        "-m",
        "pytest",
        "--durations=10",
        f"--junitxml={junit}",
        *NOT_BY_HAND,
        *args,
    ]


def delete_cluster(name: str) -> None:
    cmd = [sys.executable, "-m", "conformance.cli", "cluster", "down", "--name", name]
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        stamp(f"could not delete cluster {name}: {result.stderr.strip()[-500:]}")


def broken_shards() -> list[Shard]:
    whole = Shard(
        WHOLE_SUITE_CLUSTER,
        [WHOLE_SUITE_RUN, *WHOLE_SUITE_SHARD_BROKEN],
        LOGS / "whole-suite.log",
    )
    own = os.environ.get("DRA_CONFORMANCE_E2E_BROKEN_CLUSTER")
    if own:
        mine = [*BROKEN_PATHS, *(f"--ignore={p}" for p in WHOLE_SUITE_SHARD_BROKEN)]
        return [Shard(own, mine, LOGS / "broken.log", own_cluster=True), whole]
    # the rest
    elsewhere = (*FIRST_SHARD, *WHOLE_SUITE_SHARD_BROKEN)
    second = [*BROKEN_PATHS, *(f"--ignore={p}" for p in elsewhere)]
    return [
        *(
            Shard(f"{CLUSTER_PREFIX}-{n}", args, LOGS / f"broken-{n}.log")
            for n, args in ((1, list(FIRST_SHARD)), (2, second))
        ),
        whole,
    ]


def unit_shard() -> Shard:
    return Shard(None, ["tests", "--ignore=tests/e2e"], LOGS / "unit.log", nice=10)


def start(shard: Shard, extra: list[str]) -> None:
    env = dict(os.environ)
    if shard.cluster is not None:
        env["DRA_CONFORMANCE_E2E_CLUSTER"] = shard.cluster
    with open(shard.log, "wb") as log:
        shard.process = subprocess.Popen(
            pytest_cmd(shard.log.stem, *shard.args, *extra),
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=(lambda: os.nice(shard.nice)) if shard.nice else None,
        )
    shard.started = time.monotonic()
    threading.Thread(target=shard.watch, daemon=True).start()
    log_name = shard.log.relative_to(ROOT)
    where = f"on cluster {shard.cluster}" if shard.cluster else "(no cluster)"
    stamp(f"shard {' '.join(shard.args[:2])} {where}; its output: {log_name}")


def stop(shard: Shard) -> None:
    if shard.process is not None and shard.process.poll() is None:
        shard.process.terminate()


def stage_times(walls: dict[str, float]) -> str:
    """Each tier's wall time, longest first: the first line is the one `make test` waits for."""
    rows = sorted(walls.items(), key=lambda item: -item[1])
    lines = [f"{seconds:7.0f} s  {name}" for name, seconds in rows]
    lines[0] += "  (longest)"
    return "\n".join(["test tier wall times:", *lines])


def main(extra: list[str]) -> int:
    LOGS.mkdir(parents=True, exist_ok=True)
    # Each of the hundreds of pytest runs (nested ones included) imports and assertion-rewrites
    # some 300 modules of the checkout: without the bytecode cache every one compiles them
    # again, about a fifth of a short run's CPU on a machine the clusters already saturate.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    shards = [unit_shard(), *broken_shards()]
    for shard in shards:
        start(shard, extra)
    main_rc = 2
    main_started = time.monotonic()
    main_took: float | None = None
    try:
        main_rc = subprocess.call(
            pytest_cmd(
                "main",
                "tests/e2e",
                *(f"--ignore={path}" for path in NOT_IN_MAIN),
                *extra,
            ),
            cwd=ROOT,
        )
        main_took = time.monotonic() - main_started
        if any(shard.ended is None for shard in shards):
            stamp("main tier done; waiting for the other shards")
        for shard in shards:
            assert shard.process is not None
            shard.process.wait()
    except KeyboardInterrupt:
        stamp("interrupted: stopping the other shards")
        main_rc = 130
        for shard in shards:
            stop(shard)
    shard_rcs = []
    for shard in shards:
        assert shard.process is not None
        rc = shard.process.wait()
        shard_rcs.append(rc)
        if shard.cluster is not None and not shard.own_cluster:
            delete_cluster(shard.cluster)
        print(shard.log.read_text(errors="replace"), flush=True)
        took = (shard.ended or time.monotonic()) - shard.started
        where = f" (cluster {shard.cluster})" if shard.cluster else ""
        stamp(f"shard {shard.log.stem}{where}: exit {rc} after {took:.0f} s")
    took = main_took if main_took is not None else time.monotonic() - main_started
    stamp(f"main tier: exit {main_rc} after {took:.0f} s")
    walls = {
        "main": took,
        **{s.log.stem: (s.ended or time.monotonic()) - s.started for s in shards},
    }
    print(stage_times(walls), flush=True)
    return main_rc or next((rc for rc in shard_rcs if rc), 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
