"""The security suite's pure logic: which accounts, and which SubjectAccessReviews per
requirement (conformance/model/privileges.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.model import privileges
from conformance.model.privileges import (
    ALL_NAMESPACES,
    OTHER_DRIVER,
    AccessCheck,
    ServiceAccountRef,
)
from conformance.model.profile import SUITE_ROOT
from conformance.model.profile_parse import load_profile

FAKE = SUITE_ROOT / "drivers" / "fake"


def test_account_is_reviewed_with_the_groups_of_its_tokens() -> None:
    account = ServiceAccountRef("dra", "plugin")
    assert account.user == "system:serviceaccount:dra:plugin"
    assert account.groups == (
        "system:serviceaccounts",
        "system:serviceaccounts:dra",
        "system:authenticated",
    )
    assert str(account) == "ServiceAccount dra/plugin"


def test_access_check_attributes_and_wording() -> None:
    check = AccessCheck("get", "secrets")
    assert check.resource_attributes() == {"verb": "get", "group": "", "resource": "secrets"}
    assert str(check) == "get secrets cluster-wide"
    scoped = AccessCheck(
        "associated-node:patch",
        "resourceclaims",
        group="resource.k8s.io",
        subresource="driver",
        name="x.example.com",
        namespace="ns",
    )
    assert scoped.resource_attributes() == {
        "verb": "associated-node:patch",
        "group": "resource.k8s.io",
        "resource": "resourceclaims",
        "subresource": "driver",
        "name": "x.example.com",
        "namespace": "ns",
    }
    assert str(scoped) == (
        "associated-node:patch resourceclaims/driver.resource.k8s.io named 'x.example.com' "
        "in namespace ns"
    )


@pytest.mark.parametrize(
    ("own", "expected"),
    [
        (("dra-driver",), (ALL_NAMESPACES, "kube-system")),
        (("kube-system",), (ALL_NAMESPACES,)),  # a driver installed there may read its own
    ],
)
def test_other_namespaces(own: tuple[str, ...], expected: tuple[str, ...]) -> None:
    assert privileges.other_namespaces(own) == expected


def test_secret_reads_spare_the_drivers_own_namespace() -> None:
    checks = privileges.secret_reads(["dra-driver"])
    assert {(c.verb, c.namespace) for c in checks} == {
        (verb, ns) for verb in ("get", "list", "watch") for ns in ("", "kube-system")
    }
    assert all(c.resource == "secrets" and c.group == "" for c in checks)
    assert not any(c.namespace == "dra-driver" for c in privileges.escalations(["dra-driver"]))


def test_escalations() -> None:
    checks = set(privileges.escalations(["dra-driver"]))
    assert AccessCheck("*", "*", group="*") in checks
    for verb in ("bind", "escalate"):
        for resource in ("roles", "clusterroles"):
            assert AccessCheck(verb, resource, group="rbac.authorization.k8s.io") in checks
    assert AccessCheck("impersonate", "serviceaccounts") in checks
    assert AccessCheck("create", "nodes", subresource="proxy") in checks
    for ns in ("", "kube-system"):
        assert AccessCheck("create", "pods", subresource="exec", namespace=ns) in checks
        assert AccessCheck("create", "pods", namespace=ns) in checks
        assert AccessCheck("create", "daemonsets", group="apps", namespace=ns) in checks
        assert AccessCheck("create", "serviceaccounts", subresource="token", namespace=ns) in checks
    # Never a node-local driver's own needs: slices, claims it reads, the Node it reads.
    assert not {c for c in checks if c.resource in ("resourceslices", "resourceclaims")}
    assert AccessCheck("get", "nodes") not in checks


def test_claim_status_writes_name_another_driver_only() -> None:
    checks = privileges.claim_status_writes("gpu.example.com")
    binding = {c.verb for c in checks if c.subresource == "binding"}
    assert binding == {"update", "patch"}
    driver = [c for c in checks if c.subresource == "driver"]
    assert {c.verb for c in driver} == {
        f"{prefix}:{verb}"
        for prefix in ("associated-node", "arbitrary-node")
        for verb in ("update", "patch")
    }
    assert {c.name for c in driver} == {OTHER_DRIVER}
    assert all(c.namespace == ALL_NAMESPACES for c in checks)
    # A driver that happens to be called like the stand-in is never checked against itself.
    assert OTHER_DRIVER not in {c.name for c in privileges.claim_status_writes(OTHER_DRIVER)}


def test_dra_admin_writes_leave_slices_and_claim_reads_alone() -> None:
    checks = privileges.dra_admin_writes()
    assert {c.resource for c in checks} == {"deviceclasses", "devicetaintrules", "resourceclaims"}
    assert not {c.verb for c in checks} & {"get", "list", "watch"}
    assert {c.verb for c in checks if c.resource == "resourceclaims"} == {
        "update",
        "patch",
        "delete",
    }


def test_driver_namespaces_from_the_shipped_profiles() -> None:
    assert privileges.driver_namespaces(load_profile(FAKE / "profile.yaml")) == ("dra-fake-driver",)
    helm = load_profile(FAKE / "profile-helm.yaml")
    assert privileges.driver_namespaces(helm) == tuple(
        dict.fromkeys([helm.readiness.daemonset_namespace, helm.install.namespace])
    )


def test_a_profile_without_a_daemonset_names_no_namespace(tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text(
        "apiVersion: dra-conformance.io/v1alpha1\nkind: DriverProfile\ndriver: x.example.com\n"
        "deviceClasses: {default: x.example.com}\ninstall: {method: preinstalled}\n"
        "verification: {method: env, nameRegex: '^X_', value: device}\n"
    )
    assert privileges.driver_namespaces(load_profile(profile)) == ()


def test_pod_accounts_default_like_the_api_server() -> None:
    specs = [{"serviceAccountName": "plugin"}, {}, None, {"serviceAccountName": ""}]
    assert privileges.accounts_of("ns", specs) == {
        ServiceAccountRef("ns", "plugin"),
        ServiceAccountRef("ns", "default"),
    }


def test_device_status_rights_are_a_status_write_and_the_own_drivers_entries() -> None:
    assert [str(c) for c in privileges.status_subresource_writes("ns")] == [
        "patch resourceclaims/status.resource.k8s.io in namespace ns",
        "update resourceclaims/status.resource.k8s.io in namespace ns",
    ]
    own = privileges.own_device_status_writes("x.example.com", "ns")
    assert [c.verb for c in own] == [
        "associated-node:patch",
        "associated-node:update",
        "arbitrary-node:patch",
        "arbitrary-node:update",
    ]
    assert {(c.subresource, c.name, c.namespace) for c in own} == {
        ("driver", "x.example.com", "ns")
    }
