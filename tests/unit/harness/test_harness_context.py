"""Parsing what the API server says (metrics): pure functions. Cluster facts, the run context
and the live profile check against the test API server: test_harness_context_api.py; versions:
test_harness_kube_version.py."""

from __future__ import annotations

from conformance.run.context import parse_feature_gates

METRICS = """# HELP kubernetes_feature_enabled [BETA] This metric records the data about the stage
# TYPE kubernetes_feature_enabled gauge
kubernetes_feature_enabled{name="DRADeviceTaintRules",stage="BETA"} 0
kubernetes_feature_enabled{stage="",name="DynamicResourceAllocation"} 1
apiserver_request_total{code="200"} 12
"""


def test_parse_feature_gates() -> None:
    assert parse_feature_gates(METRICS) == {
        "DRADeviceTaintRules": False,
        "DynamicResourceAllocation": True,
    }
