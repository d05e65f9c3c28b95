"""The helm command lines built from a profile, image placeholders in values, helm errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from conformance.errors import HostError
from conformance.install import helm
from conformance.install.errors import InstallError
from conformance.install.helm import HelmCommand
from conformance.model.profile import HelmInstall
from conformance.model.profile_parse import load_profile
from conformance.progress import Progress

FAKE = Path(__file__).resolve().parents[3] / "drivers/fake"
IMAGE = "localhost/dra-conformance/fake-driver:0123abcd"


def _helm_profile_install() -> HelmInstall:
    method = load_profile(FAKE / "profile-helm.yaml").install
    assert isinstance(method, HelmInstall)
    return method


# What the fake helm profile's install section amounts to, for the tests that vary it.
FAKE_HELM = HelmInstall(
    chart=str(FAKE / "chart"),
    release="fake-dra-driver",
    namespace="dra-fake-driver",
    values={
        "image": {"repository": "IMAGE_REPOSITORY_PLACEHOLDER", "tag": "IMAGE_TAG_PLACEHOLDER"}
    },
)


def _flag(argv: tuple[str, ...], name: str) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv) if arg == name]


def test_install_command_of_the_fake_helm_profile() -> None:
    method = _helm_profile_install()
    assert dataclasses.replace(method, image=None) == FAKE_HELM
    cmd = helm.helm_install_command("helm", method, "/kc", None, IMAGE)
    assert cmd.argv[:5] == ("helm", "upgrade", "--install", "fake-dra-driver", str(FAKE / "chart"))
    assert _flag(cmd.argv, "--namespace") == ["dra-fake-driver"]
    assert _flag(cmd.argv, "--kubeconfig") == ["/kc"]
    assert "--create-namespace" in cmd.argv
    assert "--kube-context" not in cmd.argv and "--version" not in cmd.argv
    assert not any(arg.startswith("--wait") for arg in cmd.argv)  # wait_ready checks readiness
    assert _flag(cmd.argv, "--values") == ["-"]
    assert yaml.safe_load(cmd.stdin or "") == {
        "image": {"repository": "localhost/dra-conformance/fake-driver", "tag": "0123abcd"}
    }


def test_values_files_come_before_the_profile_values_so_those_win(tmp_path: Path) -> None:
    method = dataclasses.replace(
        FAKE_HELM,
        values_files=(tmp_path / "a.yaml", tmp_path / "b.yaml"),
        version="1.2.3",
    )
    cmd = helm.helm_install_command("/bin/helm", method, "/kc", "ctx", IMAGE)
    assert _flag(cmd.argv, "--values") == [str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml"), "-"]
    assert _flag(cmd.argv, "--kube-context") == ["ctx"]
    assert _flag(cmd.argv, "--version") == ["1.2.3"]


def test_without_values_nothing_is_read_from_stdin() -> None:
    method = dataclasses.replace(FAKE_HELM, values={})
    cmd = helm.helm_install_command("helm", method, "/kc", None, None)
    assert cmd.stdin is None and "--values" not in cmd.argv


def test_uninstall_command_waits_and_tolerates_a_missing_release() -> None:
    cmd = helm.helm_uninstall_command("helm", FAKE_HELM, "/kc", "ctx")
    assert cmd.argv[:3] == ("helm", "uninstall", "fake-dra-driver")
    assert _flag(cmd.argv, "--namespace") == ["dra-fake-driver"]
    assert _flag(cmd.argv, "--kube-context") == ["ctx"]
    assert "--wait" in cmd.argv and "--ignore-not-found" in cmd.argv
    assert _flag(cmd.argv, "--cascade") == ["foreground"]  # the plugin pods are gone too


@pytest.mark.parametrize(
    "ref, expected",
    [
        ("localhost/a/b:1.0", ("localhost/a/b", "1.0")),
        ("registry:5000/a/b:v2", ("registry:5000/a/b", "v2")),
        ("registry:5000/a/b", ("registry:5000/a/b", "latest")),
        ("busybox", ("busybox", "latest")),
    ],
)
def test_split_image_ref(ref: str, expected: tuple[str, str]) -> None:
    assert helm.split_image_ref(ref) == expected


def test_placeholders_are_replaced_at_any_depth() -> None:
    values = {
        "plugin": {"image": "IMAGE_PLACEHOLDER", "args": ["--image=IMAGE_PLACEHOLDER"]},
        "image": {"repository": "IMAGE_REPOSITORY_PLACEHOLDER", "tag": "IMAGE_TAG_PLACEHOLDER"},
        "replicas": 2,
        "name": "untouched",
    }
    assert helm.helm_values(values, "r.io/x:7") == {
        "plugin": {"image": "r.io/x:7", "args": ["--image=r.io/x:7"]},
        "image": {"repository": "r.io/x", "tag": "7"},
        "replicas": 2,
        "name": "untouched",
    }


def test_placeholder_without_an_image_names_install_image() -> None:
    with pytest.raises(InstallError, match="no install.image"):
        helm.helm_values({"image": {"tag": "IMAGE_TAG_PLACEHOLDER"}}, None)


def test_tag_placeholder_with_a_digest_reference_says_to_use_the_full_reference() -> None:
    with pytest.raises(InstallError, match="IMAGE_PLACEHOLDER"):
        helm.helm_values({"tag": "IMAGE_TAG_PLACEHOLDER"}, "r.io/x@sha256:" + "0" * 64)
    full = helm.helm_values({"image": "IMAGE_PLACEHOLDER"}, "r.io/x@sha256:00")
    assert full == {"image": "r.io/x@sha256:00"}


def test_helm_failure_is_one_line_with_the_last_stderr_line_and_the_command() -> None:
    script = "echo 'coalesce.go: warning' >&2; echo 'Error: chart requires kubeVersion' >&2; exit 1"
    with pytest.raises(InstallError) as info:
        helm.run_helm(HelmCommand(("sh", "-c", script)), "helm install of ./c", "fix it")
    assert info.value.problem == (
        f"helm install of ./c failed: Error: chart requires kubeVersion (command: sh -c {script})"
    )
    assert info.value.remedy == "fix it"


def test_an_install_helm_does_not_own_gets_a_remedy_that_says_so() -> None:
    last = 'Error: ServiceAccount "x" exists and cannot be imported: invalid ownership metadata'
    script = f"echo '{last}' >&2; exit 1"
    with pytest.raises(InstallError) as info:
        helm.run_helm(HelmCommand(("sh", "-c", script)), "helm install", "generic")
    assert "already installed by other means" in info.value.remedy


def test_a_field_manager_conflict_gets_a_remedy_that_names_the_way_out() -> None:
    last = (
        "Error: UPGRADE FAILED: conflict occurred while applying object ns/ds apps/v1, "
        'Kind=DaemonSet: Apply failed with 1 conflict: conflict with "dra-conformance" using '
        'apps/v1: .spec.template.spec.containers[name="plugin"].image'
    )
    script = f"echo '{last}' >&2; exit 1"
    with pytest.raises(InstallError) as info:
        helm.run_helm(HelmCommand(("sh", "-c", script)), "helm install", "generic")
    assert 'conflict with "dra-conformance"' in info.value.problem
    assert "--force-conflicts" in info.value.remedy


def test_helm_values_reach_stdin() -> None:
    helm.run_helm(HelmCommand(("sh", "-c", 'test "$(cat)" = "a: 1"'), "a: 1"), "x", "")


def test_helm_on_path_is_preferred(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(helm.shutil, "which", lambda name: f"/opt/{name}")
    assert helm.helm_tool(Progress()) == "/opt/helm"


def test_no_helm_and_no_go_says_how_to_get_helm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(helm.shutil, "which", lambda name: None)
    from conformance import gobuild

    monkeypatch.setattr(gobuild.shutil, "which", lambda name: None)
    monkeypatch.setattr(gobuild, "is_built", lambda component: False)
    with pytest.raises(HostError, match="put helm .* on PATH"):
        helm.helm_tool(Progress())


def test_helm_profile_differs_from_the_manifests_profile_only_in_install() -> None:
    manifests = yaml.safe_load((FAKE / "profile.yaml").read_text())
    helm = yaml.safe_load((FAKE / "profile-helm.yaml").read_text())
    assert manifests.pop("install")["method"] == "manifests"
    assert helm.pop("install")["method"] == "helm"
    assert helm == manifests


def test_slow_prepare_profile_differs_from_the_helm_profile_only_in_its_controls() -> None:
    helm = yaml.safe_load((FAKE / "profile-helm.yaml").read_text())
    slow = yaml.safe_load((FAKE / "profile-slow-prepare.yaml").read_text())
    assert slow["install"]["values"].pop("controls") == {"_all": {"prepareDelaySeconds": 2}}
    assert slow == helm
