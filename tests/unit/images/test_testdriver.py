"""The k8s-test-driver image builder: its reference, its root filesystem, and that the profile
format and the image module name the same builders."""

from __future__ import annotations

import tarfile
from pathlib import Path

import yaml

from conformance.images import harness, testdriver
from conformance.install.manifests import manifest_files, render_manifests
from conformance.model.profile import IMAGE_BUILDERS
from conformance.model.profile_parse import load_profile

EXAMPLE = Path(__file__).resolve().parents[3] / "docs/examples/k8s-test-driver"


def test_image_ref_is_keyed_by_kubernetes_version() -> None:
    assert testdriver.image_ref("v1.37.2") == "localhost/dra-conformance/k8s-test-driver:v1.37.2"
    assert testdriver.image_ref("v1.36.4") != testdriver.image_ref("v1.37.2")


def test_image_holds_only_the_executable_binary_and_tmp(tmp_path: Path) -> None:
    binary = tmp_path / "test-driver"
    binary.write_bytes(b"\x7fELF fake")
    with tarfile.open(fileobj=testdriver.image_layout(binary).close()) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert set(members) == {"usr", "usr/local", "usr/local/bin", testdriver.BINARY_PATH, "tmp"}
        assert members[testdriver.BINARY_PATH].mode == 0o755
        assert members[testdriver.BINARY_PATH].uid == 0
        assert members["tmp"].mode == 0o1777
        extracted = tar.extractfile(testdriver.BINARY_PATH)
        assert extracted is not None and extracted.read() == b"\x7fELF fake"


def test_profile_format_and_images_know_the_same_builders() -> None:
    assert set(IMAGE_BUILDERS) == set(harness.BUILDERS)


def test_unknown_builder_names_the_known_ones() -> None:
    try:
        harness.build_named_image("no-such-builder", None)  # type: ignore[arg-type]
    except Exception as exc:
        assert "no-such-builder" in str(exc) and "k8s-test-driver" in str(exc)
    else:
        raise AssertionError("an unknown builder must be refused")


def test_example_profile_uses_the_builder_and_its_daemonset_runs_the_binary() -> None:
    profile = load_profile(EXAMPLE / "profile.yaml")
    assert profile.install.image is not None
    assert profile.install.image.builder == "k8s-test-driver"
    docs = list(
        yaml.safe_load_all(render_manifests(manifest_files(profile.install.paths), "IMAGE"))
    )
    (ds,) = [d for d in docs if d["kind"] == "DaemonSet"]
    assert (ds["metadata"]["namespace"], ds["metadata"]["name"]) == (
        profile.readiness.daemonset_namespace,
        profile.readiness.daemonset_name,
    )
    (container,) = ds["spec"]["template"]["spec"]["containers"]
    assert container["command"] == [f"/{testdriver.BINARY_PATH}"]
    assert container["args"][0] == "kubelet-plugin"
    classes = {d["metadata"]["name"] for d in docs if d["kind"] == "DeviceClass"}
    assert profile.device_classes["default"] in classes
