"""A bundle's round trip, timed (bench/cold.md): `bundle save` from this machine's cache,
`bundle load` into an empty cache directory, then a `run` of the core suite on a new kind
cluster with only that cache, whose log must show no Go build, debootstrap or pip download.

    python bench/bundle_cold.py [--keep]     # --keep: leave the cluster, the bundle, the cache

Prints one line per figure; the cluster (`bundle-e2e`) is deleted at the end.
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

CLUSTER = "bundle-e2e"
BUILD_LINES = re.compile(r"go build|go get|debootstrap|pip install|pip wheel|npm install", re.I)
FIRST_TEST = re.compile(r"\] 1/\d+ tests, requirements reached")  # the first test finished


def _cli(*args: str, env: dict[str, str], log: Path) -> tuple[float, float | None]:
    """Run the CLI with output to `log`; (seconds, seconds until the first test result)."""
    start = time.monotonic()
    first: float | None = None
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "conformance.cli", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            out.write(line)
            if first is None and "run" in args[:1] and FIRST_TEST.search(line):
                first = time.monotonic() - start
        if proc.wait() != 0 and args[0] != "run":
            raise SystemExit(f"{' '.join(args)} failed, see {log}")
    return time.monotonic() - start, first


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keep", action="store_true")
    opts = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bundle-cold-"))
    bundle, cache = work / "bundle.tar", work / "cache"
    env = {**os.environ}
    saved, _ = _cli("bundle", "save", str(bundle), env=env, log=work / "save.log")
    print(f"bundle size       {bundle.stat().st_size / 1e9:.2f} GB")
    print(f"bundle save       {saved:.0f} s")
    env.update(DRA_CONFORMANCE_CACHE=str(cache), DRA_CONFORMANCE_NPM_PREFIX=str(cache / "npm"))
    loaded, _ = _cli("bundle", "load", str(bundle), env=env, log=work / "load.log")
    print(f"bundle load       {loaded:.0f} s (empty cache; images already in Docker are skipped)")
    report = work / "report"
    args = ("--profile", "drivers/fake/profile.yaml", "--name", CLUSTER, "-n", "2")
    ran, first = _cli(
        "run", *args, "--report-dir", str(report), "scenarios/core", env=env, log=work / "run.log"
    )
    print(f"load to 1st test  {loaded + (first or ran):.0f} s (run alone: {first or ran:.0f} s)")
    print(f"run (core, -n 2)  {ran:.0f} s")
    summary = report / "summary.json"
    text = summary.read_text() if summary.exists() else ""
    verdict = re.search(r'"verdict": "([A-Z-]+)"', text)
    print(f"verdict           {verdict.group(1) if verdict else 'none'}")
    lines = (work / "run.log").read_text().splitlines()
    builds = [ln.strip() for ln in lines if BUILD_LINES.search(ln)]
    print(f"build lines       {len(builds)}" + "".join(f"\n  {b}" for b in builds))
    if not opts.keep:
        _cli("cluster", "down", "--name", CLUSTER, env=env, log=work / "down.log")
        bundle.unlink()
        shutil.rmtree(cache, ignore_errors=True)
    print(f"logs              {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
