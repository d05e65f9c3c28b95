"""profile check's selector logic: a dump of slices read as kubectl writes it, compile
problems of the profile's and its DeviceClasses' selectors, and the device checks."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conformance.cel import CelEvaluator
from conformance.errors import ConformanceError
from conformance.install.profile_check import check_profile_offline, check_profile_slices
from conformance.install.profile_selectors import compile_problems, device_problems
from conformance.install.slices_file import read_slices_file
from conformance.model.devices import published_devices
from conformance.model.profile import SUITE_ROOT
from conformance.model.profile_parse import load_profile

D = "gpu.example.com"
SLICES = SUITE_ROOT / "tests/cel_differential/slices/kind-v1.37.2.yaml"


def _slice(node: str, devices: list[dict], driver: str = D) -> dict:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{driver}"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def _gpu(name: str, model: str) -> dict:
    return {
        "name": name,
        "attributes": {"model": {"string": model}, f"{D}/numa": {"int": 0}},
        "capacity": {"memory": {"value": "8Gi"}},
    }


def _profile(tmp_path: Path, selectors: dict[str, str], **extra: object) -> Path:
    document = {
        "apiVersion": "dra-conformance.io/v1alpha1",
        "kind": "DriverProfile",
        "driver": D,
        "deviceClasses": {"default": D},
        "selectors": {n: {"expression": e} for n, e in selectors.items()},
        "install": {"method": "preinstalled"},
        "verification": {"method": "env", "nameRegex": "^X_", "value": "pool/device"},
        **extra,
    }
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def test_a_stream_of_slices_and_classes_and_v1beta1_devices(tmp_path: Path) -> None:
    beta = _slice("n2", [])
    beta["apiVersion"] = "resource.k8s.io/v1beta1"
    beta["spec"]["devices"] = [{"name": "old", "basic": {"attributes": {"model": {"string": "a"}}}}]
    klass = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": D}}
    dump = tmp_path / "dump.yaml"
    dump.write_text(yaml.safe_dump_all([_slice("n1", [_gpu("g0", "a")]), beta, klass]))
    slices, classes = read_slices_file(dump)
    assert [s["spec"]["devices"] for s in slices] == [
        [_gpu("g0", "a")],
        [{"name": "old", "attributes": {"model": {"string": "a"}}}],
    ]
    assert list(classes) == [D]
    # the captured kubectl List: two drivers on two workers
    slices, classes = read_slices_file(SLICES)
    assert len(slices) == 5 and classes == {}


def test_a_dump_without_slices_is_bad_input(tmp_path: Path) -> None:
    dump = tmp_path / "dump.yaml"
    dump.write_text(yaml.safe_dump({"kind": "List", "items": [{"kind": "Pod"}]}))
    with pytest.raises(ConformanceError, match="holds no ResourceSlice"):
        read_slices_file(dump)


def test_compile_problems_cover_shipped_device_classes(tmp_path: Path, cel: CelEvaluator) -> None:
    profile = load_profile(_profile(tmp_path, {"a": f'device.attributes["{D}"].model == "a"'}))
    broken = {"spec": {"selectors": [{"cel": {"expression": "device.driver == 1 +"}}]}}
    [problem] = compile_problems(profile, cel, {"mine": broken})
    assert problem.field == "install.manifests: DeviceClass mine selector #0"
    assert problem.message.startswith("the API server would reject it (line 1, column 21): ")
    assert "Syntax error" in problem.message


def test_overlaps_name_five_devices_and_count_the_rest(tmp_path: Path, cel: CelEvaluator) -> None:
    profile = load_profile(
        _profile(
            tmp_path,
            {"a": f'device.attributes["{D}"].model == "x"', "b": "true", "c": "false"},
            matchAttributes=[f"{D}/numa", f"{D}/nosuch"],
            capacity=f"{D}/memory",
        )
    )
    devices = published_devices([_slice("n", [_gpu(f"g{i}", "x") for i in range(7)])], D)
    problems = [str(p) for p in device_problems(profile, devices, {D: {}})]
    assert problems == [
        "error: selectors.c: matches none of the 7 published devices "
        f"(with the selectors of DeviceClass {D})",
        "error: selectors.b: selectors a and b both match 7 device(s): "
        "n/g0, n/g1, n/g2, n/g3, n/g4 and 2 more; selectors must pick disjoint kinds of device",
        f"error: matchAttributes[1]: no published device has attribute {D}/nosuch",
    ]


def test_the_class_selectors_count_and_an_unknown_class_is_a_note(
    tmp_path: Path, cel: CelEvaluator
) -> None:
    profile = load_profile(_profile(tmp_path, {"a": "true"}))
    slices = [_slice("n", [_gpu("g0", "x"), _gpu("g1", "y")])]
    klass = {
        "spec": {"selectors": [{"cel": {"expression": f'device.attributes["{D}"].model == "y"'}}]}
    }
    assert check_profile_slices(profile, slices, {D: klass}, set()) == []
    [note] = check_profile_slices(profile, slices, {}, set())
    assert (note.severity, note.field) == ("note", "selectors.a.class")
    [error] = check_profile_slices(profile, [_slice("n", [], "other.example.com")], {}, set())
    assert error.field == "driver" and "hold no device of driver" in error.message


def test_offline_a_rejected_selector_is_not_also_matched(tmp_path: Path, cel: CelEvaluator) -> None:
    profile = load_profile(_profile(tmp_path, {"a": "device.driver ==="}))
    dump = tmp_path / "dump.yaml"
    dump.write_text(yaml.safe_dump(_slice("n", [_gpu("g0", "x")])))
    problems = check_profile_offline(profile, cel, str(dump))
    assert [p.field for p in problems] == ["selectors.a.expression", "selectors.a.class"]


def test_a_selector_that_errs_on_a_candidate_device_is_named(
    tmp_path: Path, cel: CelEvaluator
) -> None:
    """The allocator fails on the first erring selector before one that rejects the device:
    `cores` exists on g1 only, so the unguarded selector errs on g0; behind a class selector
    that rejects g0 it does not, and `in` guards it."""
    cores = f'device.attributes["{D}"].cores > 2'
    guarded = f'"cores" in device.attributes["{D}"] && {cores}'
    profile = load_profile(_profile(tmp_path, {"a": cores, "b": guarded}))
    with_cores = _gpu("g1", "y") | {"attributes": {"cores": {"int": 4}, "model": {"string": "y"}}}
    devices = published_devices([_slice("n", [_gpu("g0", "x"), with_cores])], D)
    problems = [str(p) for p in device_problems(profile, devices, {D: {}})]
    [erring] = [p for p in problems if "fails to evaluate" in p]
    assert erring.startswith(
        "error: selectors.a: fails to evaluate on n/g0: the scheduler fails the whole "
        "allocation on a node with such a device rather than skipping it: CEL runtime error: "
        "no such key: cores"
    ), erring
    narrow = {
        "spec": {"selectors": [{"cel": {"expression": f'device.attributes["{D}"].model == "y"'}}]}
    }
    problems = [str(p) for p in device_problems(profile, devices, {D: narrow})]
    assert not [p for p in problems if "fails to evaluate" in p], problems
