"""The security suite's reviews against the real test API server (v1.37.2, RBAC): what the
authorizer grants a driver account is the server's decision, never assumed here.

The fake driver's own RBAC (drivers/fake/deploy/rbac.yaml) must pass every requirement; an
account bound to cluster-admin, or granted Secrets outside its namespace, or an unscoped
resourceclaims/driver rule, must not — with the verb and resource in the violation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import tenacity
import yaml
from kube_apiserver.access import clients_with_rules
from kube_apiserver.server import ApiServer, ClusterScoped, unique_name
from kubernetes import client as k8s_client
from kubernetes.client.exceptions import ApiException

from conformance.kube.access import driver_service_accounts, review, violations
from conformance.kube.client import K8sClients
from conformance.model import privileges
from conformance.model.driver_workloads import HELM_RELEASE, HELM_RELEASE_NAMESPACE, DriverMarks
from conformance.model.privileges import AccessCheck, ServiceAccountRef
from conformance.model.profile import SUITE_ROOT
from conformance.model.profile_parse import load_profile

RBAC = "rbac.authorization.k8s.io"
FAKE_RBAC = SUITE_ROOT / "drivers" / "fake" / "deploy" / "rbac.yaml"
DRIVER = "fake.dra-conformance.io"


def all_checks(namespace: str) -> tuple[AccessCheck, ...]:
    own = [namespace]
    return (
        privileges.secret_reads(own)
        + privileges.escalations(own)
        + privileges.claim_status_writes(DRIVER)
        + privileges.dra_admin_writes()
    )


def await_allowed(k8s: K8sClients, account: ServiceAccountRef, check: AccessCheck) -> None:
    """RBAC reads bindings through informers: wait until the server grants `check`."""
    for attempt in tenacity.Retrying(
        stop=tenacity.stop_after_delay(60), wait=tenacity.wait_fixed(0.1), reraise=True
    ):
        with attempt:
            allowed, reason = review(k8s.api_client, account, check)
            assert allowed, f"{account} not yet allowed to {check}: {reason!r}"


@pytest.fixture
def bind(apiserver_k8s: K8sClients, cluster_scoped: ClusterScoped) -> Iterator[Callable[..., None]]:
    """bind(account, rules=None, cluster_role=None, namespace=None): a ClusterRole (or the
    named one) bound cluster-wide, or a Role bound in `namespace`; all deleted afterwards
    (kube-system outlives the test)."""
    rbac = k8s_client.RbacAuthorizationV1Api(apiserver_k8s.api_client)
    namespaced: list[tuple[str, str]] = []

    def bind(
        account: ServiceAccountRef,
        rules: list[dict[str, Any]] | None = None,
        cluster_role: str | None = None,
        namespace: str | None = None,
    ) -> None:
        name = unique_name("sec")
        subject = [{"kind": "ServiceAccount", "name": account.name, "namespace": account.namespace}]
        if namespace:
            rbac.create_namespaced_role(namespace, {"metadata": {"name": name}, "rules": rules})
            namespaced.append((namespace, name))
            rbac.create_namespaced_role_binding(
                namespace,
                {
                    "metadata": {"name": name},
                    "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": name},
                    "subjects": subject,
                },
            )
            return
        if cluster_role is None:
            cluster_role = name
            cluster_scoped.create(
                {
                    "apiVersion": f"{RBAC}/v1",
                    "kind": "ClusterRole",
                    "metadata": {"name": name},
                    "rules": rules,
                }
            )
        cluster_scoped.create(
            {
                "apiVersion": f"{RBAC}/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": cluster_role},
                "subjects": subject,
            }
        )

    yield bind
    for namespace, name in namespaced:
        for delete in (rbac.delete_namespaced_role_binding, rbac.delete_namespaced_role):
            try:
                delete(name, namespace)
            except ApiException as exc:
                if exc.status != 404:
                    raise


def fake_driver_rules() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(ClusterRole rules, Role rules) of the fake driver's manifests."""
    docs = list(yaml.safe_load_all(FAKE_RBAC.read_text()))
    cluster = next(d["rules"] for d in docs if d["kind"] == "ClusterRole")
    role = next(d["rules"] for d in docs if d["kind"] == "Role")
    return cluster, role


