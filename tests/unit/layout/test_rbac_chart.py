"""The in-cluster account two ways: deploy/rbac/dra-conformance.yaml (every suite, one
`kubectl apply`) and the chart deploy/chart/ (chosen suites, rules per suite in
files/rules.yaml). Both must grant the same, and the chart must know every suite of the
catalog; what an API server's authorizer makes of the rendered chart is checked in
tests/apiserver/cluster/test_rbac_chart.py."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from conformance.suite_root import SUITE_ROOT

RULES = SUITE_ROOT / "deploy/chart/files/rules.yaml"
MANIFEST = SUITE_ROOT / "deploy/rbac/dra-conformance.yaml"
CATALOG = SUITE_ROOT / "scenarios/requirements.yaml"

Grant = tuple[str, str, str]  # (API group or "url", resource or non-resource URL, verb)


def grants(rules: Iterable[Mapping[str, Any]]) -> set[Grant]:
    out: set[Grant] = set()
    for rule in rules:
        for verb in rule["verbs"]:
            for url in rule.get("nonResourceURLs") or ():
                out.add(("url", url, verb))
            for group in rule.get("apiGroups") or ():
                out.update((group, resource, verb) for resource in rule["resources"])
    return out


def _chart_rules() -> dict[str, Any]:
    return yaml.safe_load(RULES.read_text())


def test_the_chart_for_every_suite_grants_what_the_manifest_grants() -> None:
    chart = _chart_rules()
    union = grants(chart["every"])
    for rules in chart["suites"].values():
        union |= grants(rules or ())
    [role] = [
        d for d in yaml.safe_load_all(MANIFEST.read_text()) if d and d["kind"] == "ClusterRole"
    ]
    manifest = grants(role["rules"])
    assert union - manifest == set(), "the chart grants more than deploy/rbac"
    assert manifest - union == set(), "deploy/rbac grants what no suite of the chart needs"


def test_the_chart_knows_every_suite_of_the_catalog() -> None:
    catalog = yaml.safe_load(CATALOG.read_text())
    entries = catalog["requirements"] if isinstance(catalog, dict) else catalog
    suites = {r["suite"] for r in entries}
    assert set(_chart_rules()["suites"]) == suites


def test_no_rule_reaches_secrets_rbac_or_node_deletion() -> None:
    chart = _chart_rules()
    every = grants(chart["every"]).union(*(grants(r or ()) for r in chart["suites"].values()))
    resources = {resource for _, resource, _ in every}
    assert "secrets" not in resources and "*" not in resources
    assert not any(group == "rbac.authorization.k8s.io" for group, _, _ in every)
    assert ("", "nodes", "delete") not in every
    assert ("resource.k8s.io", "resourceslices", "create") not in every
