"""Stand-ins for Go modules the proxy refuses (conformance.images.substitutes)."""

from __future__ import annotations

import re
import subprocess
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from conformance import gobuild
from conformance.images import releases
from conformance.images.substitutes import IPTABLES_WRAPPERS, SUBSTITUTES, build_notes
from conformance.report.markdown import render_markdown


def _legacy_source(tmp_path: Path) -> Path:
    package = tmp_path / "source" / IPTABLES_WRAPPERS.source_dir
    package.mkdir(parents=True)
    (package / "iptables.go").write_text("package iptables\n")
    (package / "save_restore.go").write_text("package iptables\n")
    (package / "iptables_test.go").write_text("package iptables\n")
    return tmp_path / "source"


def test_the_stand_in_is_the_old_package_under_legacy_and_our_adapter(tmp_path: Path) -> None:
    root = IPTABLES_WRAPPERS.write(tmp_path / "work", _legacy_source(tmp_path))
    assert root == tmp_path / "work" / "substitutes" / "sigs.k8s.io_iptables-wrappers"
    go_mod = (root / "go.mod").read_text()
    assert go_mod.startswith("module sigs.k8s.io/iptables-wrappers\n")
    assert "\tk8s.io/klog/v2 v2.80.1\n" in go_mod
    package = root / "pkg" / "iptables"
    assert sorted(p.name for p in (package / "legacy").iterdir()) == [
        "iptables.go",
        "save_restore.go",
    ]
    adapter = (package / "adapter.go").read_text()
    assert adapter.startswith("// Package iptables stands in")
    assert '"sigs.k8s.io/iptables-wrappers/pkg/iptables/legacy"' in adapter


def test_a_source_without_go_files_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "source" / IPTABLES_WRAPPERS.source_dir).mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="no Go sources"):
        IPTABLES_WRAPPERS.write(tmp_path / "work", tmp_path / "source")


def test_the_stand_in_keys_the_kubernetes_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gobuild, "_GO_VERSION", "go1.26.8")
    plain = gobuild.GoComponent("kubernetes", "v1.38.0-beta.0", "k8s.io/kubernetes", ("p",))
    substituted = replace(plain, substitutes=(IPTABLES_WRAPPERS,))
    other_source = replace(
        plain, substitutes=(replace(IPTABLES_WRAPPERS, source_version="v1.37.0"),)
    )
    assert len({plain.key, substituted.key, other_source.key}) == 3


def test_only_v1_38_substitutes_and_every_named_module_has_a_stand_in() -> None:
    named = {m for r in releases.RELEASES.values() for m in r.substitutes}
    assert named <= set(SUBSTITUTES)
    assert {k: r.substitutes for k, r in releases.RELEASES.items() if r.substitutes} == {
        "1.38": ("sigs.k8s.io/iptables-wrappers",)
    }


# --- against v1.38.0-beta.0's own sources, when the Go module cache has them -------------------


@pytest.fixture
def v138() -> zipfile.ZipFile:
    release = releases.RELEASES["1.38"]
    try:
        cache = subprocess.run(
            ["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no go command")
    path = Path(cache) / "cache/download/k8s.io/kubernetes/@v" / f"{release.kubernetes}.zip"
    if not path.is_file():
        pytest.skip(f"k8s.io/kubernetes@{release.kubernetes} is not in the Go module cache")
    with zipfile.ZipFile(path) as archive:
        yield archive


def _importers(archive: zipfile.ZipFile) -> dict[str, str]:
    """Non-test Go sources that import the substituted module -> their text."""
    found = {}
    for name in archive.namelist():
        if name.endswith(".go") and not name.endswith("_test.go"):
            text = archive.read(name).decode(errors="replace")
            if IPTABLES_WRAPPERS.module in text:
                found[name] = text
    return found


def test_v1_38_requires_the_refused_version(v138: zipfile.ZipFile) -> None:
    text = v138.read(f"k8s.io/kubernetes@{releases.RELEASES['1.38'].kubernetes}/go.mod").decode()
    assert f"{IPTABLES_WRAPPERS.module} {IPTABLES_WRAPPERS.refused_version}" in text


def test_the_adapter_declares_every_name_v1_38_uses(v138: zipfile.ZipFile) -> None:
    importers = _importers(v138)
    assert importers, "no non-test source imports the module: is the substitute still needed?"
    used: set[str] = set()
    for text in importers.values():
        imports = re.findall(rf'(\w+) "{re.escape(IPTABLES_WRAPPERS.module)}/([\w/]+)"', text)
        assert [path for _, path in imports] == [IPTABLES_WRAPPERS.package_dir]
        used |= set(re.findall(rf"\b{imports[0][0]}\.([A-Z]\w*)", text))
    adapter = IPTABLES_WRAPPERS.adapter().decode()
    declared = set(re.findall(r"^\s*(?:func |type )?([A-Z]\w*)\b", adapter, re.M))
    declared |= set(re.findall(r"^\s+([A-Z]\w*)\s+=", adapter, re.M))
    assert used - declared == set()


def test_a_run_on_v1_38_says_what_its_cluster_was_built_with() -> None:
    assert build_notes("v1.38.0-beta.0") == (IPTABLES_WRAPPERS.why,)
    assert build_notes("v1.37.2") == ()
    assert build_notes("not a version") == ()
    summary = {
        "cluster": {"kubernetes_version": "v1.38.0-beta.0", "build_notes": [IPTABLES_WRAPPERS.why]}
    }
    markdown = render_markdown(summary)
    assert f"Cluster built here with a stand-in: {IPTABLES_WRAPPERS.why}." in markdown
    assert "stand-in" not in render_markdown({"cluster": {"build_notes": []}})
