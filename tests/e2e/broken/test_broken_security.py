"""Broken-driver checks for the security suite: the fake driver's own RBAC passes it, so the
breakage is an extra binding of the driver's service accounts, made for the check and
deleted in `finally` (the check then confirms nothing of it is left).

- bound to cluster-admin, every SEC requirement fails, naming the verb and resource the
  authorizer allowed;
- bound to a ClusterRole that only reads Secrets, DRA-SEC-001 fails and DRA-SEC-002 still
  passes (the reviews are precise, not "any extra right fails everything").

Like the other broken checks it holds an exclusive lease on the cluster's lease book while the
driver's rights are widened.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import tenacity
from broken_runs import run_scenarios
from kubernetes import client as k8s_client
from kubernetes.client.exceptions import ApiException

from conformance.install.identity import install_objects
from conformance.kube.access import driver_service_accounts
from conformance.kube.client import K8sClients
from conformance.model.driver_workloads import DriverMarks
from conformance.model.profile import Profile
from conformance.run.cluster_lease_book import ClusterLeaseBook
from conformance.run.lease import DeviceLeaseBroker, LeaseRequest

pytestmark = pytest.mark.e2e

RBAC = "rbac.authorization.k8s.io"
BROKEN_LABEL = {"app.kubernetes.io/part-of": "dra-conformance-broken-security"}
SECRET_READER = [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]}]


def statuses(report_dir: Path, ids: Iterable[str]) -> dict[str, str]:
    """The statuses of requirements `ids` in the run's summary.json."""
    summary = json.loads((report_dir / "report" / "summary.json").read_text())
    wanted = set(ids)
    return {r["id"]: r.get("status") for r in summary.get("requirements", []) if r["id"] in wanted}


def leftovers(rbac: Any) -> list[str]:
    selector = ",".join(f"{k}={v}" for k, v in BROKEN_LABEL.items())
    roles = rbac.list_cluster_role(label_selector=selector).items
    bindings = rbac.list_cluster_role_binding(label_selector=selector).items
    return [f"ClusterRole/{r.metadata.name}" for r in roles] + [
        f"ClusterRoleBinding/{b.metadata.name}" for b in bindings
    ]


@pytest.fixture
def widen_driver_rights(
    fake_driver: Profile, kind_cluster: Any, k8s: K8sClients, lease_book: ClusterLeaseBook
) -> Iterator[Callable[..., None]]:
    """widen(name, cluster_role=None, rules=None): bind every account of the driver's pods to
    `cluster_role`, or to a new ClusterRole of `rules`; all removed afterwards."""
    rbac = k8s_client.RbacAuthorizationV1Api(k8s.api_client)
    marks = DriverMarks.of(fake_driver, install_objects(fake_driver))
    accounts = driver_service_accounts(k8s, marks)
    assert accounts, "the fake driver's pods run as no ServiceAccount the harness can find"
    broker = DeviceLeaseBroker(lease_book, {})
    lease = broker.acquire(
        LeaseRequest("broken-driver-check security", [], exclusive=True), timeout=1800
    )
    created: list[tuple[str, str]] = []

    def widen(name: str, cluster_role: str | None = None, rules: list[Any] | None = None) -> None:
        metadata = {"name": name, "labels": BROKEN_LABEL}
        if cluster_role is None:
            rbac.create_cluster_role({"metadata": metadata, "rules": rules})
            created.append(("cluster_role", name))
            cluster_role = name
        rbac.create_cluster_role_binding(
            {
                "metadata": metadata,
                "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": cluster_role},
                "subjects": [
                    {"kind": "ServiceAccount", "name": a.name, "namespace": a.namespace}
                    for a in accounts
                ],
            }
        )
        created.append(("cluster_role_binding", name))

    try:
        yield widen
    finally:
        try:
            for kind, name in reversed(created):
                try:
                    getattr(rbac, f"delete_{kind}")(name)
                except ApiException as exc:
                    if exc.status != 404:
                        raise
            for attempt in tenacity.Retrying(
                stop=tenacity.stop_after_delay(30), wait=tenacity.wait_fixed(0.5), reraise=True
            ):
                with attempt:
                    left = leftovers(rbac)
                    assert not left, f"the broken check left {left} on the cluster"
        finally:
            broker.release(lease)


def test_cluster_admin_fails_every_security_requirement(
    widen_driver_rights: Callable[..., None],
    fake_driver: Profile,
    kind_cluster: Any,
    tmp_path: Path,
) -> None:
    widen_driver_rights("broken-security-cluster-admin", cluster_role="cluster-admin")
    others = ["DRA-SEC-002", "DRA-SEC-003", "DRA-SEC-004"]
    result = run_scenarios(
        kind_cluster.name,
        fake_driver.source,
        "DRA-SEC-001",
        tmp_path,
        [arg for rid in others for arg in ("--dra-requirement", rid)],
    )
    result.assert_requirement_failed("may get secrets cluster-wide")
    expected = {rid: "failed" for rid in ["DRA-SEC-001", *others]}
    assert statuses(tmp_path, expected) == expected, result.explain()
    for allowed in (
        "may * *.* cluster-wide",  # cluster-admin itself
        "may impersonate serviceaccounts cluster-wide",
        "may update resourceclaims/binding.resource.k8s.io cluster-wide",
        "may create deviceclasses.resource.k8s.io cluster-wide",
        'ClusterRole "cluster-admin"',
    ):
        assert allowed in result.output, f"no mention of {allowed!r}:\n{result.explain()}"


@pytest.mark.e2e_by_hand
def test_reading_secrets_fails_sec_001_only(
    widen_driver_rights: Callable[..., None],
    fake_driver: Profile,
    kind_cluster: Any,
    tmp_path: Path,
) -> None:
    widen_driver_rights("broken-security-secret-reader", rules=SECRET_READER)
    result = run_scenarios(
        kind_cluster.name,
        fake_driver.source,
        "DRA-SEC-001",
        tmp_path,
        ["--dra-requirement", "DRA-SEC-002"],
    )
    result.assert_requirement_failed("may list secrets in namespace kube-system")
    expected = {"DRA-SEC-001": "failed", "DRA-SEC-002": "passed"}
    assert statuses(tmp_path, expected) == expected, result.explain()