def test_the_fake_drivers_rbac_passes_every_requirement(
    apiserver_k8s: K8sClients, api_namespace: str, bind: Callable[..., None]
) -> None:
    account = ServiceAccountRef(api_namespace, "plugin")
    cluster_rules, role_rules = fake_driver_rules()
    bind(account, cluster_rules)
    bind(account, role_rules, namespace=api_namespace)
    # Both bindings in effect: what the driver needs is granted ...
    await_allowed(
        apiserver_k8s, account, AccessCheck("create", "resourceslices", group="resource.k8s.io")
    )
    await_allowed(
        apiserver_k8s, account, AccessCheck("patch", "configmaps", namespace=api_namespace)
    )
    # ... and nothing the requirements forbid.
    assert violations(apiserver_k8s.api_client, [account], all_checks(api_namespace)) == []


def test_the_fake_drivers_rbac_grants_exactly_its_own_device_status_writes(
    apiserver_k8s: K8sClients, api_namespace: str, bind: Callable[..., None]
) -> None:
    # DRA-CORE-009: a status patch, and associated-node:patch for its own name only.
    account = ServiceAccountRef(api_namespace, "plugin")
    cluster_rules, _ = fake_driver_rules()
    bind(account, cluster_rules)
    status = privileges.status_subresource_writes(api_namespace)
    own = privileges.own_device_status_writes(DRIVER, api_namespace)
    await_allowed(apiserver_k8s, account, own[0])
    granted = violations(apiserver_k8s.api_client, [account], status + own)
    assert [str(g.check) for g in granted] == [
        f"patch resourceclaims/status.resource.k8s.io in namespace {api_namespace}",
        "associated-node:patch resourceclaims/driver.resource.k8s.io named "
        f"'{DRIVER}' in namespace {api_namespace}",
    ]


def test_cluster_admin_violates_every_requirement_naming_verb_and_resource(
    apiserver_k8s: K8sClients, api_namespace: str, bind: Callable[..., None]
) -> None:
    account = ServiceAccountRef(api_namespace, "plugin")
    bind(account, cluster_role="cluster-admin")
    await_allowed(apiserver_k8s, account, AccessCheck("*", "*", group="*"))
    for checks in (
        privileges.secret_reads([api_namespace]),
        privileges.escalations([api_namespace]),
        privileges.claim_status_writes(DRIVER),
        privileges.dra_admin_writes(),
    ):
        found = violations(apiserver_k8s.api_client, [account], checks)
        assert [v.check for v in found] == list(checks)  # every review allowed
        assert all('ClusterRole "cluster-admin"' in v.reason for v in found), found[0].reason
    text = str(violations(apiserver_k8s.api_client, [account], privileges.secret_reads([]))[0])
    assert text.startswith(f"ServiceAccount {api_namespace}/plugin may get secrets cluster-wide (")


def test_secrets_in_the_own_namespace_pass_and_in_kube_system_fail(
    apiserver_k8s: K8sClients, api_namespace: str, bind: Callable[..., None]
) -> None:
    account = ServiceAccountRef(api_namespace, "plugin")
    read = [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]}]
    bind(account, read, namespace=api_namespace)
    await_allowed(apiserver_k8s, account, AccessCheck("get", "secrets", namespace=api_namespace))
    checks = privileges.secret_reads([api_namespace])
    assert violations(apiserver_k8s.api_client, [account], checks) == []

    bind(
        account,
        [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}],
        namespace="kube-system",
    )
    await_allowed(apiserver_k8s, account, AccessCheck("get", "secrets", namespace="kube-system"))
    found = violations(apiserver_k8s.api_client, [account], checks)
    assert [str(v.check) for v in found] == ["get secrets in namespace kube-system"]
    assert "RoleBinding" in found[0].reason


