"""`cluster up` and `driver install` on a kind cluster leave its nodes with the workload image,
so a later `run --cluster existing` on it passes the preflight. The cluster, the driver and
the image loads are stand-ins here (recording what was asked); tests/e2e covers them for real."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest

from conformance.cli import app
from conformance.cluster import kind, kind_images
from conformance.install import installer


def test_cluster_up_loads_the_workload_image_and_prints_the_kubeconfig_last(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cluster = types.SimpleNamespace(name="x", kubeconfig=tmp_path / "kubeconfig")
    loaded: list[Any] = []
    monkeypatch.setattr(kind, "up", lambda **kwargs: cluster)
    monkeypatch.setattr(kind_images, "load_workload_image", lambda c, progress: loaded.append(c))
    assert app.main(["cluster", "up", "--name", "x"]) == 0
    assert loaded == [cluster]
    assert capsys.readouterr().out.splitlines()[-1] == str(tmp_path / "kubeconfig")


@pytest.mark.parametrize("on_kind", [True, False])
def test_driver_install_loads_the_workload_image_into_a_kind_cluster_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, on_kind: bool
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("")
    loaded: list[str | None] = []
    monkeypatch.setattr(kind, "kubeconfig_path", lambda name: kubeconfig)
    monkeypatch.setattr(installer, "ensure_reachable", lambda *a: None)
    monkeypatch.setattr(installer, "install", lambda *a: None)
    monkeypatch.setattr(installer, "wait_ready", lambda *a, **k: "ready")
    monkeypatch.setattr(kind_images, "workload_image", lambda name, progress: loaded.append(name))
    target = ["--name", "x"] if on_kind else ["--kubeconfig", str(kubeconfig)]
    argv = ["driver", "install", "--profile", "drivers/fake/profile.yaml", *target]
    assert app.main(argv) == 0
    assert loaded == (["x"] if on_kind else [])
