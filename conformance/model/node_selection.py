"""Does a Node match a core/v1 NodeSelector (e.g. a claim's status.allocation.nodeSelector)?

Terms are ORed, the requirements of a term ANDed, as the scheduler evaluates them. Pure, so
scenarios can assert "the pod runs on a node the allocation allows" exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _requirement_holds(value: str | None, operator: str, values: Sequence[str]) -> bool:
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt"):
        try:
            have, bound = int(value or ""), int(values[0])
        except (ValueError, IndexError):
            return False
        return have > bound if operator == "Gt" else have < bound
    raise ValueError(f"unknown node selector operator {operator!r}")


def _term_matches(term: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    fields = {"metadata.name": meta.get("name")}
    expressions = term.get("matchExpressions") or ()
    field_reqs = term.get("matchFields") or ()
    if not expressions and not field_reqs:
        return False  # an empty term matches no node
    return all(
        _requirement_holds(labels.get(r["key"]), r["operator"], r.get("values") or ())
        for r in expressions
    ) and all(
        _requirement_holds(fields.get(r["key"]), r["operator"], r.get("values") or ())
        for r in field_reqs
    )


def node_matches(selector: Mapping[str, Any] | None, node: Mapping[str, Any]) -> bool:
    """True when `node` satisfies `selector`; no selector at all allows every node."""
    if selector is None:
        return True
    return any(_term_matches(t, node) for t in selector.get("nodeSelectorTerms") or ())
