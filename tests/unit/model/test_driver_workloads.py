"""Which workloads are the driver's (conformance.model.driver_workloads) and what a profile's
install creates (conformance.install.identity): pure, no cluster."""

from __future__ import annotations

from typing import Any

from conformance.install.identity import install_objects
from conformance.model.driver_workloads import (
    HELM_RELEASE,
    HELM_RELEASE_NAMESPACE,
    DriverMarks,
    driver_workloads,
    pod_spec,
)
from conformance.model.privileges import ServiceAccountRef
from conformance.model.profile import SUITE_ROOT, HelmInstall
from conformance.model.profile_parse import load_profile

FAKE = SUITE_ROOT / "drivers" / "fake"


def obj(
    namespace: str,
    name: str,
    account: str | None = None,
    *,
    uid: str = "",
    owner: str = "",
    release: tuple[str, str] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": namespace, "name": name, "uid": uid or name}
    if owner:
        meta["ownerReferences"] = [{"uid": owner}]
    if release:
        meta["annotations"] = {HELM_RELEASE: release[0], HELM_RELEASE_NAMESPACE: release[1]}
    spec = {"serviceAccountName": account} if account else {}
    return {"metadata": meta, "spec": {"template": {"spec": spec}}}


def names(objects: list[tuple[str, dict[str, Any]]], marks: DriverMarks) -> list[str]:
    return [
        f"{w.kind} {w.namespace}/{w.name} {w.account.name}"
        for w in driver_workloads(objects, marks)
    ]


def test_pod_spec_of_every_kind() -> None:
    spec = {"serviceAccountName": "a"}
    assert pod_spec("Pod", {"spec": spec}) == spec
    assert pod_spec("StatefulSet", {"spec": {"template": {"spec": spec}}}) == spec
    assert (
        pod_spec("CronJob", {"spec": {"jobTemplate": {"spec": {"template": {"spec": spec}}}}})
        == spec
    )
    assert pod_spec("Job", {}) is None


def test_own_namespaces_named_objects_releases_and_owners() -> None:
    release = ("drv", "drv-ns")
    objects = [
        ("StatefulSet", obj("drv-ns", "db", "db-sa")),  # own namespace: any kind
        ("DaemonSet", obj("kube-system", "plugin", "plugin-sa", release=release)),  # named
        ("Deployment", obj("ops", "ctrl", "ctrl-sa", uid="d1", release=release)),  # its release
        ("ReplicaSet", obj("ops", "ctrl-1", "old-sa", uid="r1", owner="d1")),  # owned ...
        ("Pod", {"metadata": {"namespace": "ops", "name": "ctrl-1-x", "uid": "p1",
                              "ownerReferences": [{"uid": "r1"}]}, "spec": {}}),  # ... and on
        ("CronJob", obj("ops", "backup", "backup-sa", uid="c1")),  # another's
        ("Job", obj("ops", "backup-1", "backup-sa", owner="c1")),
        ("DaemonSet", obj("kube-system", "kube-proxy", "kube-proxy")),  # shared namespace
        ("Service", obj("drv-ns", "svc")),  # not a workload
    ]  # fmt: skip
    marks = DriverMarks(frozenset({"drv-ns"}), frozenset({("DaemonSet", "kube-system", "plugin")}))
    assert names(objects, marks) == [
        "StatefulSet drv-ns/db db-sa",
        "DaemonSet kube-system/plugin plugin-sa",
        "Deployment ops/ctrl ctrl-sa",
        "Pod ops/ctrl-1-x default",
        "ReplicaSet ops/ctrl-1 old-sa",
    ]


def test_marks_of_the_fake_drivers_manifests() -> None:
    profile = load_profile(FAKE / "profile.yaml")
    created = install_objects(profile)
    assert ("Namespace", "", "dra-fake-driver") in created
    assert ("DaemonSet", "dra-fake-driver", "fake-dra-kubelet-plugin") in created
    marks = DriverMarks.of(profile, created)
    assert marks.namespaces == {"dra-fake-driver"}
    assert marks.objects == {("DaemonSet", "dra-fake-driver", "fake-dra-kubelet-plugin")}
    account = ServiceAccountRef("dra-fake-driver", "fake-dra-kubelet-plugin")
    plugin = obj("dra-fake-driver", "fake-dra-kubelet-plugin", account.name)
    assert [w.account for w in driver_workloads([("DaemonSet", plugin)], marks)] == [account]


def test_marks_of_a_helm_profile_and_a_shared_namespace() -> None:
    profile = load_profile(FAKE / "profile-helm.yaml")
    assert install_objects(profile) == []
    marks = DriverMarks.of(profile)
    assert isinstance(profile.install, HelmInstall)
    assert marks.releases == {(profile.install.release, profile.install.namespace)}
    assert marks.namespaces == {"dra-fake-driver"}
    # kube-system holds more than the driver: only what is named there is the driver's.
    shared = DriverMarks.of(profile, [("Namespace", "", "kube-system")])
    assert shared.namespaces == {"dra-fake-driver"}
