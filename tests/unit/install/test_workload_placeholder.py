"""WORKLOAD_PLACEHOLDER: a manifest's helper container runs the suite's workload image."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.install.errors import InstallError
from conformance.install.manifests import (
    WORKLOAD_PLACEHOLDER,
    manifest_files,
    parse_documents,
    render_documents,
    render_files,
    uses_workload_image,
)
from conformance.model.profile import SUITE_ROOT, ManifestsInstall
from conformance.model.profile_parse import load_profile

DRIVER = "registry.example/drv:1"
WORKLOAD = "localhost/dra-conformance/workload:abc"


def _daemonset(tmp_path: Path) -> Path:
    manifest = tmp_path / "ds.yaml"
    manifest.write_text(
        "kind: DaemonSet\n"
        "initContainers: [{name: setup, image: WORKLOAD_PLACEHOLDER}]\n"
        "containers: [{name: plugin, image: IMAGE_PLACEHOLDER}]\n"
    )
    return manifest


def _rendered(manifest: Path) -> list[dict[str, Any]]:
    [(_, text)] = render_files([manifest], DRIVER, WORKLOAD)
    return [d for d in yaml.safe_load_all(text) if d]


def test_both_placeholders_are_replaced_each_by_its_own_image(tmp_path: Path) -> None:
    [doc] = _rendered(_daemonset(tmp_path))
    assert doc["initContainers"][0]["image"] == WORKLOAD
    assert doc["containers"][0]["image"] == DRIVER


def test_without_a_workload_image_its_placeholder_stays_and_the_driver_image_is_set(
    tmp_path: Path,
) -> None:
    [doc] = render_documents([_daemonset(tmp_path)], DRIVER)
    assert doc["initContainers"][0]["image"] == WORKLOAD_PLACEHOLDER
    assert doc["containers"][0]["image"] == DRIVER


def test_the_workload_placeholder_alone_needs_no_driver_image(tmp_path: Path) -> None:
    manifest = tmp_path / "helper.yaml"
    manifest.write_text("kind: DaemonSet\nimage: WORKLOAD_PLACEHOLDER\n")
    [(_, text)] = render_files([manifest], None, WORKLOAD)
    assert text == f"kind: DaemonSet\nimage: {WORKLOAD}\n"
    assert uses_workload_image([manifest])


def test_a_driver_placeholder_without_a_driver_image_is_still_an_error(tmp_path: Path) -> None:
    with pytest.raises(InstallError, match="IMAGE_PLACEHOLDER"):
        render_files([_daemonset(tmp_path)], None, WORKLOAD)


def test_files_without_the_placeholder_do_not_ask_for_the_workload_image(tmp_path: Path) -> None:
    manifest = tmp_path / "ds.yaml"
    manifest.write_text("kind: DaemonSet\nimage: IMAGE_PLACEHOLDER\n")
    assert not uses_workload_image([manifest])


def test_the_dranet_example_runs_its_helpers_on_the_workload_image() -> None:
    profile = load_profile(SUITE_ROOT / "docs/examples/dranet/profile.yaml")
    install = profile.install
    assert isinstance(install, ManifestsInstall) and install.image is not None
    assert install.image.go_module is not None
    assert install.image.go_module.packages == ("./cmd/dranet",)
    files = manifest_files(install.paths)
    assert uses_workload_image(files)
    docs = parse_documents(render_files(files, DRIVER, WORKLOAD))
    pods = {
        d["metadata"]["name"]: d["spec"]["template"]["spec"]
        for d in docs
        if d["kind"] == "DaemonSet"
    }
    assert pods["dranet"]["initContainers"][0]["image"] == WORKLOAD
    assert pods["dranet"]["containers"][0]["image"] == DRIVER
    assert pods["dranet-test-interfaces"]["containers"][0]["image"] == WORKLOAD
    assert (profile.readiness.daemonset_namespace, profile.readiness.daemonset_name) == (
        "kube-system",
        "dranet",
    )
