"""The run's facts for the report (conformance/report/facts.py), from its context: the driver,
the cluster and its nodes, what kept the run from testing the driver."""

from __future__ import annotations

from typing import Any

from conformance.images.substitutes import build_notes
from conformance.report.facts import RunFacts
from conformance.run.context import RunContext


def run_facts(
    context: RunContext,
    identity: dict[str, Any] | None = None,
    node_facts: dict[str, Any] | None = None,
) -> RunFacts:
    """The run's facts for the report; `identity`: what the controller read of the driver
    (conformance/plugin/driver_identity.py); `node_facts`: of the nodes
    (conformance/plugin/node_identity.py)."""
    by_node = context.devices_by_node()
    details = (node_facts or {}).get("nodes") or {}
    return RunFacts(
        driver_name=context.profile.driver,
        profile_path=str(context.profile.source),
        cluster_provider=context.cluster.provider,
        cluster_name=context.cluster.name,
        kubernetes_version=context.git_version,
        nodes=tuple(
            {"name": n, "devices": len(by_node.get(n, ())), **details.get(n, {})}
            for n in context.nodes
        ),
        nodes_error=str((node_facts or {}).get("nodes_error") or ""),
        feature_gates=dict(context.feature_gates or {}),
        served_dra_apis=tuple(sorted(context.served_resources)),
        build_notes=build_notes(context.git_version) if context.cluster.provider == "kind" else (),
        capabilities=tuple(sorted(context.profile.capabilities)),
        fault_kinds=context.profile.faults.kinds,
        extra={
            "run_id": context.run_id,
            "workload_image": context.workload_image,
            "devices": [d.to_dict() for d in context.devices],
            "device_kinds": {
                k: (None if v is None else len(v)) for k, v in context.device_sets.items()
            },
            "feature_gates_error": context.feature_gates_error,
        },
        setup_problem=setup_problem(context),
        **dict(identity or {}),
    )


def setup_problem(context: RunContext) -> str:
    """What kept the run from testing the driver at all, for the report's header."""
    failure = context.readiness_failure
    return "" if failure is None else f"the driver never became ready: {failure.summary()}"
