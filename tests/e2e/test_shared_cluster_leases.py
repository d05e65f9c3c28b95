"""Runs from two machines share one cluster through its device lease book (ConfigMaps in
namespace dra-conformance).

Run by hand (`pytest tests/e2e/test_shared_cluster_leases.py`): three runs of the contended
allocation requirements take about 25 minutes on a loaded 2-core machine, past the CI budget.

Two "machines" are two cache directories (`DRA_CONFORMANCE_CACHE`): nothing on disk is shared
but the Go tools a runner has installed; the second reaches the cluster by a kubeconfig
(`--cluster existing`), as a CI runner would. The expiry is shortened for these runs
(`DRA_CONFORMANCE_LEASE_EXPIRY`), so the test waits seconds, not a minute.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from leftovers_check import cli, run_cmd

from conformance.cache import CACHE_ENV, cache_root
from conformance.cel.selection import kind_device_sets
from conformance.cluster import kind
from conformance.kube.client import K8sClients
from conformance.model.profile import SUITE_ROOT, Profile
from conformance.run.cluster_lease_book import (
    CONFIG_MAP,
    EXPIRY_ENV,
    NAMESPACE,
    ClusterLeaseBook,
)
from conformance.run.context import read_cluster_facts
from conformance.run.lease_book import entry_from_json
from conformance.run.lease_policy import AdmissionPolicy
from conformance.run.lease_types import HELD

pytestmark = [pytest.mark.e2e, pytest.mark.e2e_by_hand]  # past the CI budget

EXPIRY_S = 15.0
# Contended: ALLOC-005 wants every device of a kind, ALLOC-004 several, ALLOC-001 one of them.
CONTENDED = ("DRA-ALLOC-001", "DRA-ALLOC-004", "DRA-ALLOC-005")
HOLDS_ALL_OF_A_KIND = "DRA-ALLOC-005"
# The second machine reaches the cluster by its kubeconfig alone (`--cluster existing`): it
# cannot restart a kind node's container or its kubelet, so those requirements are not run there.
NO_NODE_ACCESS = "this existing cluster has no kind node containers"


def _requirements(*ids: str) -> list[str]:
    return [arg for r in ids for arg in ("--dra-requirement", r)]


def _machine(root: Path, kubeconfig: Path) -> tuple[dict[str, str], Path]:
    """A second machine's environment and its own copy of the kubeconfig: a cache directory
    of its own, with the Go tools a runner has installed."""
    root.mkdir(parents=True)
    (root / "bin").symlink_to(cache_root() / "bin", target_is_directory=True)
    copy = root / "kubeconfig"
    shutil.copy(kubeconfig, copy)
    return {**os.environ, CACHE_ENV: str(root), EXPIRY_ENV: str(EXPIRY_S)}, copy


def _statuses(report_dir: Path, only: tuple[str, ...] | None) -> dict[str, str]:
    summary = json.loads((report_dir / "summary.json").read_text())
    return {
        r["id"]: r["status"] for r in summary["requirements"] if only is None or r["id"] in only
    }


def _not_run_for(report_dir: Path, why: str) -> set[str]:
    summary = json.loads((report_dir / "summary.json").read_text())
    return {
        r["id"]
        for r in summary["requirements"]
        if r["status"] == "not-run" and why in (r.get("reason") or "")
    }


def _policy(k8s: K8sClients, profile: Profile) -> AdmissionPolicy:
    """The rules every run built from the cluster's devices (the same published devices)."""
    facts = read_cluster_facts(k8s, profile)
    sets = kind_device_sets(profile, facts.devices, facts.device_classes)
    return AdmissionPolicy(sets, {d.id: d.node for d in facts.devices})


def _never_oversubscribed(policy: AdmissionPolicy, journal: list[dict[str, Any]]) -> int:
    """Replay the journal: the leases held at once, by either run, always fit the cluster's
    devices. Returns the most leases held at once."""
    held: dict[tuple[str, int], Any] = {}
    most = 0
    for line in journal:
        key = (line["owner"], line["ticket"])
        if line["event"] == "release":
            held.pop(key, None)
            continue
        entry = entry_from_json({**line, "state": HELD, "since": line["t"]})
        held[key] = entry
        most = max(most, len(held))
        assert policy.fits(list(held.values())), (
            f"granted {line['holder']} while these were held: "
            + "; ".join(f"{e.holder} {e.needs} {e.scope} {e.node}" for e in held.values())
        )
    return most


