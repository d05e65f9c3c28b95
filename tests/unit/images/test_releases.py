import pytest

from conformance import gobuild
from conformance.errors import HostError
from conformance.images import components, releases, versions
from conformance.images.releases import (
    ALPHA,
    BETA_OFF,
    BETA_ON,
    GA,
    GA_LOCKED,
    RELEASES,
    Release,
    go_too_old,
    release_for,
)
from conformance.images.versions import NodeVersions


def _release(**overrides) -> Release:
    fields = dict(
        kubernetes="v1.99.0",
        go_directive="1.26.0",
        go_upstream="1.26.1",
        etcd_kubeadm="3.7.0-0",
        etcd_build="v3.7.0",
        pause="3.10.2",
        gates={},
        device_taint_rule_versions=("v1",),
    )
    return Release(**{**fields, **overrides})


def test_gates_enabled_are_the_existing_ones_not_yet_ga():
    release = _release(
        gates={"A": ALPHA, "B": BETA_OFF, "C": BETA_ON, "D": GA, "E": GA_LOCKED},
    )
    assert release.feature_gates() == ("A", "B", "C")


@pytest.mark.parametrize("minor", sorted(RELEASES))
def test_no_release_passes_an_absent_or_ga_gate(minor):
    release = RELEASES[minor]
    assert set(release.gates) <= set(releases.TESTED_GATES)
    for gate in release.feature_gates():
        assert release.gates[gate] not in (GA, GA_LOCKED), gate


def test_gates_per_release():
    assert "DRAAdminAccess" in RELEASES["1.35"].feature_gates()  # beta in 1.35
    assert "DRAAdminAccess" not in RELEASES["1.36"].feature_gates()  # GA-locked from 1.36
    assert "DRAPrioritizedList" not in RELEASES["1.36"].feature_gates()  # GA in 1.36
    assert "DRADeviceTaintRules" in RELEASES["1.36"].feature_gates()  # beta, off by default
    assert RELEASES["1.37"].feature_gates() == (
        "DRAConsumableCapacity",
        "DRADeviceBindingConditions",
        "DRAPartitionableDevices",
        "ResourceHealthStatus",
    )
    # 1.38 drops DynamicResourceAllocation and locks nearly every DRA gate.
    assert RELEASES["1.38"].feature_gates() == ("ResourceHealthStatus",)


def test_device_taint_rule_version_is_the_newest_and_switched_on_when_not_default():
    assert _release(device_taint_rule_versions=("v1", "v1beta2")).runtime_config() == {}
    beta = _release(device_taint_rule_versions=("v1alpha3", "v1beta2"))
    assert beta.device_taint_rule_version() == "v1beta2"
    assert beta.runtime_config() == {"resource.k8s.io/v1beta2": "true"}
    assert beta.served_versions() == ("v1", "v1beta2")


@pytest.mark.parametrize(
    ("minor", "taint_rule", "served"),
    [
        ("1.35", "v1alpha3", ("v1", "v1alpha3")),
        ("1.36", "v1beta2", ("v1", "v1beta2")),
        ("1.37", "v1", ("v1",)),
        ("1.38", "v1", ("v1",)),
    ],
)
def test_served_versions_per_release(minor, taint_rule, served):
    assert RELEASES[minor].device_taint_rule_version() == taint_rule
    assert RELEASES[minor].served_versions() == served


@pytest.mark.parametrize(
    ("go", "need", "too_old"),
    [
        ("go1.26.8", "1.27.0", True),
        ("go1.26.8", "1.26.0", False),
        ("go1.26.8", "1.25.0", False),
        ("go1.27", "1.27.0", False),
        ("go1.25.9", "1.26.0", True),
        ("go1.26.10", "1.26.9", False),
    ],
)
def test_go_too_old(go, need, too_old):
    assert go_too_old(_release(go_directive=need), go) is too_old


