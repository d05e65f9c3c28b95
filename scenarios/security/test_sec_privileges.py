"""DRA-SEC-001..004: least privilege of the accounts the driver runs as.

Each test asks the API server (SubjectAccessReview, authorization.k8s.io/v1) whether every
account of the driver's pods may do any of the requirement's forbidden accesses
(conformance/model/privileges.py says which and why); nothing is created on the cluster, so
the suite is non-disruptive and takes well under a second per requirement.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from kubernetes.client.exceptions import ApiException

from conformance.kube.access import violations
from conformance.kube.client import K8sClients
from conformance.model import privileges
from conformance.model.outcome import not_run
from conformance.model.privileges import AccessCheck, ServiceAccountRef, Violation
from conformance.observe.steps import attach_yaml, step
from conformance.run.context import RunContext


def assert_none_allowed(
    k8s: K8sClients, accounts: Iterable[ServiceAccountRef], checks: Iterable[AccessCheck]
) -> None:
    accounts, checks = tuple(accounts), tuple(checks)
    found: list[Violation] = []
    for account in accounts:
        with step(f"SubjectAccessReview of {len(checks)} forbidden accesses for {account}"):
            try:
                allowed = violations(k8s.api_client, [account], checks)
            except ApiException as exc:
                if exc.status not in (401, 403):
                    raise
                not_run(
                    f"the harness may not create SubjectAccessReviews (HTTP {exc.status})",
                    "run with credentials allowed to create "
                    "subjectaccessreviews.authorization.k8s.io",
                )
            attach_yaml(
                f"reviews of {account}",
                {
                    "user": account.user,
                    "groups": list(account.groups),
                    "allowed": [f"{v.check}: {v.reason}" for v in allowed],
                    "denied": [str(c) for c in checks if c not in {v.check for v in allowed}],
                },
            )
            found += allowed
    assert not found, (
        f"the authorizer allows {len(found)} forbidden access(es) to the driver's accounts "
        f"({', '.join(map(str, accounts))}):\n" + "\n".join(f"  {v}" for v in found)
    )


@pytest.mark.dra_requirement("DRA-SEC-001")
def test_driver_accounts_cannot_read_secrets_outside_their_namespace(
    k8s: K8sClients, dra_context: RunContext, driver_accounts: tuple[ServiceAccountRef, ...]
) -> None:
    own = privileges.driver_namespaces(dra_context.profile)
    assert_none_allowed(k8s, driver_accounts, privileges.secret_reads(own))


@pytest.mark.dra_requirement("DRA-SEC-002")
def test_driver_accounts_cannot_escalate(
    k8s: K8sClients, dra_context: RunContext, driver_accounts: tuple[ServiceAccountRef, ...]
) -> None:
    own = privileges.driver_namespaces(dra_context.profile)
    assert_none_allowed(k8s, driver_accounts, privileges.escalations(own))


@pytest.mark.dra_requirement("DRA-SEC-003")
def test_driver_accounts_cannot_allocate_or_write_other_drivers_device_status(
    k8s: K8sClients, dra_context: RunContext, driver_accounts: tuple[ServiceAccountRef, ...]
) -> None:
    checks = privileges.claim_status_writes(dra_context.profile.driver)
    assert_none_allowed(k8s, driver_accounts, checks)


@pytest.mark.dra_requirement("DRA-SEC-004")
def test_driver_accounts_cannot_write_device_classes_taint_rules_or_claims(
    k8s: K8sClients, driver_accounts: tuple[ServiceAccountRef, ...]
) -> None:
    assert_none_allowed(k8s, driver_accounts, privileges.dra_admin_writes())
