"""One requirement's scenario tests in a pytest subprocess against the e2e cluster, and how
they ended (the broken-driver checks' runner; conftest.py's fixture switches misbehaviours
around it, other checks break the driver their own way)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from conformance.model.profile import SUITE_ROOT
from conformance.report.seal import sealed_environment, sealed_plugin_args

SUBPROCESS_TIMEOUT_S = 900
# A broken driver mostly fails by never getting somewhere (a pod that never runs, never
# terminates, a slice never withdrawn, a taint never published or lifted): the check need not
# wait out the defaults, which are sized for slow real drivers. The working fake driver gets a
# pod Running in ~1 s, allocates in well under 1 s and withdraws, taints or heals a device in
# ~1 s, so these still leave it a wide margin on a loaded CI machine. The namespace wait only
# ends a test's teardown and the run's sweep (a warning when it runs out): a driver that cannot
# unprepare never lets the namespace go while it is broken, so waiting longer buys nothing.
BROKEN_RUN_TIMEOUTS = {
    "default": "30s",
    "claimAllocated": "30s",
    "podRunning": "40s",
    "podDeleted": "30s",
    "eviction": "40s",
    "namespaceDeleted": "10s",
    "slicesPublished": "60s",
}


def broken_run_profile(
    profile: Path,
    directory: Path,
    timeouts: Mapping[str, str] | None = None,
    fields: Mapping[str, Any] | None = None,
) -> Path:
    """The profile with shorter deletion timeouts (and `timeouts` over them) and top-level
    `fields` set, written elsewhere (so its relative manifest paths are made absolute)."""
    document = yaml.safe_load(profile.read_text())
    document.update(fields or {})
    install = document.get("install") or {}
    if install.get("manifests"):
        install["manifests"] = [str((profile.parent / m).resolve()) for m in install["manifests"]]
    document["timeouts"] = {
        **(document.get("timeouts") or {}),
        **BROKEN_RUN_TIMEOUTS,
        **(timeouts or {}),
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "profile-broken-run.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


@dataclass
class BrokenRun:
    requirement: str
    misbehaviours: tuple[str, ...]
    outcomes: dict[str, str] = field(default_factory=dict)  # nodeid -> passed|failed|...
    requirement_status: str | None = None  # from summary.json
    verdict: str | None = None
    output: str = ""
    returncode: int = 0

    harness_error: bool = (
        False  # the requirement erred only by the harness's or the cluster's fault
    )

    @property
    def failed(self) -> list[str]:
        return [n for n, o in self.outcomes.items() if o in ("failed", "error")]

    def assert_requirement_failed(self, must_mention: str | None = None) -> None:
        """The requirement failed in the summary and in at least one of its tests."""
        assert self.outcomes, f"no scenario test ran:\n{self.explain()}"
        assert self.failed, f"the broken driver passed:\n{self.explain()}"
        assert self.requirement_status in ("failed", "error"), self.explain()
        if must_mention:
            assert must_mention in self.output, f"no mention of {must_mention!r}:\n{self.explain()}"

    def explain(self) -> str:
        return (
            f"{self.requirement} with misbehaviours {list(self.misbehaviours)}: outcomes "
            f"{self.outcomes}, requirement status {self.requirement_status}\n"
            f"--- subprocess output (tail) ---\n{self.output[-6000:]}"
        )


def junit_outcomes(path: Path) -> dict[str, str]:
    outcomes: dict[str, str] = {}
    if not path.is_file():
        return outcomes
    for case in ET.parse(path).getroot().iter("testcase"):
        nodeid = f"{case.get('classname', '')}::{case.get('name', '')}"
        tags = {child.tag for child in case}
        if "failure" in tags:
            outcomes[nodeid] = "failed"
        elif "error" in tags:
            outcomes[nodeid] = "error"
        elif "skipped" in tags:
            outcomes[nodeid] = "skipped"
        else:
            outcomes[nodeid] = "passed"
    return outcomes


def run_scenarios(
    cluster: str,
    profile: Path,
    requirement: str,
    report_dir: Path,
    extra: Sequence[str] = (),
    timeouts: Mapping[str, str] | None = None,
    fields: Mapping[str, Any] | None = None,
) -> BrokenRun:
    """One requirement's scenarios in a subprocess against the e2e cluster."""
    run_id = f"broken-{requirement.lower()}-{secrets.token_hex(3)}"
    profile = broken_run_profile(profile, report_dir, timeouts, fields)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(SUITE_ROOT / "scenarios"),
        *sealed_plugin_args(),  # as `dra-conformance run` loads them: anything else is foreign
        "-p",
        "no:cacheprovider",
        "-q",
        "-rfE",
        "--dra-profile",
        str(profile),
        "--dra-cluster",
        "kind",
        "--dra-cluster-name",
        cluster,
        "--dra-skip-install",
        "--dra-lease-book-name",  # inside the fixture's exclusive lease of the cluster's book
        f"dra-conformance-leases-{run_id}",
        "--dra-report-dir",
        str(report_dir / "report"),
        "--dra-run-id",
        run_id,
        "--dra-html-report",
        "never",
        "--dra-charts",  # a verdict is all a check reads
        "never",
        "--dra-requirement",
        requirement,
        *extra,
    ]
    result = subprocess.run(
        cmd,
        cwd=SUITE_ROOT,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT_S,
        env=sealed_environment(os.environ),
    )
    run = BrokenRun(
        requirement, (), output=result.stdout + result.stderr, returncode=result.returncode
    )
    run.outcomes = junit_outcomes(report_dir / "report" / "junit.xml")
    summary_path = report_dir / "report" / "summary.json"
    if summary_path.is_file():
        summary = json.loads(summary_path.read_text())
        run.summary = summary
        run.verdict = summary.get("verdict")
        row = next((r for r in summary.get("requirements", []) if r.get("id") == requirement), {})
        run.requirement_status = row.get("status")
        run.harness_error = bool(row.get("harness_error"))
    return run
