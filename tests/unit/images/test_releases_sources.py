"""The release table against each release's own sources, read from the Go module cache
(`go mod download k8s.io/kubernetes@<version>`); a release not downloaded here is skipped."""

import re
import subprocess
import zipfile
from pathlib import Path

import pytest

from conformance.images.releases import (
    ALPHA,
    BETA_OFF,
    BETA_ON,
    GA,
    GA_LOCKED,
    RELEASES,
    TESTED_GATES,
    Release,
)


def _module_zip(version: str) -> Path | None:
    try:
        cache = subprocess.run(
            ["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    path = Path(cache) / "cache/download/k8s.io/kubernetes/@v" / f"{version}.zip"
    return path if path.is_file() else None


@pytest.fixture(params=sorted(RELEASES), ids=lambda m: m)
def source(request) -> tuple[Release, zipfile.ZipFile]:
    release = RELEASES[request.param]
    path = _module_zip(release.kubernetes)
    if path is None:
        pytest.skip(f"k8s.io/kubernetes@{release.kubernetes} is not in the Go module cache")
    with zipfile.ZipFile(path) as archive:
        yield release, archive


def _read(archive: zipfile.ZipFile, release: Release, name: str) -> str:
    return archive.read(f"k8s.io/kubernetes@{release.kubernetes}/{name}").decode()


def _stage(entries: str, minor: tuple[int, int]) -> str | None:
    spec = re.findall(
        r'Version: version\.MustParse\("(\d+)\.(\d+)"\), Default: (\w+), '
        r"PreRelease: featuregate\.(\w+)(, LockToDefault: true)?",
        entries,
    )
    current = None
    for major, mnr, default, pre, locked in spec:
        if (int(major), int(mnr)) <= minor:
            current = (pre, default == "true", bool(locked))
    if current is None:
        return None
    pre, default, locked = current
    if pre == "GA":
        return GA_LOCKED if locked else GA
    if pre == "Beta":
        return BETA_ON if default else BETA_OFF
    return ALPHA


def test_gate_stages(source):
    release, archive = source
    text = _read(archive, release, "pkg/features/kube_features.go")
    specs = text[text.index("defaultVersionedKubernetesFeatureGates") :]
    minor = tuple(int(p) for p in release.minor.split("."))
    found = {}
    for gate in TESTED_GATES:
        block = re.search(rf"\n\t{gate}: \{{\n(.*?)\n\t\}},", specs, re.S)
        stage = _stage(block.group(1), minor) if block else None
        if stage is not None:
            found[gate] = stage
    assert found == release.gates


def test_go_etcd_pause(source):
    release, archive = source
    go_mod = _read(archive, release, "go.mod")
    assert re.search(rf"^go {re.escape(release.go_directive)}$", go_mod, re.M)
    assert _read(archive, release, ".go-version").strip() == release.go_upstream
    constants = _read(archive, release, "cmd/kubeadm/app/constants/constants.go")
    assert f'DefaultEtcdVersion = "{release.etcd_kubeadm}"' in constants
    assert f'PauseVersion = "{release.pause}"' in constants
    # the etcd we build is the one kubeadm names, or a newer patch of the same minor
    want = release.etcd_kubeadm.split("-")[0].split(".")
    have = release.etcd_build.removeprefix("v").split(".")
    assert have[:2] == want[:2] and int(have[2]) >= int(want[2])


def test_served_versions(source):
    release, archive = source
    instance = _read(archive, release, "pkg/controlplane/instance.go")
    stable = instance[instance.index("stableAPIGroupVersionsEnabledByDefault = ") :]
    stable = stable[: stable.index("}")]
    default = tuple(
        v for v in ("v1", "v1beta2", "v1beta1", "v1alpha3") if f"resource{v}." in stable
    )
    assert default == release.default_versions
    storage = _read(archive, release, "pkg/registry/resource/rest/storage_resource.go")
    with_rule = []
    for version, body in re.findall(r"\) (v\w+)Storage\((.*?)\n\}\n", storage, re.S):
        if '"devicetaintrules"' in body:
            with_rule.append(version)
    assert sorted(with_rule) == sorted(release.device_taint_rule_versions)
