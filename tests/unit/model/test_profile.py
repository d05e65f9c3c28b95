"""Profile loading: the shipped profiles load, and every bad profile gets its exact message."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.model.profile import (
    DEFAULT_NODE_SELECTOR,
    SUITE_ROOT,
    HelmInstall,
    ManifestsInstall,
    PreinstalledInstall,
    ProfileError,
)
from conformance.model.profile_parse import load_profile
from conformance.model.schema import parse_duration

GOOD: dict[str, Any] = {
    "apiVersion": "dra-conformance.io/v1alpha1",
    "kind": "DriverProfile",
    "driver": "gpu.example.com",
    "deviceClasses": {"default": "gpu.example.com"},
    "selectors": {
        "kind-a": {"expression": 'device.attributes["gpu.example.com"].model == "A"'},
        "kind-b": {
            "expression": 'device.attributes["gpu.example.com"].model == "B"',
            "class": "b.gpu.example.com",
        },
    },
    "install": {"method": "preinstalled"},
    "verification": {"method": "env", "nameRegex": "^GPU_", "value": "device"},
}


def write(tmp_path: Path, data: Any, name: str = "x.yaml") -> str:
    (tmp_path / name).write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return name


def mutate(path: str, value: Any, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """A copy of GOOD with `a.b.c` set to value (value DELETE removes it)."""
    data = copy.deepcopy(base or GOOD)
    *parents, last = path.split(".")
    target = data
    for part in parents:
        target = target.setdefault(part, {})
    if value is DELETE:
        del target[last]
    else:
        target[last] = value
    return data


DELETE = object()


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # so messages show the relative name "x.yaml"


def test_good_profile_has_defaults(tmp_path: Path) -> None:
    profile = load_profile(write(tmp_path, GOOD))
    assert profile.driver == "gpu.example.com"
    assert profile.node_selector == DEFAULT_NODE_SELECTOR
    assert profile.selectors["kind-a"].device_class == "gpu.example.com"  # default class
    assert profile.selectors["kind-b"].device_class == "b.gpu.example.com"
    assert isinstance(profile.install, PreinstalledInstall)
    assert profile.faults.kinds == ("taint",)  # DeviceTaintRules: every driver
    assert profile.readiness.slices_per_node == 1
    assert profile.timeouts.get("podRunning") == 120.0
    assert profile.timeouts.get("podRunning", scale=2.5) == 300.0
    assert profile.device_kinds == (
        "default",
        "kind-a",
        "kind-b",
        "selector:kind-a",
        "selector:kind-b",
        "partitionable:whole",
        "partitionable:partition",
        "consumable-capacity",
        "binding-conditions",
    )
    assert profile.kind_class_and_expression("selector:kind-b") == (
        profile.selectors["kind-b"].device_class,
        profile.selectors["kind-b"].expression,
    )
    assert "health-reporting" not in profile.capabilities


def test_profile_is_frozen(tmp_path: Path) -> None:
    profile = load_profile(write(tmp_path, GOOD))
    with pytest.raises(AttributeError):
        profile.driver = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        profile.selectors["x"] = profile.selectors["kind-a"]  # type: ignore[index]


def test_unqualified_attribute_names_resolve_in_the_driver_domain(tmp_path: Path) -> None:
    # A slice may publish `model` for `gpu.example.com/model`; the profile may name either.
    data = mutate("matchAttributes", ["numaNode", "resource.kubernetes.io/pcieRoot"])
    data["capacity"] = "memory"
    data["verification"] = {"method": "env", "nameRegex": "^GPU_", "value": "attribute:uuid"}
    profile = load_profile(write(tmp_path, data))
    assert profile.match_attributes == (
        "gpu.example.com/numaNode",
        "resource.kubernetes.io/pcieRoot",
    )
    assert profile.capacity == "gpu.example.com/memory"
    assert profile.verification.attribute == "gpu.example.com/uuid"


def test_fake_driver_profile_loads() -> None:
    profile = load_profile(SUITE_ROOT / "drivers/fake/profile.yaml")
    assert profile.driver == "fake.dra-conformance.io"
    assert profile.default_class == "fake.dra-conformance.io"
    assert set(profile.selectors) == {"large", "small", "fpga"}
    assert profile.selectors["large"].device_class == "accelerator.fake.dra-conformance.io"
    assert isinstance(profile.install, ManifestsInstall)
    assert profile.install.paths == ((SUITE_ROOT / "drivers/fake/deploy").resolve(),)
    assert profile.install.image is not None and profile.install.image.builder == "fake-driver"
    assert profile.readiness.daemonset_name == "fake-dra-kubelet-plugin"
    assert profile.readiness.daemonset_namespace == "dra-fake-driver"
    assert profile.faults.kinds == (
        "withdraw",
        "unhealthy",
        "recover",
        "fail-prepare",
        "delay-prepare",
        "fail-binding",
        "taint",
        "driver-taint",
    )
    assert profile.extended_resource is not None
    assert profile.extended_resource.name == "fake.dra-conformance.io/accelerator"
    assert profile.extended_resource.device_class == "accelerator-ext.fake.dra-conformance.io"
    assert profile.verification.value == "pool/device"
    from conformance.model.capabilities import CAPABILITIES

    assert profile.capabilities == CAPABILITIES
    assert profile.gating_fields == {"capacity", "extendedResource"}  # ALLOC-002, EXT apply
    assert "extended-resource" in profile.device_kinds
    assert profile.kind_class_and_expression("class:partition") == (
        "partition.fake.dra-conformance.io",
        None,
    )


def test_gpu_example_profile_loads() -> None:
    profile = load_profile(SUITE_ROOT / "docs/examples/profile-example-gpu.yaml")
    assert profile.verification.method == "env"
    assert profile.verification.attribute == "gpu.example.com/uuid"
    assert profile.verification.separator == ","
    assert isinstance(profile.install, PreinstalledInstall)
    assert profile.faults.kinds == ("taint",)  # DeviceTaintRules: every driver
    assert profile.timeouts.get("podRunning") == 300.0
    assert "shared-claims" in profile.capabilities and profile.gating_fields == {
        "capacity",
        "extendedResource",
    }


def test_manifests_resolve_relative_to_the_profile(tmp_path: Path) -> None:
    (tmp_path / "deploy").mkdir()
    data = mutate(
        "install",
        {
            "method": "manifests",
            "manifests": ["deploy"],
            "image": {"ref": "localhost/x:1", "load": False},
        },
    )
    profile = load_profile(write(tmp_path, data))
    assert isinstance(profile.install, ManifestsInstall)
    assert profile.install.paths == ((tmp_path / "deploy").resolve(),)
    assert profile.install.image is not None and profile.install.image.load is False


def test_helm_install(tmp_path: Path) -> None:
    (tmp_path / "chart").mkdir()
    data = mutate(
        "install",
        {
            "method": "helm",
            "chart": "chart",
            "release": "gpu",
            "namespace": "gpu-system",
            "values": {"a": {"b": 1}},
        },
    )
    profile = load_profile(write(tmp_path, data))
    assert isinstance(profile.install, HelmInstall)
    assert profile.install.chart == str((tmp_path / "chart").resolve())
    assert profile.install.values["a"] == {"b": 1}


@pytest.mark.parametrize(
    "text,seconds",
    [
        (90, 90.0),
        (1.5, 1.5),
        ("90s", 90.0),
        ("5m", 300.0),
        ("1h30m", 5400.0),
        ("1m30s", 90.0),
        ("soon", None),
        ("", None),
        (True, None),
    ],
)
def test_parse_duration(text: Any, seconds: float | None) -> None:
    assert parse_duration(text) == seconds


BAD: list[tuple[str, Any, str]] = [
    (
        "selector expression not a string",
        mutate("selectors.kind-a.expression", 12),
        "selectors.kind-a.expression: expected a non-empty CEL string, got 12",
    ),
    (
        "selector expression empty",
        mutate("selectors.kind-a.expression", "  "),
        'selectors.kind-a.expression: expected a non-empty CEL string, got "  "',
    ),
    (
        "selector without expression",
        mutate("selectors.kind-a", {"class": "gpu.example.com"}),
        "selectors.kind-a.expression: required field is missing (expected a non-empty CEL string)",
    ),
    (
        "selector reserved name",
        mutate("selectors.default", {"expression": "true"}),
        "selectors.default: 'default' is reserved; choose another selector name",
    ),
    (
        "selector unknown key",
        mutate("selectors.kind-a.clas", "x"),
        "selectors.kind-a.clas: unknown field; did you mean 'class'?",
    ),
    (
        "wrong apiVersion",
        mutate("apiVersion", "v1"),
        "apiVersion: expected 'dra-conformance.io/v1alpha1', got \"v1\"",
    ),
    ("wrong kind", mutate("kind", "Profile"), "kind: expected 'DriverProfile', got \"Profile\""),
    (
        "driver not a DNS subdomain",
        mutate("driver", "GPU.example.com"),
        "driver: expected a driver name (a DNS subdomain of at most 63 characters), "
        'got "GPU.example.com"',
    ),
    (
        "no default class",
        mutate("deviceClasses", {"other": "x.example.com"}),
        "deviceClasses.default: required field is missing "
        "(expected a DeviceClass name (a DNS subdomain))",
    ),
    (
        "unknown capability",
        mutate("capabilities", ["health"]),
        "capabilities[0]: unknown capability 'health'; did you mean 'health-reporting'?",
    ),
    (
        "capability listed twice",
        mutate("capabilities", ["admin-access", "admin-access"]),
        "capabilities[1]: 'admin-access' is listed twice",
    ),
    (
        "extended-resource capability without the resource",
        mutate("capabilities", ["extended-resource"]),
        "extendedResource: required when capabilities lists extended-resource "
        "(expected {name: <resource name>, class: <device class>})",
    ),
    (
        "extended resource without capability",
        mutate("extendedResource", {"name": "example.com/gpu", "class": "gpu.example.com"}),
        "capabilities: must list extended-resource when extendedResource is set "
        "(or remove extendedResource)",
    ),
    (
        "extended resource bad name",
        mutate(
            "capabilities",
            ["extended-resource"],
            mutate("extendedResource", {"name": "gpu", "class": "gpu.example.com"}),
        ),
        "extendedResource.name: expected an extended resource name such as example.com/gpu, "
        'got "gpu"',
    ),
    (
        "verification value",
        mutate("verification.value", "uuid"),
        "verification.value: expected pool/device, device, or attribute:<domain>/<name> "
        '(or attribute:<name>), got "uuid"',
    ),
    (
        "verification attribute not qualified",
        mutate("verification.value", "attribute:gpu.example.com/a/uuid"),
        "verification.value: expected pool/device, device, or attribute:<domain>/<name> "
        '(or attribute:<name>), got "attribute:gpu.example.com/a/uuid"',
    ),
    (
        "verification key of another method",
        mutate("verification.path", "/dev/x"),
        "verification.path: not used by method env; remove it",
    ),
    (
        "verification bad regex",
        mutate("verification.nameRegex", "^GPU_("),
        "verification.nameRegex: not a valid regular expression: "
        "missing ), unterminated subpattern at position 5",
    ),
    (
        "verification command not argv",
        mutate(
            "verification", {"method": "command", "command": "nvidia-smi -L", "value": "device"}
        ),
        "verification.command: expected a non-empty list of strings (argv), e.g. [nvidia-smi, -L], "
        'got "nvidia-smi -L"',
    ),
    (
        "verification file relative path",
        mutate("verification", {"method": "file", "path": "dev/x", "value": "device"}),
        'verification.path: expected an absolute path inside the container, got "dev/x"',
    ),
    (
        "verification method typo",
        mutate("verification.method", "environment"),
        'verification.method: expected one of env, file, command, got "environment"',
    ),
    (
        "install method typo",
        mutate("install.method", "helm3"),
        'install.method: expected one of manifests, helm, preinstalled, got "helm3" '
        "(did you mean 'helm'?)",
    ),
    (
        "install key of another method",
        mutate("install", {"method": "preinstalled", "chart": "x"}),
        "install.chart: not used by method preinstalled; remove it",
    ),
    (
        "helm without release",
        mutate("install", {"method": "helm", "chart": "oci://x/y", "namespace": "n"}),
        "install.release: required field is missing (expected a release name)",
    ),
    (
        "unknown image builder",
        mutate(
            "install", {"method": "manifests", "manifests": ["."], "image": {"builder": "fake"}}
        ),
        'install.image.builder: expected one of fake-driver, k8s-test-driver, got "fake" '
        "(did you mean 'fake-driver'?)",
    ),
    (
        "match attribute not qualified",
        mutate("matchAttributes", ["gpu.example.com/numa/node"]),
        "matchAttributes[0]: expected an attribute name <domain>/<identifier> or <identifier>, "
        'e.g. gpu.example.com/model, got "gpu.example.com/numa/node"',
    ),
    (
        "capacity not qualified",
        mutate("capacity", 80),
        "capacity: expected an attribute name <domain>/<identifier> or <identifier>, "
        "e.g. gpu.example.com/model, got 80",
    ),
    (
        "timeout not a duration",
        mutate("timeouts", {"podRunning": "soon"}),
        "timeouts.podRunning: expected a positive duration in seconds (90) or with units "
        '(90s, 5m, 1m30s), got "soon"',
    ),
    (
        "unknown timeout",
        mutate("timeouts", {"podrunning": 10}),
        "timeouts.podrunning: unknown field; did you mean 'podRunning'?",
    ),
    (
        "faults method typo",
        mutate("faults", {"withdraw": {"method": "comand", "command": ["x"]}}),
        "faults.withdraw.method: expected one of device-taint-rule, command, exec, python, "
        "got \"comand\" (did you mean 'command'?)",
    ),
    (
        "readiness slices negative",
        mutate("readiness", {"slicesPerNode": -1}),
        "readiness.slicesPerNode: expected an integer >= 0, got -1",
    ),
    (
        "nodes selector empty",
        mutate("nodes", {"selector": ""}),
        "nodes.selector: expected a label selector such as 'pool=gpu', got \"\"",
    ),
    (
        "section of wrong type",
        mutate("readiness", ["daemonSet"]),
        "readiness: expected a mapping, got a list",
    ),
    (
        "update without an image",
        mutate("readiness.daemonSet", {"namespace": "n", "name": "d", "update": {}}),
        "readiness.daemonSet.update.image: required field is missing (expected an image reference)",
    ),
    (
        "update image with a space",
        mutate("readiness.daemonSet", {"namespace": "n", "name": "d", "update": {"image": "a b"}}),
        'readiness.daemonSet.update.image: expected an image reference, got "a b"',
    ),
    (
        "update container not a DNS label",
        mutate(
            "readiness.daemonSet",
            {"namespace": "n", "name": "d", "update": {"image": "a:1", "container": "A_B"}},
        ),
        'readiness.daemonSet.update.container: expected a container name, got "A_B"',
    ),
]


def test_daemonset_update_image(tmp_path: Path) -> None:
    update = {"image": "registry.example.com:5000/acme/plugin:v2", "container": "plugin"}
    data = mutate("readiness.daemonSet", {"namespace": "n", "name": "d", "update": update})
    readiness = load_profile(write(tmp_path, data)).readiness
    assert (readiness.update_image, readiness.update_container) == (
        "registry.example.com:5000/acme/plugin:v2",
        "plugin",
    )
    assert load_profile(write(tmp_path, GOOD)).readiness.update_image is None


@pytest.mark.parametrize(
    "data,expected", [(d, e) for _, d, e in BAD], ids=[name for name, _, _ in BAD]
)
def test_bad_profile_message(tmp_path: Path, data: Any, expected: str) -> None:
    with pytest.raises(ProfileError) as err:
        load_profile(write(tmp_path, data))
    assert str(err.value) == f"profile x.yaml: {expected}"


def test_missing_manifest_names_both_candidates(tmp_path: Path) -> None:
    data = mutate("install", {"method": "manifests", "manifests": ["nope"]})
    with pytest.raises(ProfileError) as err:
        load_profile(write(tmp_path, data))
    tried = f"{tmp_path.resolve() / 'nope'} and {SUITE_ROOT / 'nope'}"
    assert str(err.value) == (
        f"profile x.yaml: install.manifests[0]: no such file or directory (tried {tried})"
    )


def test_snake_case_key_suggests_camel_case(tmp_path: Path) -> None:
    data = mutate("verification", {"method": "env", "name_regex": "^X", "value": "device"})
    with pytest.raises(ProfileError) as err:
        load_profile(write(tmp_path, data))
    assert err.value.problems == [
        "verification.name_regex: unknown field; did you mean 'nameRegex'?",
        "verification.nameRegex: required field is missing "
        "(expected a regular expression such as '^DRA_ASSIGNED_')",
    ]
    assert str(err.value) == "profile x.yaml: 2 problems\n  " + "\n  ".join(err.value.problems)


def test_unknown_top_level_key_and_missing_required(tmp_path: Path) -> None:
    data = mutate("driver", DELETE)
    data["drver"] = "gpu.example.com"
    with pytest.raises(ProfileError) as err:
        load_profile(write(tmp_path, data))
    assert err.value.problems == [
        "drver: unknown field; did you mean 'driver'?",
        "driver: required field is missing "
        "(expected a driver name (a DNS subdomain of at most 63 characters))",
    ]


def test_unknown_key_without_close_match_lists_the_fields(tmp_path: Path) -> None:
    data = mutate("readiness", {"zzz": 1})
    with pytest.raises(ProfileError) as err:
        load_profile(write(tmp_path, data))
    assert str(err.value) == (
        "profile x.yaml: readiness.zzz: unknown field; expected one of: daemonSet, slicesPerNode"
    )


def test_duplicate_key_is_an_error(tmp_path: Path) -> None:
    text = yaml.safe_dump(GOOD, sort_keys=False) + "driver: other.example.com\n"
    with pytest.raises(ProfileError) as err:
        load_profile(write(tmp_path, text))
    line = text.count("\n")
    assert str(err.value) == (
        "profile x.yaml: not valid YAML: duplicate key 'driver' (first defined on line 3) "
        f"(line {line}, column 1)"
    )


def test_not_a_mapping(tmp_path: Path) -> None:
    with pytest.raises(ProfileError) as err:
        load_profile(write(tmp_path, "- a\n- b\n"))
    assert str(err.value) == "profile x.yaml: expected a mapping at the top level, got a list"


def test_unreadable_file() -> None:
    with pytest.raises(ProfileError) as err:
        load_profile("nope.yaml")
    assert str(err.value) == "profile nope.yaml: cannot read the file: No such file or directory"


def test_unknown_device_kind_lists_the_known_ones(tmp_path: Path) -> None:
    profile = load_profile(write(tmp_path, GOOD))
    with pytest.raises(
        KeyError, match="unknown device kind 'huge'; the profile names: default, kind-a, kind-b"
    ):
        profile.kind_class_and_expression("huge")


def test_consumable_capacity_section(tmp_path: Path) -> None:
    data = mutate("consumableCapacity", {"class": "shared.gpu.example.com", "capacity": "memory"})
    profile = load_profile(write(tmp_path, data))
    section = profile.consumable_capacity
    assert section is not None and section.device_class == "shared.gpu.example.com"
    assert section.capacity == "gpu.example.com/memory"  # in the driver's domain
    assert "shared.gpu.example.com" in profile.all_class_names()
    assert profile.kind_class_and_expression("consumable-capacity") == (
        "shared.gpu.example.com",
        None,
    )
    assert load_profile(write(tmp_path, GOOD, "good.yaml")).consumable_capacity is None


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"capacity": "memory"}, "consumableCapacity.class: required field is missing"),
        ({"class": "Not_A_Class"}, "consumableCapacity.class: expected a DeviceClass name"),
        ({"class": "c.io", "capacity": "a/b/c"}, "consumableCapacity.capacity: expected"),
        ({"class": "c.io", "extra": 1}, "consumableCapacity"),
    ],
)
def test_bad_consumable_capacity_section(tmp_path: Path, section: Any, message: str) -> None:
    with pytest.raises(ProfileError, match=re.escape(message)):
        load_profile(write(tmp_path, mutate("consumableCapacity", section)))


def test_cdi_section(tmp_path: Path) -> None:
    assert load_profile(write(tmp_path, GOOD, "good.yaml")).cdi.spec_dirs == (
        "/etc/cdi",
        "/var/run/cdi",
    )
    data = mutate("cdi", {"specDirs": ["/opt/cdi/", "/etc/cdi"], "kubeletRootDir": "/data/k"})
    cdi = load_profile(write(tmp_path, data)).cdi
    assert cdi.spec_dirs == ("/etc/cdi", "/var/run/cdi", "/opt/cdi")  # the defaults always
    assert cdi.kubelet_root_dir == "/data/k"


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"specDirs": ["cdi"]}, "cdi.specDirs[0]: expected an absolute directory path"),
        ({"specDirs": "/opt/cdi"}, "cdi.specDirs: expected a list of an absolute directory"),
        ({"kubeletRootDir": "/"}, "cdi.kubeletRootDir: expected an absolute directory path"),
        ({"specDir": ["/x"]}, "cdi.specDir: unknown field; did you mean 'specDirs'?"),
    ],
)
def test_bad_cdi_section(tmp_path: Path, section: Any, message: str) -> None:
    with pytest.raises(ProfileError, match=re.escape(message)):
        load_profile(write(tmp_path, mutate("cdi", section)))


def test_binding_conditions_section(tmp_path: Path) -> None:
    data = mutate("bindingConditions", {"class": "fabric.gpu.example.com"})
    profile = load_profile(write(tmp_path, data))
    assert profile.binding_conditions is not None
    assert profile.binding_conditions.device_class == "fabric.gpu.example.com"
    assert "fabric.gpu.example.com" in profile.all_class_names()
    assert profile.kind_class_and_expression("binding-conditions") == (
        "fabric.gpu.example.com",
        None,
    )
    assert load_profile(write(tmp_path, GOOD, "good.yaml")).binding_conditions is None


def test_the_binding_conditions_capability_needs_its_section(tmp_path: Path) -> None:
    data = mutate("capabilities", ["binding-conditions"])
    with pytest.raises(ProfileError, match=re.escape("bindingConditions: required when")):
        load_profile(write(tmp_path, data))
    with pytest.raises(ProfileError, match=re.escape("bindingConditions.class: expected")):
        load_profile(write(tmp_path, mutate("bindingConditions", {"class": "Not_A_Class"})))
