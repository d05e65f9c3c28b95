"""Whether a scoped run selected every MUST that applies to the cluster: only then can it be
CONFORMANT (conformance/report/verdict.py); otherwise it passed a part, not the whole.

A MUST applies to the cluster's version unless the catalog says it was introduced later
(`min_version`); with the version unknown, every MUST applies. Selected means inside the verdict
scope (`--dra-verdict-scope`, else the `--dra-requirement` IDs): a run narrowed by path or `-k`
has no scope, and its missing MUSTs make it INCOMPLETE instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from conformance.model.kube_version import minor
from conformance.report.catalog import RequirementInfo
from conformance.report.verdict import Partial


def applies_to(info: RequirementInfo, kubernetes_version: str) -> bool:
    version = minor(kubernetes_version)
    if info.min_version is None or version is None:
        return True
    return version >= info.min_version


def partial_selection(
    catalog: Mapping[str, RequirementInfo],
    scope: Iterable[str] | None,
    kubernetes_version: str = "",
) -> Partial | None:
    """The part of the applicable MUSTs a scoped run selected, or None when it selected all
    (or has no scope)."""
    if scope is None:
        return None
    judged = set(scope)
    must = [
        info
        for info in catalog.values()
        if info.level == "MUST" and applies_to(info, kubernetes_version)
    ]
    selected = [i for i in must if i.id in judged or i.suite in judged]
    if len(selected) == len(must):
        return None
    chosen = {i.id for i in selected}
    return Partial(
        selected=len(selected),
        total=len(must),
        not_selected=tuple(i.id for i in must if i.id not in chosen),
    )
