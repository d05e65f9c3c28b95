"""What `installer.install` returns: the manifests as applied (each file's text with the image
substituted, by sha256) and the image put in place of the placeholder, so the report names
exactly what was installed. The cluster and the image build are stubbed."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.install import installer
from conformance.install.manifests import applied_manifests, manifest_files, render_files
from conformance.model.profile import PreinstalledInstall
from conformance.model.profile_parse import load_profile

FAKE = Path(__file__).resolve().parents[3] / "drivers/fake"
IMAGE = "localhost/dra-conformance/fake-driver:0123abcd"


def _sha256(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def applied(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    documents: list[dict[str, Any]] = []
    monkeypatch.setattr(installer, "prepare_image", lambda *args: IMAGE)
    monkeypatch.setattr(installer, "load_clients", lambda *a: object())
    monkeypatch.setattr(installer, "apply_manifests", lambda k8s, docs: documents.extend(docs))
    return documents


def test_a_manifests_install_returns_each_file_as_applied(applied: list[dict[str, Any]]) -> None:
    installed = installer.install(load_profile(FAKE / "profile.yaml"), "kubeconfig")
    files = manifest_files([FAKE / "deploy"])
    daemonset = FAKE / "deploy/daemonset.yaml"
    assert installed["method"] == "manifests" and installed["applied"] is True
    assert installed["image"] == IMAGE
    assert [m["path"] for m in installed["manifests"]] == [str(f) for f in files]
    substituted = daemonset.read_text().replace("IMAGE_PLACEHOLDER", IMAGE)
    assert {"path": str(daemonset), "sha256": _sha256(substituted)} in installed["manifests"]
    # the digest differs from the file's on disk: it names the image that was applied
    assert _sha256(daemonset.read_text()) not in {m["sha256"] for m in installed["manifests"]}
    [ds] = [d for d in applied if d["kind"] == "DaemonSet"]
    assert ds["spec"]["template"]["spec"]["containers"][0]["image"] == IMAGE


def test_the_digests_are_of_the_text_that_was_parsed_and_applied(tmp_path: Path) -> None:
    manifest = tmp_path / "ds.yaml"
    manifest.write_text("kind: DaemonSet\nimage: IMAGE_PLACEHOLDER\n")
    rendered = render_files([manifest], "registry.example/drv:1")
    assert rendered == [(manifest, "kind: DaemonSet\nimage: registry.example/drv:1\n")]
    assert yaml.safe_load(rendered[0][1])["image"] == "registry.example/drv:1"
    assert applied_manifests(rendered) == [
        {
            "path": str(manifest),
            "sha256": _sha256("kind: DaemonSet\nimage: registry.example/drv:1\n"),
        }
    ]


def test_a_helm_install_returns_the_image_it_set(monkeypatch: pytest.MonkeyPatch) -> None:
    given: list[Any] = []
    monkeypatch.setattr(installer, "prepare_image", lambda *args: IMAGE)
    monkeypatch.setattr(installer, "helm_install", lambda *args: given.append(args[1]))
    installed = installer.install(load_profile(FAKE / "profile-helm.yaml"), "kubeconfig")
    assert installed == {"method": "helm", "image": IMAGE, "applied": True}
    assert given == [IMAGE]


def test_a_preinstalled_driver_installs_nothing() -> None:
    profile = dataclasses.replace(
        load_profile(FAKE / "profile.yaml"), install=PreinstalledInstall()
    )
    assert installer.install(profile, "kubeconfig") == {"method": "preinstalled"}
