"""Runs from two machines share one cluster through its device lease book (ConfigMaps in
namespace dra-conformance), and a killed run's leases come back within their expiry.

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
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from leftovers_check import NotYet, cli, poll, run_cmd

from conformance.cache import CACHE_ENV, cache_root
from conformance.cluster import kind
from conformance.kube.client import K8sClients
from conformance.model.devices import kind_device_sets
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

pytestmark = pytest.mark.e2e

EXPIRY_S = 15.0
# Contended: ALLOC-005 wants every device of a kind, ALLOC-004 several, ALLOC-001 one of them.
CONTENDED = ("DRA-ALLOC-001", "DRA-ALLOC-004", "DRA-ALLOC-005")
HOLDS_ALL_OF_A_KIND = "DRA-ALLOC-005"


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


def _statuses(report_dir: Path) -> dict[str, str]:
    summary = json.loads((report_dir / "summary.json").read_text())
    return {r["id"]: r["status"] for r in summary["requirements"] if r["id"] in CONTENDED}


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
    started = time.time()
    alone = subprocess.run(
        run_cmd(kind_cluster.name, f"alone-{secrets.token_hex(3)}", tmp_path / "alone")
        + _requirements(*CONTENDED),
        cwd=SUITE_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert alone.returncode in (0, 3), alone.stdout[-3000:] + alone.stderr[-2000:]
    env, kubeconfig = _machine(tmp_path / "machine-2", kind_cluster.kubeconfig)
    first_machine = {**os.environ, EXPIRY_ENV: str(EXPIRY_S)}
    since = time.time()
    procs = {
        "one": subprocess.Popen(
            run_cmd(kind_cluster.name, f"one-{secrets.token_hex(3)}", tmp_path / "one")
            + _requirements(*CONTENDED)
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
                "-n",
                "2",
                *_requirements(*CONTENDED),
            ),
            cwd=SUITE_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        ),
    }
    outputs = {name: p.communicate(timeout=900)[0] for name, p in procs.items()}
    together = time.time() - since
    expected = _statuses(tmp_path / "alone")
    for name, proc in procs.items():
        assert proc.returncode == alone.returncode, f"run {name}: {outputs[name][-3000:]}"
        assert _statuses(tmp_path / name) == expected, f"run {name}: {outputs[name][-3000:]}"
    journal = [x for x in ClusterLeaseBook(k8s.core).journal() if x["t"] >= since]
    owners = {x["owner"] for x in journal if x["event"] == "grant"}
    assert len({o.split("/")[1] for o in owners}) >= 2, f"one process leased everything: {owners}"
    most = _never_oversubscribed(_policy(k8s, fake_driver), journal)
    print(
        f"alone {since - started:.0f}s; two runs together {together:.0f}s; "
        f"{len(journal)} journal lines, at most {most} leases held at once"
    )


def test_a_killed_runs_leases_come_back_within_their_expiry(
    kind_cluster: kind.KindCluster, fake_driver: Profile, k8s: K8sClients, tmp_path: Path
) -> None:
    env = {**os.environ, EXPIRY_ENV: str(EXPIRY_S)}
    killed_id = f"killed-{secrets.token_hex(3)}"
    killed = subprocess.Popen(
        run_cmd(kind_cluster.name, killed_id, tmp_path / "killed")
        + _requirements(HOLDS_ALL_OF_A_KIND),
        cwd=SUITE_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: SIGKILL reaches every process
    )
    try:

        def holding() -> tuple[str, list[float]]:
            if killed.poll() is not None:
                pytest.fail(f"the run ended (exit {killed.returncode}) before it held a lease")
            book = _book(k8s)
            held = [
                e["owner"]
                for e in book.get("entries", {}).values()
                if e["state"] == HELD and "test_alloc_count" in e["holder"]
            ]
            if not held:
                raise NotYet(f"no lease of the run held yet: {book.get('entries')}")
            return held[0], book["heartbeats"][held[0]]

        owner, beat = poll(holding, timeout=240, interval=0.5)
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait(timeout=30)
    killed_at = time.time()
    last_beat = float(_book(k8s)["heartbeats"].get(owner, beat)[0])
    assert last_beat + EXPIRY_S > time.time(), "the test was too slow to see the lease held"

    # The next run asks for the same devices at once; the dead run's lease stands in its way
    # until the expiry, then goes. Its leftovers (the pod holding the devices) go with cleanup.
    next_run = subprocess.Popen(
        run_cmd(kind_cluster.name, f"next-{secrets.token_hex(3)}", tmp_path / "next")
        + _requirements(HOLDS_ALL_OF_A_KIND),
        cwd=SUITE_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        book = ClusterLeaseBook(k8s.core, expire_after=EXPIRY_S)

        def dead() -> None:
            from conformance.run.live_runs import live_run_ids

            if killed_id in live_run_ids(book):
                raise NotYet(f"run {killed_id} still counts as alive")

        poll(dead, timeout=EXPIRY_S + 30, interval=0.5)
        book.close()
        cleanup = subprocess.run(
            cli("cleanup", "--run-id", killed_id, "--name", kind_cluster.name),
            cwd=SUITE_ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
        output = next_run.communicate(timeout=600)[0]
    finally:
        if next_run.poll() is None:
            next_run.kill()
    assert next_run.returncode == 0, output[-3000:]
    grants = [
        x
        for x in ClusterLeaseBook(k8s.core).journal()
        if x["event"] == "grant" and x["t"] >= killed_at and x["owner"] != owner
    ]
    assert grants, "the next run's lease is not in the journal"
    granted, waited = grants[0]["t"], grants[0]["waited_s"]
    # Not before the dead holder's expiry (its devices counted until then), and, from when the
    # next run asked (its start-up is not the book's), not longer than the expiry.
    assert granted >= last_beat + EXPIRY_S - 1.0, (granted, last_beat)
    assert granted - waited < last_beat + EXPIRY_S, (
        "the next run asked only after the dead run's lease had expired: nothing was shown "
        "(its start-up took longer than the expiry)"
    )
    assert waited <= EXPIRY_S + 10.0, f"the next run waited {waited:.1f}s for the devices"
    print(
        f"the next run waited {waited:.1f}s for the devices, "
        f"{granted - killed_at:.1f}s after the kill"
    )
