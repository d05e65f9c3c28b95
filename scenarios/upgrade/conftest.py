"""Fixture of the upgrade suite: the rehearsal, run once for the module's tests.

Collected only with `--dra-upgrade-to V2` (`dra-conformance gate --rehearse`): it upgrades the
run's kind cluster in place, so nothing else may run on that cluster meanwhile, nor after it
on the assumption that the cluster is still V1.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator

import pytest
from rehearsal import Rehearsal, RehearsalStopped

from conformance.kube import drain
from conformance.kube.builders import Builders
from conformance.kube.cleanup import NamespaceRegistry, create_test_namespace, release_namespace
from conformance.kube.client import K8sClients
from conformance.model.naming import namespace_name
from conformance.model.outcome import not_run
from conformance.node_access import NodeAccess, Operation
from conformance.progress import Progress
from conformance.run.context import RunContext
from conformance.scenario_api.workloads import Workloads

REHEARSAL_ID = "scenarios/upgrade::rehearsal"


class TerminalProgress(Progress):
    """Stage lines on the terminal while pytest captures the fixture's output: the upgrade
    takes minutes. No heartbeat thread (capture is switched off from this thread only)."""

    def __init__(self, config: pytest.Config) -> None:
        super().__init__(heartbeat_s=None)
        self.capture = config.pluginmanager.getplugin("capturemanager")

    def _print(self, text: str) -> None:
        if self.capture is None:
            super()._print(text)
            return
        with self.capture.global_and_fixture_disabled():
            # sys.stderr now, not when the object was made: then it was the capture's
            self.stream = sys.stderr
            super()._print(text)


@pytest.fixture(scope="module")
def rehearsal(
    request: pytest.FixtureRequest,
    dra_context: RunContext,
    k8s: K8sClients,
    node_access: NodeAccess,
) -> Iterator[Rehearsal]:
    target = request.config.getoption("dra_upgrade_to")
    if (refused := node_access.unavailable(Operation.UPGRADE, "*")) is not None:
        not_run(
            f"the upgrade rehearsal upgrades the cluster in place: {refused.problem}",
            "run it with --cluster kind (`dra-conformance gate --rehearse --from V1 --to V2`)",
        )
    build = Builders(dra_context.run_id, "upgrade-rehearsal", dra_context.profile.verification)
    registry = NamespaceRegistry(dra_context.harness_dir / "namespaces")
    namespace = namespace_name(dra_context.run_id, REHEARSAL_ID)
    create_test_namespace(k8s, build, registry, namespace, REHEARSAL_ID)
    workload = Workloads(k8s, build, namespace, dra_context)  # no per-test metrics here
    upgrade = node_access.in_place_upgrade(
        target,
        k8s=k8s,
        progress=TerminalProgress(request.config),
        logs_dir=dra_context.run_dir / "upgrade",
        run_id=dra_context.run_id,
    )
    journey = Rehearsal(workload, upgrade)
    try:
        journey.run()
    except RehearsalStopped:
        pass  # each requirement's test reports it
    finally:
        upgrade.logs_dir.mkdir(parents=True, exist_ok=True)
        (upgrade.logs_dir / "rehearsal.json").write_text(json.dumps(journey.summary(), indent=2))
    yield journey
    for node in upgrade.workers:  # a drain that failed leaves its node cordoned
        if drain.is_cordoned(k8s, node):
            drain.uncordon(k8s, node)
    release_namespace(k8s, namespace, timeout=dra_context.timeout("namespaceDeleted"))
