"""Node selectors as the scheduler reads them (terms ORed, requirements ANDed)."""

from __future__ import annotations

import pytest

from conformance.model.node_selection import node_matches

NODE = {"metadata": {"name": "w1", "labels": {"zone": "a", "gpus": "4"}}}


def sel(*terms: dict) -> dict:
    return {"nodeSelectorTerms": list(terms)}


def test_match_fields_on_the_node_name() -> None:
    by_name = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["w1"]}]}
    assert node_matches(sel(by_name), NODE)
    other = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["w2"]}]}
    assert not node_matches(sel(other), NODE)
    assert node_matches(sel(other, by_name), NODE)  # terms are ORed


@pytest.mark.parametrize(
    ("operator", "values", "expected"),
    [
        ("In", ["a", "b"], True),
        ("NotIn", ["a"], False),
        ("Exists", [], True),
        ("DoesNotExist", [], False),
    ],
)
def test_label_operators(operator: str, values: list[str], expected: bool) -> None:
    term = {"matchExpressions": [{"key": "zone", "operator": operator, "values": values}]}
    assert node_matches(sel(term), NODE) is expected


def test_requirements_of_a_term_are_anded_and_numbers_compare() -> None:
    term = {
        "matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["a"]},
            {"key": "gpus", "operator": "Gt", "values": ["3"]},
        ]
    }
    assert node_matches(sel(term), NODE)
    term["matchExpressions"][1] = {"key": "gpus", "operator": "Lt", "values": ["3"]}
    assert not node_matches(sel(term), NODE)


def test_no_selector_allows_every_node_and_an_empty_term_none() -> None:
    assert node_matches(None, NODE)
    assert not node_matches(sel({}), NODE)
    assert not node_matches(sel(), NODE)
