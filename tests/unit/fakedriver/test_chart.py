"""The fake driver's Helm chart renders (with the real helm: on PATH, or built from the Go
module proxy on first use) into the same objects as deploy/, in the release namespace."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.install.helm import helm_tool
from conformance.install.manifests import manifest_files, render_manifests
from conformance.progress import Progress

FAKE_DIR = Path(__file__).resolve().parents[3] / "drivers/fake"
CHART = FAKE_DIR / "chart"
IMAGE = "localhost/dra-conformance/fake-driver:0123abcd"


def _template(namespace: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [helm_tool(Progress()), "template", "fake-dra-driver", str(CHART)]
        + ["--namespace", namespace, "--kube-version", "1.37.2"]
        + ["--set", "image.repository=localhost/dra-conformance/fake-driver"]
        + list(extra),
        capture_output=True,
        text=True,
        timeout=60,
    )


def _by_key(docs: list[dict[str, Any]]) -> dict[tuple[str, str, str | None], dict[str, Any]]:
    return {
        (d["kind"], d["metadata"]["name"], d["metadata"].get("namespace")): d for d in docs if d
    }


@pytest.fixture(scope="module")
def rendered() -> dict[tuple[str, str, str | None], dict[str, Any]]:
    result = _template("dra-fake-driver", "--set", "image.tag=0123abcd")
    assert result.returncode == 0, result.stderr
    return _by_key(list(yaml.safe_load_all(result.stdout)))


@pytest.fixture(scope="module")
def manifests() -> dict[tuple[str, str, str | None], dict[str, Any]]:
    stream = render_manifests(manifest_files([FAKE_DIR / "deploy"]), IMAGE)
    return _by_key(list(yaml.safe_load_all(stream)))


def test_chart_renders_the_objects_of_deploy_except_the_namespace(rendered, manifests) -> None:
    # helm installs into the release namespace (--create-namespace); a chart does not own it.
    expected = {key for key in manifests if key[0] != "Namespace"}
    assert set(rendered) == expected


def test_chart_objects_have_the_specs_of_deploy(rendered, manifests) -> None:
    for key, ours in rendered.items():
        theirs = manifests[key]
        for field in ("spec", "rules", "roleRef", "subjects", "data"):
            if field == "spec" and key[0] == "DaemonSet":
                # Pod labels and the catalog checksum annotation may differ; the pod spec not.
                assert ours["spec"]["template"]["spec"] == theirs["spec"]["template"]["spec"]
                assert ours["spec"]["selector"] == theirs["spec"]["selector"]
                assert ours["spec"]["updateStrategy"] == theirs["spec"]["updateStrategy"]
            else:
                assert ours.get(field) == theirs.get(field), f"{key} {field}"
        assert ours["metadata"]["labels"]["app.kubernetes.io/name"] == "fake-dra-kubelet-plugin"


def test_release_namespace_is_used_everywhere() -> None:
    result = _template("other-ns", "--set", "image.tag=t")
    assert result.returncode == 0, result.stderr
    docs = [d for d in yaml.safe_load_all(result.stdout) if d]
    namespaced = [d["metadata"]["namespace"] for d in docs if "namespace" in d["metadata"]]
    subjects = [s["namespace"] for d in docs for s in d.get("subjects", [])]
    assert namespaced and set(namespaced) == {"other-ns"}
    assert subjects and set(subjects) == {"other-ns"}
    assert "dra-fake-driver" not in result.stdout


def test_missing_image_tag_is_a_clear_error() -> None:
    result = _template("dra-fake-driver")
    assert result.returncode != 0
    assert "image.tag is required" in result.stderr


def test_catalog_can_be_replaced_with_set_file(tmp_path: Path) -> None:
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text("default:\n  devices: []\n")
    result = _template("dra-fake-driver", "--set=image.tag=t", f"--set-file=catalog={catalog}")
    assert result.returncode == 0, result.stderr
    docs = _by_key(list(yaml.safe_load_all(result.stdout)))
    cm = docs[("ConfigMap", "fake-dra-catalog", "dra-fake-driver")]
    assert cm["data"]["catalog.yaml"] == catalog.read_text()


def test_chart_catalog_is_a_copy_of_the_drivers_catalog() -> None:
    assert (CHART / "files/catalog.yaml").read_text() == (FAKE_DIR / "catalog.yaml").read_text(), (
        "cp drivers/fake/catalog.yaml drivers/fake/chart/files/catalog.yaml"
    )


def test_chart_passes_helm_lint_strict() -> None:
    result = subprocess.run(
        [helm_tool(Progress()), "lint", "--strict", str(CHART), "--set", "image.tag=t"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