def _book(k8s: K8sClients) -> Mapping[str, Any]:
    """The book as stored, read without writing (no heartbeat of this process in it)."""
    config_map = k8s.core.read_namespaced_config_map(CONFIG_MAP, NAMESPACE)
    return json.loads((config_map.data or {}).get("book") or "{}")


def test_two_machines_share_the_cluster_without_oversubscribing_it(
    kind_cluster: kind.KindCluster, fake_driver: Profile, k8s: K8sClients, tmp_path: Path
) -> None:
    _two_machines(kind_cluster, fake_driver, k8s, tmp_path, _requirements(*CONTENDED), CONTENDED)


def test_two_machines_run_the_whole_suite_together(
    kind_cluster: kind.KindCluster, fake_driver: Profile, k8s: K8sClients, tmp_path: Path
) -> None:
    """Every requirement, disruptive ones included (a node restart leases its node whole from
    both runs' point of view), with the statuses of a run alone."""
    _two_machines(kind_cluster, fake_driver, k8s, tmp_path, [], None, timeout=3600)


def _two_machines(
    kind_cluster: kind.KindCluster,
    fake_driver: Profile,
    k8s: K8sClients,
    tmp_path: Path,
    selection: list[str],
    compared: tuple[str, ...] | None,
    timeout: float = 900,
) -> None:
    """A run alone, then two runs of `selection` started together, one from each machine:
    both end as the run alone did (the `compared` requirements' statuses, None: all), and the
    cluster's lease journal never shows more granted at once than its devices allow."""
    started = time.time()
    alone = subprocess.run(
        run_cmd(kind_cluster.name, f"alone-{secrets.token_hex(3)}", tmp_path / "alone")
        + selection
        + ["-n", "2"],  # as each of the two
        cwd=SUITE_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert alone.returncode in (0, 3), alone.stdout[-3000:] + alone.stderr[-2000:]
    env, kubeconfig = _machine(tmp_path / "machine-2", kind_cluster.kubeconfig)
    first_machine = {**os.environ, EXPIRY_ENV: str(EXPIRY_S)}
    since = time.time()
    procs = {
        "one": subprocess.Popen(
            run_cmd(kind_cluster.name, f"one-{secrets.token_hex(3)}", tmp_path / "one")
            + selection
            + ["-n", "2"],
            cwd=SUITE_ROOT,
            env=first_machine,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        ),
        "two": subprocess.Popen(
            cli(
                "run",
                "--profile",
                "drivers/fake/profile.yaml",
                "--cluster",
                "existing",
                "--kubeconfig",
                str(kubeconfig),
                "--run-id",
                f"two-{secrets.token_hex(3)}",
                "--report-dir",
                str(tmp_path / "two"),
                "--dra-skip-install",
                "--allow-disruptive",  # as the first machine's run (run_cmd)
                "-n",
                "2",
                *selection,
            ),
            cwd=SUITE_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        ),
    }
    outputs = {name: p.communicate(timeout=timeout)[0] for name, p in procs.items()}
    together = time.time() - since
    expected = _statuses(tmp_path / "alone", compared)
    for name, proc in procs.items():
        got = _statuses(tmp_path / name, compared)
        if name == "two":  # what it cannot do from there is not run, and nothing else differs
            unreachable = _not_run_for(tmp_path / name, NO_NODE_ACCESS)
            got = {rid: expected.get(rid) if rid in unreachable else s for rid, s in got.items()}
            codes = (alone.returncode, 3) if unreachable else (alone.returncode,)
        else:
            codes = (alone.returncode,)
        assert proc.returncode in codes, f"run {name}: {outputs[name][-3000:]}"
        assert got == expected, f"run {name}: {outputs[name][-3000:]}"
    journal = [x for x in ClusterLeaseBook(k8s.core).journal() if x["t"] >= since]
    owners = {x["owner"] for x in journal if x["event"] == "grant"}
    assert len({o.split("/")[1] for o in owners}) >= 2, f"one process leased everything: {owners}"
    most = _never_oversubscribed(_policy(k8s, fake_driver), journal)
    print(
        f"alone {since - started:.0f}s; two runs together {together:.0f}s; "
        f"{len(journal)} journal lines, at most {most} leases held at once"
    )
