import pytest
import yaml

from conformance.cluster import kindconfig
from conformance.cluster.kindconfig import ClusterOptions, kind_config


def test_137_gates_are_the_beta_dra_features_only():
    assert kindconfig.feature_gates("v1.37.2") == {
        "DRAPartitionableDevices": True,
        "DRAConsumableCapacity": True,
        "DRADeviceBindingConditions": True,
        "ResourceHealthStatus": True,
    }


def test_ga_locked_gates_are_never_set():
    # Setting a GA-locked gate to a non-default value stops the components; we set none.
    for minor in ("1.37",):
        gates = kindconfig.DRA_FEATURE_GATES[minor]
        assert "DRAExtendedResource" not in gates
        assert "DRAPrioritizedList" not in gates
        assert "DRAAdminAccess" not in gates


def test_136_enables_device_taint_rules_and_its_api_version():
    config = kind_config(ClusterOptions(kubernetes="v1.36.4"))
    assert config["featureGates"]["DRADeviceTaintRules"] is True
    assert config["runtimeConfig"] == {"resource.k8s.io/v1beta2": "true"}


def test_137_needs_no_runtime_config():
    assert "runtimeConfig" not in kind_config(ClusterOptions(kubernetes="v1.37.2"))


def test_unsupported_version_names_supported_ones():
    with pytest.raises(ValueError, match=r"v1\.33\.0 is not supported .*1\.35, 1\.36, 1\.37"):
        kindconfig.feature_gates("v1.33.0")


def test_bad_version_string():
    with pytest.raises(ValueError, match="not a Kubernetes version"):
        kindconfig.minor_of("latest")


def test_offline_cgroup_v1_config():
    config = kind_config(ClusterOptions(name="x", workers=3, offline=True, cgroup_v1=True))
    assert [n["role"] for n in config["nodes"]] == ["control-plane"] + ["worker"] * 3
    assert config["networking"] == {"kubeProxyMode": "iptables", "disableDefaultCNI": True}
    patches = [yaml.safe_load(p) for p in config["kubeadmConfigPatches"]]
    kubelet = next(p for p in patches if p["kind"] == "KubeletConfiguration")
    assert kubelet["failCgroupV1"] is False
    init = next(p for p in patches if p["kind"] == "InitConfiguration")
    assert init["skipPhases"] == ["preflight", "addon/coredns"]
    assert "enable_cdi = true" in config["containerdConfigPatches"][0]


def test_online_cgroup_v2_patches_the_kubelets_status_cadence_and_etcds_fsync_only():
    config = kind_config(ClusterOptions(offline=False, cgroup_v1=False))
    [kubelet, cluster] = [yaml.safe_load(p) for p in config["kubeadmConfigPatches"]]
    assert cluster == {
        "kind": "ClusterConfiguration",
        "etcd": {"local": {"extraArgs": [{"name": "unsafe-no-fsync", "value": "true"}]}},
    }
    assert kubelet == {
        "kind": "KubeletConfiguration",
        "nodeStatusUpdateFrequency": "2s",
        "nodeStatusReportFrequency": "5m",
    }
    assert "disableDefaultCNI" not in config["networking"]


def test_render_is_valid_yaml_with_name():
    assert yaml.safe_load(kindconfig.render(ClusterOptions(name="abc")))["name"] == "abc"


def test_cgroup_detection(tmp_path):
    assert kindconfig.host_uses_cgroup_v1(tmp_path)
    (tmp_path / "cgroup.controllers").write_text("cpu memory")
    assert not kindconfig.host_uses_cgroup_v1(tmp_path)


def test_zero_workers_rejected():
    with pytest.raises(ValueError, match="at least one worker"):
        kind_config(ClusterOptions(workers=0))


def test_missing_sys_resource_clamps_oom_score_adj():
    config = kind_config(ClusterOptions(restrict_oom_score_adj=True))
    assert any("restrict_oom_score_adj = true" in p for p in config["containerdConfigPatches"])
    plain = kind_config(ClusterOptions())
    assert not any("restrict_oom_score_adj" in p for p in plain["containerdConfigPatches"])


@pytest.mark.parametrize(
    ("version", "api"), [("v1.37.2", "v1beta4"), ("v1.36.3", "v1beta4"), ("v1.35.4", "v1beta3")]
)
def test_control_plane_args_are_patched_in_the_kubeadm_api_kind_writes_for_the_version(
    version, api
):
    [patch] = kind_config(ClusterOptions(kubernetes=version))["kubeadmConfigPatchesJSON6902"]
    assert (patch["group"], patch["version"], patch["kind"]) == (
        "kubeadm.k8s.io",
        api,
        "ClusterConfiguration",
    )
    args = {
        "leader-elect": "false",
        "bind-address": "0.0.0.0",
        "authorization-always-allow-paths": "/healthz,/readyz,/livez,/metrics",
    }
    if api == "v1beta4":  # a list of {name, value}: appended, never replacing kind's gates
        expected = [
            {"op": "add", "path": f"/{component}/extraArgs/-", "value": {"name": n, "value": v}}
            for component in ("controllerManager", "scheduler")
            for n, v in args.items()
        ]
    else:
        expected = [
            {"op": "add", "path": f"/{component}/extraArgs/{n}", "value": v}
            for component in ("controllerManager", "scheduler")
            for n, v in args.items()
        ]
    assert yaml.safe_load(patch["patch"]) == expected
