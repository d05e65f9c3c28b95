"""The differential tier's unit half: the corpus is what generate.py writes, every compile
verdict of the evaluator agrees with a real kube-apiserver's, and the comparisons catch a
wrong evaluation. The scheduler half is tests/e2e/test_cel_differential.py."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import replace

import pytest
import yaml
from cel_differential import generate
from cel_differential.apiserver import server_verdicts
from cel_differential.compare import (
    NodeVerdict,
    ServerVerdict,
    compare_compile,
    compare_match,
    predicted_verdicts,
)
from cel_differential.corpus import CORPUS, load_corpus
from cel_differential.scheduler import device_ids
from cel_differential.tally_report import PROPERTY

from conformance.cel import CelEvaluator, CompileProblem, MatchResult
from conformance.kube.client import K8sClients

SLICES = CORPUS.parent / "slices" / "kind-v1.37.2.yaml"


def test_the_corpus_is_what_generate_writes() -> None:
    assert CORPUS.read_text() == generate.render(), "run tests/cel_differential/generate.py"
    groups = Counter(s.group for s in load_corpus())
    assert sum(groups.values()) >= 200
    assert set(groups) >= {"profile", "strings", "quantity", "semver", "presence", "macros"}
    assert groups["invalid"] >= 20 and groups["missing"] >= 10


def test_compile_verdicts_agree_with_the_api_server(
    apiserver_k8s: K8sClients, cel: CelEvaluator, record_property: Callable[[str, str], None]
) -> None:
    expressions = [s.expression for s in load_corpus()]
    tally = compare_compile(
        expressions,
        cel.compile(expressions),
        server_verdicts(apiserver_k8s.api_client, expressions),
    )
    record_property(PROPERTY, tally.summary())
    assert tally.agreements == len(expressions), tally.report()
    assert not tally.disagreements


def test_a_wrong_compile_verdict_is_a_disagreement(cel: CelEvaluator) -> None:
    expressions = ['device.driver == "a"', 'device.driver === "a"', "device.driver ==", "1"]
    mine = cel.compile(expressions)
    server = [
        ServerVerdict(True),
        ServerVerdict(False, f"Invalid value: compilation failed: {mine[1].message}"),
        ServerVerdict(False, f"Invalid value: compilation failed: {mine[2].message}"),
        ServerVerdict(False, f"Invalid value: {mine[3].message}"),
    ]
    assert not compare_compile(expressions, mine, server).disagreements
    flipped = [mine[1], None, mine[2], mine[3]]
    assert len(compare_compile(expressions, flipped, server).disagreements) == 2
    moved = [None, replace(mine[1], column=(mine[1].column or 0) + 1), mine[2], mine[3]]
    [line] = compare_compile(expressions, moved, server).disagreements
    assert "the evaluator puts the error at 1:" in line
    reworded = [None, mine[1], replace(mine[2], message="something else"), mine[3]]
    [line] = compare_compile(expressions, reworded, server).disagreements
    assert "'something else'" in line


def _captured_nodes() -> dict[str, dict]:
    """node -> its devices, per driver, from the captured slices."""
    nodes: dict[str, list] = {}
    for item in yaml.safe_load(SLICES.read_text())["items"]:
        spec = item["spec"]
        nodes.setdefault(f"{spec['driver']}@{spec['nodeName']}", []).append(item)
    return {node: device_ids(slices) for node, slices in nodes.items()}


class _Mutated:
    """The evaluator with one function broken: `startsWith` answers the opposite."""

    def __init__(self, real: CelEvaluator) -> None:
        self.real = real

    def match(self, expressions: list[str], devices: list) -> list[list[MatchResult]]:
        rows = self.real.match(expressions, devices)
        return [
            [MatchResult(not r.matches, r.error) if "startsWith" in e else r for r in row]
            for e, row in zip(expressions, rows, strict=True)
        ]


def test_a_wrong_match_verdict_is_a_disagreement(cel: CelEvaluator) -> None:
    # What the scheduler would say is replaced here by the real evaluator's prediction, which
    # the e2e half checks against the scheduler; a mutated evaluator must then disagree.
    corpus = [s.expression for s in load_corpus()]
    expressions = [e for e, p in zip(corpus, cel.compile(corpus), strict=True) if p is None]
    nodes = _captured_nodes()
    assert len(nodes) == 4 and sum(len(d) for d in nodes.values()) == 21
    truth = predicted_verdicts(cel, expressions, nodes)
    assert not compare_match(truth, truth).disagreements
    wrong = compare_match(predicted_verdicts(_Mutated(cel), expressions, nodes), truth)
    assert wrong.disagreements and all("startsWith" in d for d in wrong.disagreements)
    assert wrong.agreements + len(wrong.disagreements) == len(truth)


def test_an_error_is_not_a_non_match(cel: CelEvaluator) -> None:
    # The allocator stops at an evaluation error instead of skipping the device: an
    # all-devices claim erring on one device is an error, not the other devices.
    [row] = cel.match(
        ['device.attributes["d.example.com"].a == "x"'],
        [
            ("d.example.com", {"name": "one", "attributes": {"a": {"string": "x"}}}),
            ("d.example.com", {"name": "two"}),
        ],
    )
    assert row[0] == MatchResult(True) and not row[1].matches and row[1].error
    nodes = {
        "n": {
            "p/one": ("d.example.com", {"name": "one", "attributes": {"a": {"string": "x"}}}),
            "p/two": ("d.example.com", {"name": "two"}),
        }
    }
    expression = 'device.attributes["d.example.com"].a == "x"'
    assert predicted_verdicts(cel, [expression], nodes) == {(expression, "n"): NodeVerdict("error")}


@pytest.mark.parametrize(
    ("problem", "expected"),
    [(None, True), (CompileProblem("compilation failed: ERROR: <input>:1:2: x", 1, 2), False)],
)
def test_server_position_is_compared(problem: CompileProblem | None, expected: bool) -> None:
    server = ServerVerdict(True) if expected else ServerVerdict(False, f"v: {problem.message}")
    assert not compare_compile(["e"], [problem], [server]).disagreements
