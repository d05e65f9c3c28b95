"""Parsing what the API server says (metrics, versions): pure functions. Cluster facts, the
run context and the live profile check against the test API server: test_harness_context_api.py."""

from __future__ import annotations

import pytest

from conformance.run.context import parse_feature_gates, parse_version

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


@pytest.mark.parametrize(
    "text,version",
    [("v1.37.2", (1, 37)), ("v1.36.0-beta.0+abc", (1, 36)), ("1.35", (1, 35)), ("weird", None)],
)
def test_parse_version(text: str, version: tuple[int, int] | None) -> None:
    assert parse_version(text) == version
