"""The differential tier's scheduler half: every selector of the corpus that compiles, on the
fake driver's live slices (a node per worker) and the Kubernetes e2e test driver's captured
ones, allocated by the cluster's kube-scheduler (cel_differential.scheduler) and compared
with the evaluator's verdicts; the compile verdicts are compared with this API server's. The
counts go to the CI log ("CEL differential tier"); 0 disagreements."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable

import yaml
from cel_differential.apiserver import server_verdicts
from cel_differential.compare import compare_compile, compare_match, predicted_verdicts
from cel_differential.corpus import CORPUS, load_corpus
from cel_differential.scheduler import NodeGroup, device_ids, scheduler_verdicts
from cel_differential.tally_report import PROPERTY

from conformance.cel import CelEvaluator
from conformance.kube.client import K8sClients
from conformance.model.profile import Profile

TEST_DRIVER = "test-driver.cdi.k8s.io"
CAPTURED = CORPUS.parent / "slices" / "kind-v1.37.2.yaml"


def _node_groups(k8s: K8sClients, driver: str) -> list[NodeGroup]:
    token = secrets.token_hex(3)
    live = k8s.api_client.sanitize_for_serialization(
        k8s.resource.list_resource_slice(field_selector=f"spec.driver={driver}").items
    )
    by_node: dict[str, list[dict]] = {}
    for s in live:
        by_node.setdefault(s["spec"].get("nodeName") or "", []).append(s)
    groups = [
        NodeGroup(f"cel-differential-{token}-{i}", tuple(slices))
        for i, (_, slices) in enumerate(sorted(by_node.items()))
    ]
    captured = [
        s
        for s in yaml.safe_load(CAPTURED.read_text())["items"]
        if s["spec"]["driver"] == TEST_DRIVER
    ]
    first = captured[0]["spec"]["nodeName"]
    groups.append(
        NodeGroup(
            f"cel-differential-{token}-test-driver",
            tuple(s for s in captured if s["spec"]["nodeName"] == first),
        )
    )
    return groups


def test_selectors_agree_with_the_api_server_and_the_scheduler(
    fake_driver: Profile,
    k8s: K8sClients,
    cel: CelEvaluator,
    record_property: Callable[[str, str], None],
) -> None:
    begin = time.monotonic()
    expressions = [s.expression for s in load_corpus()]
    problems = cel.compile(expressions)
    compiled = compare_compile(expressions, problems, server_verdicts(k8s.api_client, expressions))
    record_property(PROPERTY, compiled.summary())
    valid = [e for e, p in zip(expressions, problems, strict=True) if p is None]
    groups = _node_groups(k8s, fake_driver.driver)
    assert len(groups) == 3, [g.name for g in groups]  # two workers, the test driver
    predicted = predicted_verdicts(cel, valid, {g.name: device_ids(g.slices) for g in groups})
    run = scheduler_verdicts(k8s.api_client, groups, valid)
    matched = compare_match(predicted, run.verdicts)
    record_property(
        PROPERTY,
        f"{matched.summary()} ({len(valid)} selectors x {len(groups)} nodes, {run.pods} pods "
        f"scheduled in {run.seconds:.0f} s; tier {time.monotonic() - begin:.0f} s)",
    )
    assert not compiled.disagreements, compiled.report()
    assert len(run.verdicts) == run.pods, "the scheduler did not decide every claim in time"
    assert not matched.disagreements, matched.report()
    outcomes = {v.outcome for v in run.verdicts.values()}
    assert outcomes == {"allocated", "unschedulable", "error"}  # the corpus reaches all three