def test_release_for_any_patch_and_unsupported_minor():
    assert release_for("v1.36.9") is RELEASES["1.36"]
    assert release_for("v1.38.0-beta.0").kubernetes == "v1.38.0-beta.0"
    with pytest.raises(ValueError, match=r"supported minors: 1\.35, 1\.36, 1\.37, 1\.38\)"):
        release_for("v1.34.0")


def test_node_versions_pin_each_release_etcd_and_keep_137_key():
    assert NodeVersions.for_kubernetes("v1.36.3").etcd == "v3.6.8"
    assert NodeVersions.for_kubernetes("v1.35.4").etcd == "v3.6.6"
    # the cached 1.37.2 node image must keep its key
    assert NodeVersions.for_kubernetes("v1.37.2") == NodeVersions()


def test_cache_keys_differ_per_version(monkeypatch):
    keys = {
        versions.node_image_key(NodeVersions.for_kubernetes(v), "x")
        for v in ("v1.35.4", "v1.36.3", "v1.37.2")
    }
    assert len(keys) == 3
    monkeypatch.setattr(gobuild, "_GO_VERSION", "go1.26.8")
    a = gobuild.GoComponent("kubernetes", "v1.36.3", "k8s.io/kubernetes", ("p",))
    b = gobuild.GoComponent("kubernetes", "v1.37.2", "k8s.io/kubernetes", ("p",))
    assert a.key != b.key
    assert gobuild.output_dir(a).name.startswith("kubernetes-v1.36.3-")


def test_a_new_enough_host_go_builds_locally(monkeypatch):
    monkeypatch.setattr(gobuild, "_GO_VERSION", "go1.26.8")
    assert components.toolchain_for("v1.36.3") == gobuild.LOCAL


def test_an_older_host_go_that_cannot_fetch_the_release_go_is_one_clear_error(
    monkeypatch, tmp_path
):
    """With no proxy and an empty module cache the go command cannot fetch go1.27.3; the
    error names the version, the Go it needs and what to do, before any build starts."""
    monkeypatch.setattr(gobuild, "_GO_VERSION", "go1.26.8")
    monkeypatch.setenv("GOPROXY", "off")
    monkeypatch.setenv("GOMODCACHE", str(tmp_path / "modcache"))
    components.toolchain_for.cache_clear()
    with pytest.raises(HostError, match=r"v1\.38\.0-beta\.0 needs Go >= 1\.27\.0") as err:
        components.toolchain_for("v1.38.0-beta.0")
    assert "go1.27.3" in str(err.value)


def test_the_fetched_toolchain_is_part_of_the_cache_key(monkeypatch):
    monkeypatch.setattr(gobuild, "_GO_VERSION", "go1.26.8")
    local = gobuild.GoComponent("kubernetes", "v1.38.0-beta.0", "k8s.io/kubernetes", ("p",))
    fetched = gobuild.GoComponent(
        "kubernetes", "v1.38.0-beta.0", "k8s.io/kubernetes", ("p",), toolchain="go1.27.3"
    )
    assert local.key != fetched.key


def test_a_module_the_proxy_refuses_is_named():
    """Kubernetes v1.38.0-beta.0 needs sigs.k8s.io/iptables-wrappers, which the proxy here
    refuses (as seen on this machine, 2026-12-04)."""
    output = (
        "go: downloading github.com/coredns/caddy v1.1.4\n$GOMODCACHE/k8s.io/kubernetes@"
        "v1.38.0-beta.0/pkg/proxy/iptables/cleanup.go:28:2: sigs.k8s.io/iptables-wrappers@v1.0.0"
        ": reading https://proxy.golang.org/sigs.k8s.io/iptables-wrappers/@v/v1.0.0.zip: 403 "
        "Forbidden\n\tserver response: This module version is not available.\n"
    )
    assert gobuild.refused_module(output) == "sigs.k8s.io/iptables-wrappers@v1.0.0"
    assert gobuild.refused_module("go: downloading x v1\nsyntax error") is None
