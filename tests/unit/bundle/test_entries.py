"""What a bundle holds is what the run looks up: each entry's key and place come from the
builders' own reference and output functions, `--only` picks by name, and a directory entry
installs where the run's lookup reads (the cache root, or the Allure generator's npm prefix)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance import gobuild
from conformance.bundle import entries
from conformance.bundle.manifest import BundleError, Entry
from conformance.cache import CACHE_ENV
from conformance.cel.build import helper_component
from conformance.images import components, harness, nodeimage
from conformance.images.versions import NodeVersions
from conformance.report.allure_html import NPM_PREFIX_ENV


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv(NPM_PREFIX_ENV, str(tmp_path / "npm"))
    return tmp_path / "cache"


def _by_name(kubernetes: tuple[str, ...] = ("v1.37.2",)) -> dict[str, Entry]:
    return {n.entry.name: n.entry for n in entries.needed(kubernetes)}


def test_node_images_first_then_the_rest_in_a_fixed_order() -> None:
    names = [n.entry.name for n in entries.needed(("v1.37.2", "v1.36.3"))]
    assert names == ["node:v1.37.2", "node:v1.36.3", *entries.NAMES]


def test_image_entries_are_the_builders_references() -> None:
    got = _by_name()
    node = nodeimage.node_image_ref(NodeVersions.for_kubernetes("v1.37.2"))
    assert got["node:v1.37.2"] == Entry("node:v1.37.2", "image", node.split(":")[1], node)
    assert got["workload"].location == harness.workload_image_ref()
    assert got["fake-driver"].location == harness.fake_driver_image_ref()
    assert got["python-base"].location == harness.python_base_ref()


def test_go_entries_are_the_build_output_directories(cache: Path) -> None:
    got = _by_name()
    for name, component in (
        ("dra-cel", helper_component()),
        ("helm", components.helm_component()),
    ):
        assert got[name].key == component.key
        assert cache / got[name].location == gobuild.output_dir(component)
    kind = got["kind"]
    assert kind.location.startswith("bin/kind-v0.33.0-") and kind.location.endswith(kind.key)


def test_the_allure_entry_installs_under_the_npm_prefix(tmp_path: Path) -> None:
    allure = _by_name()["allure"]
    assert (allure.root, allure.location) == ("npm", ".")
    assert entries.install_root(allure) == tmp_path / "npm"


def test_only_selects_by_name_and_refuses_unknown_names() -> None:
    picked = entries.needed(("v1.37.2",), ["workload", "kind"])
    assert [n.entry.name for n in picked] == ["kind", "workload"]
    with pytest.raises(BundleError) as caught:
        entries.needed(("v1.37.2",), ["kind", "sonobuoy"])
    assert caught.value.problem == "--only sonobuoy: no such bundle entry"
    assert "node:v1.37.2" in caught.value.remedy


def test_nothing_is_present_in_an_empty_cache() -> None:
    missing = {n.entry.name for n in entries.needed(("v1.37.2",), ["kind", "dra-cel", "allure"])}
    present = {n.entry.name for n in entries.needed(("v1.37.2",), list(missing)) if n.present()}
    assert present == set()