def test_device_status_scoped_to_the_own_driver_passes_and_unscoped_fails(
    apiserver_k8s: K8sClients, api_namespace: str, bind: Callable[..., None]
) -> None:
    own, unscoped = (ServiceAccountRef(api_namespace, n) for n in ("own", "unscoped"))
    rule = {
        "apiGroups": ["resource.k8s.io"],
        "resources": ["resourceclaims/driver"],
        "verbs": ["associated-node:update", "associated-node:patch"],
    }
    bind(own, [{**rule, "resourceNames": [DRIVER]}])
    bind(unscoped, [rule])
    status = [
        {
            "apiGroups": ["resource.k8s.io"],
            "resources": ["resourceclaims/status"],
            "verbs": ["update"],
        }
    ]
    bind(own, status)
    mine = AccessCheck(
        "associated-node:update", "resourceclaims", "resource.k8s.io", "driver", name=DRIVER
    )
    await_allowed(apiserver_k8s, own, mine)
    await_allowed(apiserver_k8s, unscoped, mine)
    checks = privileges.claim_status_writes(DRIVER)
    assert violations(apiserver_k8s.api_client, [own], checks) == []
    found = violations(apiserver_k8s.api_client, [unscoped], checks)
    assert sorted(v.check.verb for v in found) == [
        "associated-node:patch",
        "associated-node:update",
    ]
    assert all(v.check.name == privileges.OTHER_DRIVER for v in found)


def test_driver_accounts_come_from_the_daemonset_and_the_pods_of_its_namespace(
    apiserver_k8s: K8sClients, api_namespace: str, tmp_path: Path
) -> None:
    labels = {"app": "plugin"}
    spec = {"containers": [{"name": "c", "image": "registry.invalid/x:1"}]}
    apiserver_k8s.apps.create_namespaced_daemon_set(
        api_namespace,
        {
            "metadata": {"name": "plugin"},
            "spec": {
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {**spec, "serviceAccountName": "plugin-sa"},
                },
            },
        },
    )
    apiserver_k8s.core.create_namespaced_pod(
        api_namespace,
        {"metadata": {"name": "webhook"}, "spec": {**spec, "serviceAccountName": "hook"}},
    )
    apiserver_k8s.core.create_namespaced_pod(
        api_namespace, {"metadata": {"name": "bare"}, "spec": spec}
    )
    profile = tmp_path / "p.yaml"
    profile.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "dra-conformance.io/v1alpha1",
                "kind": "DriverProfile",
                "driver": DRIVER,
                "deviceClasses": {"default": DRIVER},
                "install": {"method": "preinstalled"},
                "readiness": {"daemonSet": {"namespace": api_namespace, "name": "plugin"}},
                "verification": {"method": "env", "nameRegex": "^X_", "value": "device"},
            }
        )
    )
    accounts = driver_service_accounts(apiserver_k8s, DriverMarks.of(load_profile(profile)))
    assert accounts == tuple(
        ServiceAccountRef(api_namespace, n) for n in ("default", "hook", "plugin-sa")
    )


def _labelled(name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"name": name, "labels": {"app": name}, "annotations": annotations or {}}


def _template(name: str, account: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": name}},
        "spec": {
            "containers": [{"name": "c", "image": "registry.invalid/x:1"}],
            "serviceAccountName": account,
            "restartPolicy": "Never" if name.startswith("job") else "Always",
        },
    }


def _owner(kind: str, api_version: str, created: Any) -> list[dict[str, Any]]:
    meta = created.metadata
    return [{"apiVersion": api_version, "kind": kind, "name": meta.name, "uid": meta.uid}]


