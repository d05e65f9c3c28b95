"""A control-plane component the run could not read because of its own arguments: the report
says which to set, and only then (not for the run's RBAC or a managed control plane)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from conformance.metrics.operations import driver_operations
from conformance.metrics.scrape import (
    CONTROLLER_MANAGER,
    SCHEDULER,
    Snapshot,
    arguments_would_help,
    take_snapshot,
)
from conformance.report.driver_markdown import driver_operations_section

HINT = (
    "to measure it, run it with --bind-address=0.0.0.0 and "
    "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"
)
REFUSED = "error trying to reach service: dial tcp 172.18.0.2:10259: connect: connection refused"
ANONYMOUS = 'forbidden: User "system:anonymous" cannot get path "/metrics"'
RBAC = (
    'pods "kube-scheduler-cp" is forbidden: User "system:serviceaccount:dra:runner" cannot get '
    'resource "pods/proxy" in API group "" in the namespace "kube-system"'
)


def _api_error(status: int, message: str) -> ApiException:
    exc = ApiException(status=status, reason="Error")
    exc.body = json.dumps({"kind": "Status", "message": message}).encode()
    return exc


@pytest.mark.parametrize(
    ("exc", "helps"),
    [
        (_api_error(503, REFUSED), True),  # bound to 127.0.0.1
        (_api_error(403, ANONYMOUS), True),  # /metrics not among the always-allowed paths
        (_api_error(401, "Unauthorized"), True),
        (_api_error(403, RBAC), False),  # the run's account: RBAC, not the component
        (_api_error(503, "error trying to reach service: i/o timeout"), False),
        (urllib3.exceptions.ReadTimeoutError(None, "/", "read timed out"), False),
    ],
)
def test_only_what_the_components_arguments_decide_gets_the_hint(
    exc: Exception, helps: bool
) -> None:
    assert arguments_would_help(exc) is helps


class _Cluster:
    """Two nodes' kubelets read, both components refuse the proxy (kubeadm's 127.0.0.1)."""

    def __init__(self, refusal: ApiException) -> None:
        self.refusal = refusal
        self.core = SimpleNamespace(list_node=self._nodes, list_namespaced_pod=self._pods)

    @staticmethod
    def _nodes(**_: Any) -> SimpleNamespace:
        return SimpleNamespace(items=[SimpleNamespace(metadata=SimpleNamespace(name="worker"))])

    @staticmethod
    def _pods(namespace: str, label_selector: str, **_: Any) -> SimpleNamespace:
        component = label_selector.split("=", 1)[1]
        return SimpleNamespace(items=[SimpleNamespace(metadata=SimpleNamespace(name=component))])

    def get_raw(self, path: str, **_: Any) -> str:
        if "/nodes/" in path:
            return 'dra_resource_claims_in_use{driver_name="<any>"} 0\n'
        raise self.refusal


def _snapshot(refusal: ApiException, taken: float) -> Snapshot:
    snapshot = take_snapshot(_Cluster(refusal), (SCHEDULER, CONTROLLER_MANAGER))  # type: ignore[arg-type]
    snapshot.taken = taken
    return snapshot


def test_a_component_on_localhost_is_not_available_with_the_arguments_to_set() -> None:
    start, end = (
        _snapshot(_api_error(503, REFUSED), 1000.0),
        _snapshot(_api_error(503, REFUSED), 1090.0),
    )
    assert end.remedies == {"kube-scheduler": HINT, "kube-controller-manager": HINT}
    ops = driver_operations(start, end)
    assert ops["scheduler"] is None and ops["grpc"] == []
    assert ops["unavailable"]["scheduler"] == (
        f"kube-scheduler: not available (HTTP 503: {REFUSED} — it listens on its node's "
        f"localhost only); {HINT}"
    )
    assert ops["unavailable"]["claim_controller"].startswith(
        "kube-controller-manager: not available (HTTP 503: "
    )
    assert ops["unavailable"]["claim_controller"].endswith(f"; {HINT}")
    text = "\n".join(driver_operations_section({"driver_operations": ops}))
    assert "- scheduler (DynamicResources): not available (kube-scheduler: not available" in text
    assert "- resource-claim controller: not available (kube-controller-manager: " in text
    assert text.count(HINT) == 2, text


def test_a_component_the_runs_account_may_not_proxy_to_gets_no_hint() -> None:
    ops = driver_operations(
        _snapshot(_api_error(403, RBAC), 1000.0), _snapshot(_api_error(403, RBAC), 1090.0)
    )
    assert "pods/proxy" in ops["unavailable"]["scheduler"]
    assert "to measure it" not in json.dumps(ops["unavailable"])


def test_a_run_that_asked_for_no_component_has_no_hint() -> None:
    ops = driver_operations(Snapshot(1000.0), Snapshot(1090.0))
    assert "claim_controller" not in ops["unavailable"]
    assert ops["unavailable"]["scheduler"] == "kube-scheduler: not read"
