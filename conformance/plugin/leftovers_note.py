"""The report header's line on what earlier runs left on the cluster: this run registers as
alive first, so a run that died without cleaning up is told apart from one still running."""

from __future__ import annotations

import pytest

from conformance.kube.client import load_clients
from conformance.run.context import RunContext

LEFTOVERS_KEY = pytest.StashKey[str]()  # the header's line on leftovers of dead runs


def register_and_find_leftovers(config: pytest.Config, context: RunContext) -> str:
    """Register this run as alive, then name what runs without a live process left on the
    cluster (never deleted here: `dra-conformance cleanup --run-id ID` does that)."""
    from conformance.kube.leftovers import dead_runs_note, find_leftovers
    from conformance.plugin.fixtures import lease_book
    from conformance.run.live_runs import live_run_ids, register_run

    try:
        book = lease_book(config, context)
        register_run(book, context.run_id)
        k8s = load_clients(context.cluster.kubeconfig, context.cluster.context)
        leftovers = find_leftovers(k8s, api_versions=list(context.served_resources))
        return dead_runs_note(leftovers, live_run_ids(book), context.run_id)
    except Exception as exc:  # noqa: BLE001 - a header note never stops a run
        status = getattr(exc, "status", None)
        detail = f"HTTP {status} {getattr(exc, 'reason', '')}" if status else str(exc)
        return (
            "dra-conformance: could not look for leftovers of earlier runs: "
            f"{type(exc).__name__}: {detail.splitlines()[0] if detail else ''}"
        )
