"""Parsing what the API server says (metrics): pure functions. Cluster facts, the run context
and the live profile check against the test API server: tests/apiserver/run/test_context.py;
versions: tests/unit/model/test_kube_version.py."""

from __future__ import annotations

from conformance.cluster.status import dra_gates
from conformance.model.feature_gates import gates_from_metrics

METRICS = """# HELP kubernetes_feature_enabled [BETA] This metric records the data about the stage
# TYPE kubernetes_feature_enabled gauge
kubernetes_feature_enabled{name="DRADeviceTaintRules",stage="BETA"} 0
kubernetes_feature_enabled{stage="",name="DynamicResourceAllocation"} 1
apiserver_request_total{code="200"} 12
kubernetes_feature_enabled{name="ResourceHealthStatus",stage="ALPHA"} 1
"""


def test_parse_feature_gates() -> None:
    assert gates_from_metrics(METRICS) == {
        "DRADeviceTaintRules": False,
        "DynamicResourceAllocation": True,
        "ResourceHealthStatus": True,
    }


def test_a_family_the_suite_never_reads_does_not_stop_the_gates() -> None:
    broken = METRICS + 'some_other_family{le="x" 1 2 3 not prometheus\n'
    assert gates_from_metrics(broken)["DynamicResourceAllocation"] is True


def test_status_shows_only_the_gates_of_dra() -> None:
    assert dra_gates(
        METRICS + 'kubernetes_feature_enabled{name="InPlacePodVerticalScaling"} 1\n'
    ) == {
        "DRADeviceTaintRules": False,
        "DynamicResourceAllocation": True,
        "ResourceHealthStatus": True,
    }
