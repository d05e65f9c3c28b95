"""Typed outcomes for what keeps a test from running (docs/CONTRACTS.md, "Typed outcomes").

A test that cannot run ends *not applicable* or *not run*, and the harness decides which by the
exception raised, never by the text of a skip reason:

- `not_applicable(reason)`: the driver lacks an optional *feature* (a profile capability such as
  `extended-resource`), or the cluster's Kubernetes version or feature gates lack the behaviour.
  A MUST that is not applicable does not keep a run from being CONFORMANT.
- `not_run(reason, remedy)`: anything else — disruptive tests not allowed, feature gates that
  could not be read, a fault the profile cannot inject, a harness limit of this kind of cluster,
  a lease timeout. A MUST that did not run makes the verdict INCOMPLETE, and `remedy` tells the
  user what would make it run.

A plain `pytest.skip()` counts as *not run*: only the harness's own exception makes a
requirement not applicable.

A `HarnessError` raised while a test runs (a fault that could not be injected, say) makes the
test an *error*, not a *failure*: the harness, not the driver, could not do its part. So does an
API request of the harness that its account may not make (`denied_to_harness`: a run in the
cluster whose role lacks what the suite needs).
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import NoReturn

import pytest

# user_properties names carried by a skipped phase's report (they survive xdist serialisation)
PROP_OUTCOME = "dra_outcome"
PROP_REMEDY = "dra_remedy"


class SkipKind(StrEnum):
    NOT_APPLICABLE = "not-applicable"
    NOT_RUN = "not-run"


# What the skip message (shown by pytest, JUnit and Allure) starts with; for people and for
# Allure's categories only: the harness decides by PROP_OUTCOME.
MESSAGE_PREFIX = {SkipKind.NOT_APPLICABLE: "not applicable: ", SkipKind.NOT_RUN: "not run: "}


class HarnessError(Exception):
    """The harness could not do its part of a test; the test is an error, not a failure."""


class _TypedSkip(pytest.skip.Exception):  # type: ignore[name-defined,misc]
    kind: SkipKind

    def __init__(self, reason: str, remedy: str = "") -> None:
        message = MESSAGE_PREFIX[self.kind] + reason
        if remedy:
            message += f" (to run it: {remedy})"
        super().__init__(message, _use_item_location=True)
        self.reason = reason
        self.remedy = remedy


class NotApplicable(_TypedSkip):
    """The driver or the cluster lacks the behaviour the requirement is about."""

    kind = SkipKind.NOT_APPLICABLE


class NotRun(_TypedSkip):
    """The requirement applies but could not be run here."""

    kind = SkipKind.NOT_RUN


def not_applicable(reason: str) -> NoReturn:
    raise NotApplicable(reason)


def not_run(reason: str, remedy: str = "") -> NoReturn:
    raise NotRun(reason, remedy)


ERROR = "error"  # PROP_OUTCOME of a phase that raised a HarnessError

# The authorizer refusing the harness's own request: RBAC's `... is forbidden: User "..." cannot
# create resource ...`, an exec's websocket handshake refused, a credential not accepted. An
# admission webhook's or a quota's refusal (also HTTP 403) says neither, and stays the test's.
_DENIED = re.compile(
    r"forbidden: User \S+ cannot |Handshake status 40[13]\b|^\(401\)\s*Reason: Unauthorized"
)


def denied_to_harness(exc: BaseException | None) -> bool:
    """`exc` is the Kubernetes client's ApiException for a request the run's account may not
    make (no import of the client here: it is matched by name and text)."""
    return type(exc).__name__ == "ApiException" and bool(_DENIED.search(str(exc)))


def typed_skip_properties(exc: BaseException | None) -> list[tuple[str, str]]:
    """The user_properties a report gets for `exc` (empty unless it is typed)."""
    if isinstance(exc, HarnessError) or denied_to_harness(exc):
        return [(PROP_OUTCOME, ERROR)]
    if not isinstance(exc, _TypedSkip):
        return []
    props = [(PROP_OUTCOME, str(exc.kind))]
    if exc.remedy:
        props.append((PROP_REMEDY, exc.remedy))
    return props
