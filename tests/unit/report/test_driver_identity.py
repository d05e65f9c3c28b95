"""What a report names as the driver it certified (images by digest, what it was installed
from, the profile's text) and that it shows no local absolute path: RunFacts across xdist,
summary.json, summary.md and the Allure environment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.report import paths
from conformance.report.allure import environment_properties
from conformance.report.facts import RunFacts
from conformance.report.markdown import image_reference, render_markdown
from conformance.report.summary import RunInfo, build_summary

HEX = "ab" * 32
IMAGES = (
    {
        "container": "plugin",
        "image": "localhost/dra-conformance/fake-driver:0123abcd",
        "image_id": f"sha256:{HEX}",
        "digest": f"sha256:{HEX}",
        "pods": ["dra-fake-driver/plugin-a", "dra-fake-driver/plugin-b"],
    },
)
PROFILE_TEXT = "driver: gpu.example.com\ninstall:\n  manifests: [{root}/deploy/]\n"


@pytest.fixture
def suite_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "checkout"
    root.mkdir()
    monkeypatch.setattr(paths, "SUITE_ROOT", root)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return root


def _facts(root: Path, **changes: object) -> RunFacts:
    manifest = {"path": str(root / "deploy/daemonset.yaml"), "sha256": "sha256:" + "ef" * 32}
    values: dict[str, object] = {
        "driver_name": "gpu.example.com",
        "profile_path": str(root / "drivers/fake/profile.yaml"),
        "profile_digest": "sha256:" + "cd" * 32,
        "driver_images": IMAGES,
        "driver_install": {
            "method": "manifests",
            "image": None,
            "manifests": [manifest],
        },
        "profile_text": PROFILE_TEXT.format(root=root),
    }
    values.update(changes)
    return RunFacts(**values)  # type: ignore[arg-type]


def _summary(root: Path, facts: RunFacts | None) -> dict[str, object]:
    run = RunInfo(
        id="r1",
        started=0.0,
        finished=1.0,
        pytest_args=[f"--rootdir={root}", "--dra-profile", f"{root}/drivers/fake/profile.yaml"],
        report_dir=str(root / "reports/r1"),
    )
    return build_summary(run=run, facts=facts, catalog={}, records=[])


def test_run_facts_cross_to_workers_unchanged(suite_root: Path) -> None:
    facts = _facts(suite_root, driver_images_error="")
    assert RunFacts.from_dict(json.loads(json.dumps(facts.to_dict()))) == facts
    failed = RunFacts(driver_images_error="could not read the driver's pods: HTTP 403 Forbidden")
    assert RunFacts.from_dict(json.loads(json.dumps(failed.to_dict()))) == failed
    assert RunFacts.from_dict({}) == RunFacts()


def test_summary_names_the_driver_images_install_and_profile(suite_root: Path) -> None:
    driver = _summary(suite_root, _facts(suite_root))["driver"]
    assert driver["images"] == [dict(i) for i in IMAGES]  # type: ignore[index]
    assert driver["images_error"] is None  # type: ignore[index]
    assert driver["install"] == {  # type: ignore[index]
        "method": "manifests",
        "image": None,
        "manifests": [{"path": "deploy/daemonset.yaml", "sha256": "sha256:" + "ef" * 32}],
    }
    assert driver["profile_text"] == (  # type: ignore[index]
        "driver: gpu.example.com\ninstall:\n  manifests: [deploy/]\n"
    )


def test_summary_carries_no_absolute_path_of_the_machine(suite_root: Path) -> None:
    summary = _summary(suite_root, _facts(suite_root))
    assert summary["driver"]["profile_path"] == "drivers/fake/profile.yaml"  # type: ignore[index]
    assert summary["run"]["report_dir"] == "reports/r1"  # type: ignore[index]
    assert summary["run"]["pytest_args"] == [  # type: ignore[index]
        "--rootdir=.",
        "--dra-profile",
        "drivers/fake/profile.yaml",
    ]
    assert str(suite_root) not in json.dumps(summary)


def test_a_failed_read_is_recorded_not_raised(suite_root: Path) -> None:
    facts = _facts(suite_root, driver_images=(), driver_images_error="HTTP 403 Forbidden")
    summary = _summary(suite_root, facts)
    assert summary["driver"]["images"] == []  # type: ignore[index]
    assert summary["driver"]["images_error"] == "HTTP 403 Forbidden"  # type: ignore[index]
    assert "- driver images: none (HTTP 403 Forbidden)" in render_markdown(summary)


def test_a_summary_without_facts_says_nothing_was_read(suite_root: Path) -> None:
    driver = _summary(suite_root, None)["driver"]
    assert (driver["images"], driver["images_error"]) == ([], None)  # type: ignore[index]
    assert (driver["install"], driver["profile_text"]) == (None, None)  # type: ignore[index]


def test_markdown_lists_images_by_digest_and_the_manifests_not_the_profile_text(
    suite_root: Path,
) -> None:
    markdown = render_markdown(_summary(suite_root, _facts(suite_root)))
    assert (
        f"  - `localhost/dra-conformance/fake-driver:0123abcd@sha256:{HEX}` "
        "(container `plugin`, 2 pods)"
    ) in markdown
    assert "- installed from manifests (sha256 of each file, as read):" in markdown
    assert f"  - `deploy/daemonset.yaml` sha256:{'ef' * 32}" in markdown
    assert "its text is in summary.json (`driver.profile_text`)" in markdown
    assert "install:\n  manifests" not in markdown


def test_markdown_names_a_helm_chart_or_a_preinstalled_driver(suite_root: Path) -> None:
    helm = {"method": "helm", "chart": "fake-dra-driver", "version": "0.1.0"}
    markdown = render_markdown(_summary(suite_root, _facts(suite_root, driver_install=helm)))
    assert "- installed from Helm chart `fake-dra-driver` version `0.1.0`" in markdown
    preinstalled = {"method": "preinstalled"}
    summary = _summary(suite_root, _facts(suite_root, driver_install=preinstalled))
    assert "- driver preinstalled (installed by other means than the suite)" in (
        render_markdown(summary)
    )


def test_markdown_of_an_older_summary_shows_no_new_lines() -> None:
    summary = {"driver": {"name": "x", "profile_path": "p.yaml"}, "run": {}, "cluster": {}}
    markdown = render_markdown(summary)
    assert "driver images" not in markdown and "installed" not in markdown


def test_an_image_reference_is_pinned_once() -> None:
    entry = {"image": "drv:1", "digest": f"sha256:{HEX}"}
    assert image_reference(entry) == f"drv:1@sha256:{HEX}"
    pinned = {"image": f"drv@sha256:{HEX}", "digest": f"sha256:{HEX}"}
    assert image_reference(pinned) == f"drv@sha256:{HEX}"
    assert image_reference({"image": "drv:1", "digest": None}) == "drv:1"


def test_allure_environment_names_the_images_and_no_local_path(suite_root: Path) -> None:
    second = dict(IMAGES[0], container="init", image="busybox:1.37", digest=f"sha256:{'12' * 32}")
    summary = _summary(suite_root, _facts(suite_root, driver_images=(*IMAGES, second)))
    summary["provenance"] = {"command_line": ["dra-conformance", "run", f"{suite_root}/p.yaml"]}
    props = environment_properties(summary)
    assert props["Driver.images"] == (
        f"localhost/dra-conformance/fake-driver:0123abcd@sha256:{HEX}, "
        f"busybox:1.37@sha256:{'12' * 32}"
    )
    assert props["Driver.profile"] == "drivers/fake/profile.yaml"
    assert props["Command"] == "dra-conformance run p.yaml"
    assert not any(str(suite_root) in value for value in props.values())


def test_markdown_says_the_manifests_were_hashed_as_applied(suite_root: Path) -> None:
    applied = {
        "method": "manifests",
        "image": "localhost/drv:1",
        "manifests": [
            {"path": str(suite_root / "deploy/ds.yaml"), "sha256": "sha256:" + "ef" * 32}
        ],
        "applied": True,
    }
    summary = _summary(suite_root, _facts(suite_root, driver_install=applied))
    assert summary["driver"]["install"]["applied"] is True  # type: ignore[index]
    markdown = render_markdown(summary)
    assert (
        "- installed from manifests (sha256 of each file as applied, with `localhost/drv:1` "
        "for the image placeholder):"
    ) in markdown
    before = dict(applied, applied=False)
    markdown = render_markdown(_summary(suite_root, _facts(suite_root, driver_install=before)))
    assert "for the image placeholder) (installed before the run):" in markdown


NODE_IMAGE = {
    "ref": "localhost/dra-conformance/node:v1.37.2-0123",
    "image_id": "sha256:" + "12" * 32,
    "repo_digests": [],
    "built_here": True,
}
BUILD = {
    "kubelet_version": "v1.37.2",
    "container_runtime_version": "containerd://2.1.4",
    "os_image": "Debian GNU/Linux 12 (bookworm)",
    "kernel_version": "6.8.0",
    "node_image": NODE_IMAGE,
}
NODES = (
    {"name": "w1", "devices": 4, **BUILD},
    {"name": "w2", "devices": 4, **BUILD},
)


def test_summary_names_each_nodes_build_and_node_image(suite_root: Path) -> None:
    facts = _facts(suite_root, nodes=NODES)
    assert RunFacts.from_dict(json.loads(json.dumps(facts.to_dict()))) == facts
    cluster = _summary(suite_root, facts)["cluster"]
    assert cluster["nodes"] == [dict(n) for n in NODES]  # type: ignore[index]
    assert cluster["nodes_error"] is None  # type: ignore[index]


def test_markdown_shows_a_uniform_clusters_build_on_one_line(suite_root: Path) -> None:
    markdown = render_markdown(_summary(suite_root, _facts(suite_root, nodes=NODES)))
    assert (
        "- nodes: w1, w2\n"
        "  - kubelet v1.37.2, containerd://2.1.4, Debian GNU/Linux 12 (bookworm), kernel 6.8.0; "
        "node image `localhost/dra-conformance/node:v1.37.2-0123 "
        f"(image ID sha256:{'12' * 32}, built here)`\n"
    ) in markdown


def test_markdown_names_the_nodes_of_each_build_when_they_differ(suite_root: Path) -> None:
    pulled = dict(NODE_IMAGE, ref="kindest/node:v1.36.3", built_here=False)
    pulled["repo_digests"] = ["kindest/node@sha256:" + "34" * 32]
    older = {"name": "w2", "kubelet_version": "v1.36.3", "node_image": pulled}
    facts = _facts(suite_root, nodes=(NODES[0], older), nodes_error="HTTP 403 Forbidden")
    markdown = render_markdown(_summary(suite_root, facts))
    assert "6.8.0; node image `localhost/dra-conformance/node:v1.37.2-0123 (" in markdown
    assert "built here)` (w1)\n" in markdown
    assert (
        f"  - kubelet v1.36.3; node image `kindest/node:v1.36.3 (sha256:{'34' * 32})` (w2)\n"
    ) in markdown
    assert "  - node facts incomplete: HTTP 403 Forbidden\n" in markdown


def test_allure_environment_names_the_nodes_build(suite_root: Path) -> None:
    props = environment_properties(_summary(suite_root, _facts(suite_root, nodes=NODES)))
    assert props["Cluster.kubelet"] == "v1.37.2"
    assert props["Cluster.runtime"] == "containerd://2.1.4"
    assert props["Cluster.os"] == "Debian GNU/Linux 12 (bookworm)"
    assert props["Cluster.kernel"] == "6.8.0"
    assert props["Cluster.node.image"] == (
        f"localhost/dra-conformance/node:v1.37.2-0123 (image ID sha256:{'12' * 32}, built here)"
    )
    assert "Cluster.node.image" not in environment_properties(
        _summary(suite_root, _facts(suite_root))
    )
