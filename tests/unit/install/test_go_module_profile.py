"""`install.image.goModule` and `goModule:<path>` charts in the profile: what loads, and the
one-line error naming the field for what does not."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.model.profile import GoModuleSpec, HelmInstall, ProfileError
from conformance.model.profile_parse import load_profile

ROOT = Path(__file__).resolve().parents[3]
MODULE = {
    "module": "sigs.k8s.io/dra-example-driver",
    "version": "v0.4.0",
    "packages": ["./cmd/dra-example-kubeletplugin"],
}
PROFILE: dict[str, Any] = {
    "apiVersion": "dra-conformance.io/v1alpha1",
    "kind": "DriverProfile",
    "driver": "gpu.example.com",
    "deviceClasses": {"default": "gpu.example.com"},
    "install": {
        "method": "helm",
        "chart": "goModule:deployments/helm/dra-example-driver",
        "release": "dra-example-driver",
        "namespace": "dra-example-driver",
        "image": {"goModule": MODULE},
    },
    "verification": {"method": "env", "nameRegex": "^GPU_DEVICE_[0-9]+$", "value": "device"},
}


def load(tmp_path: Path, image: dict[str, Any] | None = None, **install: Any) -> HelmInstall:
    data = copy.deepcopy(PROFILE)
    data["install"].update(install)
    if image is not None:
        data["install"]["image"] = image
    (tmp_path / "x.yaml").write_text(yaml.safe_dump(data))
    loaded = load_profile(tmp_path / "x.yaml").install
    assert isinstance(loaded, HelmInstall)
    return loaded


def problem(tmp_path: Path, image: dict[str, Any] | None = None, **install: Any) -> str:
    with pytest.raises(ProfileError) as err:
        load(tmp_path, image, **install)
    assert len(err.value.problems) == 1, err.value.problems
    return err.value.problems[0]


def test_go_module_image_and_module_chart_load(tmp_path: Path) -> None:
    install = load(tmp_path)
    assert install.chart == "goModule:deployments/helm/dra-example-driver"  # resolved at install
    assert install.image is not None and install.image.ref is None
    assert install.image.go_module == GoModuleSpec(
        "sigs.k8s.io/dra-example-driver", "v0.4.0", ("./cmd/dra-example-kubeletplugin",), "/usr/bin"
    )


def test_binary_dir_and_full_import_paths(tmp_path: Path) -> None:
    module = {**MODULE, "packages": ["sigs.k8s.io/dra-example-driver/cmd/x", "."]}
    install = load(tmp_path, {"goModule": {**module, "binaryDir": "/usr/local/bin"}})
    assert install.image is not None and install.image.go_module is not None
    assert install.image.go_module.binary_dir == "/usr/local/bin"
    assert install.image.go_module.packages == ("sigs.k8s.io/dra-example-driver/cmd/x", ".")


@pytest.mark.parametrize(
    "change,expected",
    [
        ({"version": "latest"}, "install.image.goModule.version: expected a pinned module version"),
        ({"version": "main"}, "install.image.goModule.version: expected a pinned"),
        ({"module": "dra-example-driver"}, "install.image.goModule.module: expected a Go module"),
        ({"packages": []}, "install.image.goModule.packages: expected a non-empty list"),
        ({"packages": ["cmd/x"]}, "install.image.goModule.packages[0]: expected a main package"),
        (
            {"packages": ["example.com/other/cmd/x"]},
            "install.image.goModule.packages[0]: example.com/other/cmd/x is not a package of",
        ),
        (
            {"packages": ["./cmd/x", "./tools/x"]},
            "install.image.goModule.packages[1]: ./tools/x and ./cmd/x both build a binary 'x'",
        ),
        ({"binaryDir": "usr/bin"}, "install.image.goModule.binaryDir: expected an absolute dir"),
        ({"tag": "v1"}, "install.image.goModule.tag: unknown field"),
    ],
)
def test_bad_go_module_names_the_field(
    tmp_path: Path, change: dict[str, Any], expected: str
) -> None:
    assert problem(tmp_path, {"goModule": {**MODULE, **change}}).startswith(expected)


@pytest.mark.parametrize(
    "image,field",
    [
        ({"goModule": MODULE, "ref": "localhost/x:1"}, "install.image.ref: not used with goModule"),
        ({"goModule": MODULE, "builder": "fake-driver"}, "install.image.builder: not used with"),
    ],
)
def test_go_module_is_the_only_image_source(
    tmp_path: Path, image: dict[str, Any], field: str
) -> None:
    assert problem(tmp_path, image).startswith(field)


def test_module_chart_needs_the_go_module(tmp_path: Path) -> None:
    message = problem(tmp_path, {"ref": "localhost/x:1"})
    assert message == "install.chart: a 'goModule:<path>' chart needs image.goModule"
    assert problem(tmp_path, chart="goModule:/").startswith("install.chart: expected 'goModule:")


def test_example_profile_builds_the_kubelet_plugin_its_chart_runs() -> None:
    profile = load_profile(ROOT / "docs/examples/dra-example-driver/profile.yaml")
    install = profile.install
    assert isinstance(install, HelmInstall) and install.image is not None
    spec = install.image.go_module
    assert spec is not None and spec.module == "sigs.k8s.io/dra-example-driver"
    assert spec.packages == ("./cmd/dra-example-kubeletplugin",)
    assert install.chart == "goModule:deployments/helm/dra-example-driver"
    assert install.values["image"] == {
        "repository": "IMAGE_REPOSITORY_PLACEHOLDER",
        "tag": "IMAGE_TAG_PLACEHOLDER",
    }
    assert profile.readiness.daemonset_name == f"{install.release}-kubeletplugin"


def test_helm_is_given_the_chart_from_the_module_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conformance.images import gomodule
    from conformance.install import helm

    chart = tmp_path / "module/deployments/helm/dra-example-driver"
    chart.mkdir(parents=True)
    (chart / "Chart.yaml").write_text("name: dra-example-driver\nversion: 0.0.0-dev\n")
    monkeypatch.setattr(gomodule.gobuild, "module_dir", lambda m, v: tmp_path / "module")
    install = load(tmp_path)
    command = helm.helm_install_command("helm", install, "kubeconfig", None, "localhost/x:v1")
    assert command.argv[:5] == ("helm", "upgrade", "--install", "dra-example-driver", str(chart))
    assert helm.chart_identity(install) == {"chart": "dra-example-driver", "version": "0.0.0-dev"}