def test_driver_accounts_are_every_workload_of_the_driver_in_all_namespaces(
    apiserver_k8s: K8sClients, api_namespace: str, cluster_scoped: ClusterScoped
) -> None:
    """Beside the DaemonSet: a Job in the driver's namespace, and elsewhere a StatefulSet and
    a Deployment of the driver's Helm release, a ReplicaSet the Deployment owns (from an older
    template) and a pod the StatefulSet owns; a CronJob elsewhere is not the driver's."""
    k8s, own = apiserver_k8s, api_namespace
    batch = k8s_client.BatchV1Api(k8s.api_client)
    other = unique_name("elsewhere")
    cluster_scoped.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    release = {HELM_RELEASE: unique_name("release"), HELM_RELEASE_NAMESPACE: own}

    def selector(name: str) -> dict[str, Any]:
        return {"matchLabels": {"app": name}}

    k8s.apps.create_namespaced_daemon_set(
        own,
        {
            "metadata": _labelled("plugin", release),
            "spec": {"selector": selector("plugin"), "template": _template("plugin", "plugin-sa")},
        },
    )
    batch.create_namespaced_job(
        own, {"metadata": _labelled("job-once"), "spec": {"template": _template("job", "jobber")}}
    )
    stateful = k8s.apps.create_namespaced_stateful_set(
        other,
        {
            "metadata": _labelled("ctrl", release),
            "spec": {
                "selector": selector("ctrl"),
                "serviceName": "ctrl",
                "template": _template("ctrl", "ctrl-sa"),
            },
        },
    )
    deployment = k8s.apps.create_namespaced_deployment(
        other,
        {
            "metadata": _labelled("web", release),
            "spec": {"selector": selector("web"), "template": _template("web", "web-sa")},
        },
    )
    k8s.apps.create_namespaced_replica_set(
        other,
        {
            "metadata": {
                **_labelled("web-old"),
                "ownerReferences": _owner("Deployment", "apps/v1", deployment),
            },
            "spec": {"selector": selector("web-old"), "template": _template("web-old", "old-sa")},
        },
    )
    k8s.core.create_namespaced_pod(
        other,
        {
            "metadata": {
                **_labelled("ctrl-0"),
                "ownerReferences": _owner("StatefulSet", "apps/v1", stateful),
            },
            "spec": _template("ctrl-0", "pod-sa")["spec"],
        },
    )
    batch.create_namespaced_cron_job(
        other,
        {
            "metadata": _labelled("stranger"),
            "spec": {
                "schedule": "0 0 * * *",
                "jobTemplate": {"spec": {"template": _template("job-stranger", "stranger")}},
            },
        },
    )
    # What the profile says: the readiness DaemonSet, in the driver's own namespace.
    marks = DriverMarks(frozenset({own}), frozenset({("DaemonSet", own, "plugin")}))
    expected = {ServiceAccountRef(own, n) for n in ("jobber", "plugin-sa")} | {
        ServiceAccountRef(other, n) for n in ("ctrl-sa", "old-sa", "pod-sa", "web-sa")
    }
    assert driver_service_accounts(k8s, marks) == tuple(sorted(expected))


def test_a_harness_that_may_not_review_gets_the_servers_403(
    kube_apiserver: ApiServer,
    apiserver_k8s: K8sClients,
    cluster_scoped: ClusterScoped,
    api_namespace: str,
    tmp_path: Path,
) -> None:
    # The suite turns this 403 into "not run" with a remedy (scenarios/security), never a pass.
    restricted = clients_with_rules(
        kube_apiserver,
        apiserver_k8s,
        cluster_scoped,
        api_namespace,
        [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
        tmp_path,
    )
    account = ServiceAccountRef(api_namespace, "plugin")
    with pytest.raises(ApiException) as raised:
        violations(restricted.api_client, [account], privileges.secret_reads([api_namespace]))
    assert raised.value.status == 403
