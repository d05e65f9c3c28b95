"""The upgrade rehearsal: live DRA workloads on a cluster of version V1, an in-place upgrade
to V2 one step at a time (conformance.node_access.InPlaceUpgrade), and after every step the
checks of each DRA-UPG requirement, recorded as evidence the suite's tests then judge one by one.

Before the upgrade: on every worker, a pod with a claim of its own ("keeper"), pinned there; a
Deployment `app` of one pod with a claim from a template, on the first worker; the devices each
node publishes. After the control plane's upgrade and after each worker's: keepers on nodes not
drained yet are undisturbed (DRA-UPG-001) and their claims unchanged (DRA-UPG-002); every node
publishes the same devices again (DRA-UPG-003). After a worker's upgrade, a new claim's pod on
it runs (DRA-UPG-004). At the end, `app`'s pod, evicted by the drains, runs on an upgraded node
with a device of that node (DRA-UPG-005).

A step of the upgrade itself failing (kubeadm, a kubelet that does not come back) is the
platform's, not the driver's: the rehearsal stops and every requirement errs with that reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.errors import ClusterError
from conformance.kube.drain import DrainError
from conformance.kube.waits import WaitTimeout, wait_until
from conformance.model.outcome import HarnessError
from conformance.node_access import InPlaceUpgrade
from conformance.observe.steps import step
from conformance.scenario_api import deployments
from conformance.scenario_api.placement import devices_on
from conformance.scenario_api.workloads import Workloads

UPG_KEEP = "DRA-UPG-001"
UPG_CLAIMS = "DRA-UPG-002"
UPG_SLICES = "DRA-UPG-003"
UPG_NEW_CLAIM = "DRA-UPG-004"
UPG_EVICTED = "DRA-UPG-005"
REQUIREMENTS = (UPG_KEEP, UPG_CLAIMS, UPG_SLICES, UPG_NEW_CLAIM, UPG_EVICTED)


class RehearsalStopped(HarnessError):
    """A step of the upgrade itself failed: no requirement can be judged past it."""


@dataclass
class Evidence:
    checks: list[str] = field(default_factory=list)  # what was checked, when
    problems: list[str] = field(default_factory=list)


@dataclass
class Keeper:
    name: str
    node: str
    uid: str
    restarts: int
    allocation: Any
    results: list[Any]


def _restarts(pod: dict[str, Any]) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    return sum(int(s.get("restartCount") or 0) for s in statuses)


class Rehearsal:
    def __init__(self, workload: Workloads, upgrade: InPlaceUpgrade) -> None:
        self.workload = workload
        self.upgrade = upgrade
        self.context = workload.context
        self.evidence = {req: Evidence() for req in REQUIREMENTS}
        self.keepers: list[Keeper] = []
        self.drained: set[str] = set()
        self.baseline: dict[str, list[str]] = {}
        self.app_uids: set[str] = set()
        self.stopped: str | None = None

    # --- evidence ---------------------------------------------------------------------------

    def _check(self, req: str, what: str, problems: list[str]) -> None:
        self.evidence[req].checks.append(what)
        self.evidence[req].problems.extend(f"{what}: {p}" for p in problems)

    def _platform(self, what: str, action: Callable[[], Any]) -> Any:
        try:
            return action()
        except ClusterError as exc:
            self.stopped = f"{what} failed: {exc}"
            raise RehearsalStopped(self.stopped) from exc

    # --- the journey ------------------------------------------------------------------------

    def run(self) -> None:
        self.set_up()
        self._platform("staging the new version", self.upgrade.stage)
        self._platform("the control plane's upgrade", self.upgrade.upgrade_control_plane)
        self.check_all(f"after the control plane's upgrade to {self.upgrade.version}")
        for node in self.upgrade.workers:
            self.drained.add(node)
            self.drain(node)
            self._platform(f"upgrading node {node}", lambda n=node: self.upgrade.upgrade_node(n))
            self.check_all(f"after node {node}'s upgrade")
            self.check_new_claim(node)
        self.check_evicted_app()

    def drain(self, node: str) -> None:
        try:
            self.upgrade.drain(node, timeout_s=self.context.timeout("podDeleted") * 2)
        except DrainError as exc:
            # pods that do not go are the driver's to answer for (unprepare), not kubeadm's
            self._check(UPG_EVICTED, f"draining node {node}", [str(exc)])
            self.stopped = f"draining node {node} failed"
            raise RehearsalStopped(self.stopped) from exc

    def set_up(self) -> None:
        w = self.workload
        for i, node in enumerate(self.upgrade.workers):
            if not devices_on(self.context, node):
                continue
            name = f"keep-{i}"
            w.claim(name)
            pod = w.run(name, [name], node=node)
            claim = w.read_claim(name) or {}
            self.keepers.append(
                Keeper(
                    name,
                    node,
                    pod["metadata"]["uid"],
                    _restarts(pod),
                    (claim.get("status") or {}).get("allocation"),
                    w.results(name),
                )
            )
        assert self.keepers, "setup: no worker publishes a device of kind default"
        w.template("one-device")
        first = self.keepers[0].node
        deployments.create_claim_deployment(w, "app", template="one-device", prefer=first)
        [app] = deployments.wait_ready_pods(w, "app", 1)
        self.app_uids.add(app["metadata"]["uid"])
        self.baseline = self._published()

    def check_all(self, when: str) -> None:
        with step(f"check the DRA workloads {when}"):
            self.check_keepers(when)
            self.check_slices(when)

    def check_keepers(self, when: str) -> None:
        w = self.workload
        for keeper in self.keepers:
            if keeper.node in self.drained:
                continue  # its pod was evicted with the drain
            pod_problems: list[str] = []
            pod = w.read_pod(keeper.name)
            if pod is None or pod["metadata"]["uid"] != keeper.uid:
                pod_problems.append(f"pod {keeper.name} on {keeper.node} was deleted or replaced")
            else:
                phase = (pod.get("status") or {}).get("phase")
                if phase != "Running":
                    pod_problems.append(f"pod {keeper.name} is {phase}, not Running")
                if _restarts(pod) != keeper.restarts:
                    pod_problems.append(
                        f"pod {keeper.name}'s containers restarted "
                        f"({keeper.restarts} -> {_restarts(pod)} restarts)"
                    )
                if not pod_problems:
                    try:
                        w.assert_sees_exactly(keeper.name, keeper.results)
                    except AssertionError as exc:
                        pod_problems.append(str(exc).splitlines()[0])
            self._check(UPG_KEEP, f"{when}, pod {keeper.name}", pod_problems)
            claim_problems: list[str] = []
            claim = w.read_claim(keeper.name)
            status = (claim or {}).get("status") or {}
            if claim is None:
                claim_problems.append(f"claim {keeper.name} is gone")
            elif status.get("allocation") != keeper.allocation:
                claim_problems.append(
                    f"claim {keeper.name}'s allocation changed from {keeper.allocation} to "
                    f"{status.get('allocation')}"
                )
            reserved = {r.get("uid") for r in status.get("reservedFor") or ()}
            if claim is not None and keeper.uid not in reserved:
                claim_problems.append(
                    f"claim {keeper.name} is no longer reserved for pod {keeper.name} "
                    f"(reservedFor {status.get('reservedFor')})"
                )
            self._check(UPG_CLAIMS, f"{when}, claim {keeper.name}", claim_problems)

    def _published(self) -> dict[str, list[str]]:
        by_node: dict[str, list[str]] = {}
        for device in self.workload.live_devices().values():
            by_node.setdefault(device.node or "(no node)", []).append(device.id)
        return {node: sorted(ids) for node, ids in sorted(by_node.items())}

    def check_slices(self, when: str) -> None:
        # The kubelet may drop and the plugin republish a node's slices around a restart:
        # judged on what is published once that settles, within the profile's timeout.
        try:
            wait_until(
                self._published,
                lambda now: now == self.baseline,
                describe=f"every node to publish the same devices as before the upgrade ({when})",
                timeout=self.context.timeout("slicesPublished"),
                interval=3.0,
                show=lambda now: {"before": self.baseline, "now": now},
            )
            problems: list[str] = []
        except WaitTimeout as exc:
            problems = [str(exc)]
        self._check(UPG_SLICES, when, problems)

    def check_new_claim(self, node: str) -> None:
        w = self.workload
        name = f"new-{self.upgrade.workers.index(node)}"
        problems: list[str] = []
        try:
            w.claim(name)
            w.run(name, [name], node=node)
            w.assert_sees_exactly(name, w.results(name))
        except AssertionError as exc:  # WaitTimeout and WaitAborted are AssertionErrors
            problems.append(str(exc))
        finally:
            w.delete_pod(name)  # frees its device for the pods the next drain moves
        self._check(UPG_NEW_CLAIM, f"a new claim's pod on the upgraded node {node}", problems)

    def check_evicted_app(self) -> None:
        w = self.workload
        when = "after every node's upgrade, Deployment app's pod"
        problems: list[str] = []
        try:
            [pod] = deployments.wait_ready_pods(w, "app", 1, exclude_uids=self.app_uids)
            node = pod["spec"]["nodeName"]
            version = self.upgrade.k8s.core.read_node(node).status.node_info.kubelet_version
            if version != self.upgrade.version:
                problems.append(f"it runs on {node}, whose kubelet is {version}")
            claim = deployments.claim_of(w, pod)
            results = w.results(claim)
            elsewhere = [
                r.device_id
                for r in results
                if (d := self.context.device(r.device_id)) is None or d.node != node
            ]
            if elsewhere:
                problems.append(f"it got devices {elsewhere}, not published for {node}")
            w.assert_sees_exactly(pod["metadata"]["name"], results)
        except AssertionError as exc:  # WaitTimeout and WaitAborted are AssertionErrors
            problems.append(str(exc))
        self._check(UPG_EVICTED, when, problems)

    # --- judging ----------------------------------------------------------------------------

    def judge(self, req: str) -> None:
        """Fail with what broke; err when the rehearsal never got to check the requirement."""
        evidence = self.evidence[req]
        if evidence.problems:
            # the first line is the report's reason: the first thing that broke
            first = evidence.problems[0].splitlines()[0]
            failed, made = len(evidence.problems), len(evidence.checks)
            raise AssertionError(
                f"{first} ({failed} of {made} checks failed)\n"
                + "\n".join(f"- {p}" for p in evidence.problems)
            )
        if self.stopped and not evidence.checks:
            raise RehearsalStopped(f"the rehearsal stopped before checking {req}: {self.stopped}")
        if not evidence.checks:
            raise RehearsalStopped(f"the rehearsal made no check of {req}")
        if self.stopped:
            raise RehearsalStopped(
                f"{req} held in {len(evidence.checks)} checks, then the rehearsal stopped: "
                f"{self.stopped}"
            )

    def summary(self) -> dict[str, Any]:
        return {
            "upgrade": f"{self.context.git_version} -> {self.upgrade.version}",
            "stopped": self.stopped,
            "step_seconds": {k: round(v, 1) for k, v in self.upgrade.timings.items()},
            "evidence": {
                req: {"checks": e.checks, "problems": e.problems}
                for req, e in self.evidence.items()
            },
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
