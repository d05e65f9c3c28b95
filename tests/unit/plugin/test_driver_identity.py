"""What the controller reads of the driver for the report: its install source (chart, manifest
digests as applied, preinstalled) and its images, whose failure to read never stops a run."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import tarfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from conformance.install.helm import chart_identity
from conformance.model.profile import HelmInstall, ImageSpec, ManifestsInstall, PreinstalledInstall
from conformance.model.profile_parse import load_profile
from conformance.plugin import driver_identity as identity

FAKE = Path(__file__).resolve().parents[3] / "drivers/fake"


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def test_a_manifests_install_built_by_the_suite_hashes_each_file_as_read() -> None:
    """Without this run's install (--dra-skip-install): the profile's files, said so."""
    profile = load_profile(FAKE / "profile.yaml")
    install = identity._install(profile)
    files = sorted((FAKE / "deploy").glob("*.yaml"))
    assert install == {
        "method": "manifests",
        "image": None,  # the builder's reference is only known as it builds
        "manifests": [{"path": str(f), "sha256": _sha256(f.read_bytes())} for f in files],
        "applied": False,
    }


def test_what_the_run_installed_is_named_as_applied() -> None:
    profile = load_profile(FAKE / "profile.yaml")
    applied = {
        "method": "manifests",
        "image": "localhost/dra-conformance/fake-driver:0123abcd",
        "manifests": [{"path": "deploy/daemonset.yaml", "sha256": "sha256:" + "ab" * 32}],
        "applied": True,
    }
    assert identity._install(profile, applied) == applied
    helm = load_profile(FAKE / "profile-helm.yaml")
    installed = {"method": "helm", "image": "localhost/drv:1", "applied": True}
    assert identity._install(helm, installed) == {
        "method": "helm",
        "chart": "fake-dra-driver",
        "version": "0.1.0",
        "image": "localhost/drv:1",
        "applied": True,
    }


def test_a_manifests_install_with_a_named_image_hashes_the_files_as_applied() -> None:
    profile = load_profile(FAKE / "profile.yaml")
    assert isinstance(profile.install, ManifestsInstall)
    named = dataclasses.replace(profile.install, image=ImageSpec(ref="registry.example/drv:1.0"))
    install = identity._install(dataclasses.replace(profile, install=named))
    daemonset = FAKE / "deploy/daemonset.yaml"
    rendered = daemonset.read_text().replace("IMAGE_PLACEHOLDER", "registry.example/drv:1.0")
    assert install["image"] == "registry.example/drv:1.0"
    assert {"path": str(daemonset), "sha256": _sha256(rendered.encode())} in install["manifests"]


def test_a_helm_install_names_the_chart_and_version_from_chart_yaml() -> None:
    profile = load_profile(FAKE / "profile-helm.yaml")
    assert identity._install(profile) == {
        "method": "helm",
        "chart": "fake-dra-driver",
        "version": "0.1.0",
        "applied": False,
    }


def test_a_packaged_chart_and_a_chart_reference(tmp_path: Path) -> None:
    package = tmp_path / "drv-2.3.4.tgz"
    chart = b"apiVersion: v2\nname: drv\nversion: 2.3.4\n"
    with tarfile.open(package, "w:gz") as archive:
        member = tarfile.TarInfo("drv/Chart.yaml")
        member.size = len(chart)
        archive.addfile(member, io.BytesIO(chart))
    packaged = HelmInstall(chart=str(package), release="r", namespace="n")
    assert chart_identity(packaged) == {"chart": "drv", "version": "2.3.4"}
    remote = HelmInstall(chart="oci://registry.example/charts/drv", release="r", namespace="n")
    assert chart_identity(remote) == {"chart": "drv", "version": None}
    pinned = dataclasses.replace(remote, chart="example/drv", version="1.0.0")
    assert chart_identity(pinned) == {"chart": "drv", "version": "1.0.0"}


def test_a_preinstalled_driver() -> None:
    profile = load_profile(FAKE / "profile.yaml")
    preinstalled = dataclasses.replace(profile, install=PreinstalledInstall())
    assert identity._install(preinstalled) == {"method": "preinstalled"}


def _context(profile: Any) -> Any:
    return SimpleNamespace(profile=profile, cluster=SimpleNamespace(kubeconfig="kc", context=None))


def test_images_that_cannot_be_read_are_recorded_with_why(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError("pods is forbidden (sent Bearer abcdef0123456789)")

    monkeypatch.setattr(identity, "load_clients", lambda *a: SimpleNamespace())
    monkeypatch.setattr(identity, "read_driver_images", refuse)
    found = identity.driver_identity(_context(load_profile(FAKE / "profile.yaml")))
    assert found["driver_images"] == ()
    assert found["driver_images_error"] == (
        "could not read the driver's pods: PermissionError: "
        "pods is forbidden (sent Bearer <redacted>)"
    )
    assert found["profile_text"].startswith("# Driver profile of the bundled fake DRA driver")


def test_the_driver_namespaces_and_daemonset_are_where_images_are_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[Any] = []

    def read(k8s: Any, namespaces: Any, daemonset: Any) -> tuple[list[Any], str]:
        asked.append((sorted(namespaces), daemonset))
        return [{"container": "plugin"}], ""

    monkeypatch.setattr(identity, "load_clients", lambda *a: SimpleNamespace())
    monkeypatch.setattr(identity, "read_driver_images", read)
    found = identity.driver_identity(_context(load_profile(FAKE / "profile.yaml")))
    assert found["driver_images"] == ({"container": "plugin"},)
    assert found["driver_images_error"] == ""
    assert asked == [(["dra-fake-driver"], ("dra-fake-driver", "fake-dra-kubelet-plugin"))]
