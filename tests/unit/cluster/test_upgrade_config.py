"""The cluster configuration an in-place upgrade rewrites: the target release's gates and API
versions replace the old release's, other settings stay."""

from __future__ import annotations

import yaml

from conformance.cluster.upgrade import (
    rewrite_cluster_configuration,
    rewrite_component_config,
    rewrite_extra_args,
)
from conformance.images import releases

OLD_GATES = ",".join(f"{g}=true" for g in releases.release_for("v1.36.3").feature_gates())


def _cluster_configuration(extra_args: object) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "kubeadm.k8s.io/v1beta4",
            "kind": "ClusterConfiguration",
            "kubernetesVersion": "v1.36.3",
            "apiServer": {"extraArgs": extra_args, "certSANs": ["localhost"]},
            "controllerManager": {"extraArgs": [{"name": "feature-gates", "value": OLD_GATES}]},
            "networking": {"podSubnet": "10.244.0.0/16"},
        }
    )


def _args(section: dict) -> dict[str, str]:
    extra = section["extraArgs"]
    return {a["name"]: a["value"] for a in extra} if isinstance(extra, list) else extra


def test_the_api_server_gets_the_target_release_gates_and_api_versions() -> None:
    old = [
        {"name": "feature-gates", "value": OLD_GATES},
        {"name": "runtime-config", "value": "resource.k8s.io/v1beta2=true"},
        {"name": "bind-address", "value": "0.0.0.0"},
    ]
    new = yaml.safe_load(rewrite_cluster_configuration(_cluster_configuration(old), "v1.37.2"))
    api = _args(new["apiServer"])
    target = releases.release_for("v1.37.2")
    assert api["feature-gates"] == ",".join(f"{g}=true" for g in sorted(target.feature_gates()))
    # DeviceTaintRule is served by default in 1.37: no runtime config left
    assert "runtime-config" not in api
    assert api["bind-address"] == "0.0.0.0"
    assert new["apiServer"]["certSANs"] == ["localhost"]
    assert new["kubernetesVersion"] == "v1.36.3"  # kubeadm upgrade apply moves it
    # gates that became GA-locked in 1.37 are no longer passed
    assert "DRAExtendedResource" not in _args(new["controllerManager"])["feature-gates"]
    assert "DRAExtendedResource" in OLD_GATES
    assert _args(new["scheduler"])["feature-gates"] == api["feature-gates"]
    assert new["networking"] == {"podSubnet": "10.244.0.0/16"}


def test_a_v1beta3_map_of_extra_args_stays_a_map() -> None:
    args = rewrite_extra_args({"feature-gates": "A=true", "v": "4"}, {"feature-gates": "B=true"})
    assert args == {"v": "4", "feature-gates": "B=true"}


def test_an_empty_value_drops_the_argument() -> None:
    old = [{"name": "runtime-config", "value": "x=true"}, {"name": "v", "value": "4"}]
    assert rewrite_extra_args(old, {"runtime-config": ""}) == [{"name": "v", "value": "4"}]


def test_kubelet_and_kube_proxy_configurations_get_the_target_gates_only() -> None:
    kubelet = yaml.safe_dump(
        {
            "kind": "KubeletConfiguration",
            "featureGates": {g: True for g in releases.release_for("v1.36.3").feature_gates()},
            "cgroupDriver": "systemd",
        }
    )
    new = yaml.safe_load(rewrite_component_config(kubelet, "v1.37.2"))
    assert new["featureGates"] == {g: True for g in releases.release_for("v1.37.2").feature_gates()}
    assert new["cgroupDriver"] == "systemd"
