"""The Go-module image builder's pure parts: the image reference, the Go build it describes,
the image's root filesystem and config, and `goModule:<path>` charts."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from conformance.errors import BuildError
from conformance.images import gomodule
from conformance.model.profile import GoModuleSpec
from conformance.model.profile_gomodule import binary_name, import_path

SPEC = GoModuleSpec(
    "sigs.k8s.io/dra-example-driver",
    "v0.4.0",
    ("./cmd/dra-example-kubeletplugin", "./cmd/dra-example-webhook"),
    "/usr/bin",
)


def test_image_ref_names_module_and_version() -> None:
    ref = gomodule.image_ref(SPEC)
    assert ref == "localhost/dra-conformance/go-module/dra-example-driver:v0.4.0"


@pytest.mark.parametrize(
    "module,name",
    [
        ("sigs.k8s.io/dra-example-driver", "dra-example-driver"),
        ("github.com/Acme/GPU-Driver/v2", "gpu-driver"),  # major-version suffix, lowercase
        ("example.com/a/b_c", "b_c"),
    ],
)
def test_image_name(module: str, name: str) -> None:
    assert gomodule.image_name(module) == name


def test_image_tag_keeps_pseudo_versions_and_replaces_plus() -> None:
    assert gomodule.image_tag("v0.0.0-20260101000000-abcdef123456") == (
        "v0.0.0-20260101000000-abcdef123456"
    )
    assert gomodule.image_tag("v2.0.0+incompatible") == "v2.0.0_incompatible"


def test_component_builds_full_import_paths_into_named_binaries() -> None:
    comp = gomodule.component(SPEC)
    assert (comp.name, comp.module, comp.version) == (
        "go-module-dra-example-driver",
        "sigs.k8s.io/dra-example-driver",
        "v0.4.0",
    )
    assert comp.packages == (
        "sigs.k8s.io/dra-example-driver/cmd/dra-example-kubeletplugin",
        "sigs.k8s.io/dra-example-driver/cmd/dra-example-webhook",
    )
    assert comp.binaries == ("dra-example-kubeletplugin", "dra-example-webhook")
    assert comp.toolchain == "local"


def test_import_path_and_binary_of_the_module_root() -> None:
    assert import_path("example.com/tool", ".") == "example.com/tool"
    assert import_path("example.com/tool", "example.com/tool/cmd/x") == "example.com/tool/cmd/x"
    assert binary_name("example.com/Tool", ".") == "Tool"
    assert binary_name("example.com/tool/v2", ".") == "tool"  # as go build names it
    assert binary_name("example.com/tool/v2", "./cmd/x") == "x"


def test_image_holds_only_the_binaries_and_tmp(tmp_path: Path) -> None:
    binaries = []
    for name in ("a", "b"):
        binaries.append(tmp_path / name)
        binaries[-1].write_bytes(b"\x7fELF " + name.encode())
    with tarfile.open(fileobj=gomodule.image_layout(binaries, "/usr/local/bin").close()) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert set(members) == {"usr", "usr/local", "usr/local/bin", "usr/local/bin/a",
                                "usr/local/bin/b", "tmp"}  # fmt: skip
        assert members["usr/local/bin/a"].mode == 0o755 and members["usr/local/bin/a"].uid == 0
        assert members["tmp"].mode == 0o1777


def test_image_config_puts_the_binary_dir_on_path() -> None:
    changes = gomodule.image_changes(SPEC)
    assert changes[0].startswith("ENV PATH=/usr/bin:")
    assert changes[1] == f"LABEL {gomodule.KEY_LABEL}={gomodule.image_key(SPEC)}"
    assert not any(c.startswith("ENTRYPOINT") for c in changes)  # two binaries: none is it
    one = GoModuleSpec(SPEC.module, SPEC.version, SPEC.packages[:1], "/opt/bin")
    assert gomodule.image_changes(one)[-1] == 'ENTRYPOINT ["/opt/bin/dra-example-kubeletplugin"]'


def test_image_key_changes_with_what_is_built() -> None:
    other_dir = GoModuleSpec(SPEC.module, SPEC.version, SPEC.packages, "/opt/bin")
    fewer = GoModuleSpec(SPEC.module, SPEC.version, SPEC.packages[:1], SPEC.binary_dir)
    keys = {gomodule.image_key(s) for s in (SPEC, other_dir, fewer)}
    assert len(keys) == 3


def test_module_chart_resolves_inside_the_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chart = tmp_path / "deployments/helm/x"
    chart.mkdir(parents=True)
    (chart / "Chart.yaml").write_text("name: x\n")
    monkeypatch.setattr(gomodule.gobuild, "module_dir", lambda module, version: tmp_path)
    assert gomodule.resolve_chart("goModule:deployments/helm/x", SPEC) == str(chart.resolve())
    assert gomodule.resolve_chart("oci://example.com/x", SPEC) == "oci://example.com/x"
    for wrong in ("goModule:deployments", "goModule:../../etc"):
        with pytest.raises(BuildError, match="has no chart at"):
            gomodule.resolve_chart(wrong, SPEC)
