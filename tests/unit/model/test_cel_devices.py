"""Device kinds are computed from slices with the selectors evaluated as the scheduler does
(the real selector helper)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from helpers.dra_objects import device_class, resource_slice, slice_device

from conformance.cel import CelEvaluator
from conformance.cel.selection import kind_device_sets, matching_devices
from conformance.model.cel import (
    attribute_name_problem,
    attribute_ref,
    capacity_at_least,
    cel_string,
    resolve_name,
)
from conformance.model.devices import PublishedDevice, published_devices
from conformance.model.profile import SUITE_ROOT
from conformance.model.profile_parse import load_profile

D = "fake.dra-conformance.io"
FA = {"w1/fa80-0", "w2/fa24-0", "w2/fa24-1"}  # the fa-* devices of _slices()


def test_references() -> None:
    assert attribute_ref(f"{D}/model") == f'device.attributes["{D}"].model'
    assert capacity_at_least(f"{D}/memory", "24Gi") == (
        f'device.capacity["{D}"].memory.compareTo(quantity("24Gi")) >= 0'
    )
    assert cel_string('a"b\\c') == '"a\\"b\\\\c"'
    with pytest.raises(ValueError, match="not a qualified name"):
        attribute_ref("model")


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("model", None),  # unqualified: in the driver's domain
        (f"{D}/model", None),
        ("a" * 32, None),
        ("a" * 33, "not a C identifier of at most 32"),
        ("9lives", "not a C identifier"),
        (f"{D}/numa/node", "more than one '/'"),
        ("Bad_Domain/x", "not a DNS subdomain"),
        (("d" * 64) + "/x", "not a DNS subdomain of at most 63"),
        ("/x", "not a DNS subdomain"),
        (f"{D}/", "not a C identifier"),
    ],
)
def test_attribute_names_as_the_api_defines_them(name: str, problem: str | None) -> None:
    found = attribute_name_problem(name)
    assert found is None if problem is None else problem in (found or "")


def test_unqualified_names_resolve_in_the_driver_domain() -> None:
    assert resolve_name("model", D) == f"{D}/model"
    assert resolve_name("other.io/model", D) == "other.io/model"


@pytest.mark.usefixtures("cel")
@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (f'device.attributes["{D}"].model >= "fa-80"', {"w1/fa80-0", "w1/ff16-0"}),
        (f'device.capacity["{D}"].memory.compareTo(quantity("24Gi")) >= 0', {"w1/fa80-0"}),
        (f'device.driver == "x" || device.attributes["{D}"].model == "ff-16"', {"w1/ff16-0"}),
        (f'!(device.attributes["{D}"].type == "accelerator")', {"w1/ff16-0"}),
        (f'device.attributes["{D}"].model in ["fa-80", "fa-24"]', FA),
        (f'device.attributes["{D}"].model.startsWith("fa-")', FA),
        ('device.attributes["other.io"].model == "fa-80"', set()),  # no such domain: an error
        ("device.driver == device.driver", FA | {"w1/ff16-0"}),
        (f'device.attributes["{D}"].model == "fa-80" &&', set()),  # does not compile
    ],
)
def test_any_selector_is_evaluated_exactly(expression: str, expected: set[str]) -> None:
    assert matching_devices([expression], published_devices(_slices(), D), D) == expected


@pytest.mark.usefixtures("cel")
def test_equalities_match_like_cel() -> None:
    attrs = {"type": "accelerator", "numaNode": 0, "x": True}
    devices = published_devices(
        [
            resource_slice(
                "w1",
                D,
                "w1",
                [
                    slice_device("ok", D, **attrs),
                    slice_device("numa1", D, **{**attrs, "numaNode": 1}),
                    slice_device("x1", D, **{**attrs, "x": 1}),  # CEL: true != 1
                    slice_device("nonuma", D, type="accelerator", x=True),  # missing: no match
                ],
            )
        ],
        D,
    )
    selector = (
        f'device.driver == "{D}" && (device.attributes["{D}"]["type"] == "accelerator") '
        f'&& 0 == device.attributes["{D}"].numaNode && device.attributes["{D}"].x == true'
    )
    assert matching_devices([selector], devices, D) == {"w1/ok"}
    assert matching_devices([selector], devices, "other.io") == frozenset()


def test_string_literals_may_contain_operators(cel: CelEvaluator) -> None:
    assert matching_devices(
        ["device.driver == 'a && b'"], [PublishedDevice("p", "d", None)], "a && b"
    ) == {"p/d"}


def _slices() -> list[dict]:
    return [
        resource_slice("w1-old", D, "w1", [slice_device("stale", D, model="fa-80")], generation=1),
        resource_slice(
            "w1",
            D,
            "w1",
            [
                slice_device("fa80-0", D, type="accelerator", model="fa-80", memory="80Gi"),
                slice_device("ff16-0", D, type="fpga", model="ff-16"),
            ],
            generation=2,
        ),
        resource_slice(
            "w2",
            D,
            "w2",
            [
                slice_device("fa24-0", D, type="accelerator", model="fa-24"),
                slice_device("fa24-1", D, type="accelerator", model="fa-24"),
            ],
        ),
        resource_slice("other", "other.io", "w2", [slice_device("x", "other.io", model="fa-80")]),
    ]


def test_published_devices_keep_the_newest_generation_of_the_driver() -> None:
    devices = published_devices(_slices(), D)
    assert [d.id for d in devices] == ["w1/fa80-0", "w1/ff16-0", "w2/fa24-0", "w2/fa24-1"]
    assert devices[0].node == "w1"
    assert devices[0].capacity == {f"{D}/memory": "80Gi"}
    assert devices[0].attributes[f"{D}/model"] == "fa-80"


@pytest.mark.usefixtures("cel")
def test_version_attributes_never_equal_strings() -> None:
    s = resource_slice("w1", D, "w1", [{"name": "d", "attributes": {"fw": {"version": "1.0.0"}}}])
    devices = published_devices([s], D)
    assert devices[0].attributes == {f"{D}/fw": "1.0.0"}
    assert matching_devices([f'device.attributes["{D}"].fw == "1.0.0"'], devices, D) == frozenset()
    newer = f'device.attributes["{D}"].fw.isGreaterThan(semver("0.9.0"))'
    assert matching_devices([newer], devices, D) == {"w1/d"}


def test_kind_device_sets_of_the_fake_profile() -> None:
    profile = load_profile(SUITE_ROOT / "drivers/fake/profile.yaml")
    classes = {
        "fake.dra-conformance.io": device_class(
            "fake.dra-conformance.io", f'device.driver == "{D}"'
        ),
        "accelerator.fake.dra-conformance.io": device_class(
            "accelerator.fake.dra-conformance.io",
            f'device.driver == "{D}" && device.attributes["{D}"].type == "accelerator"',
        ),
        "fpga.fake.dra-conformance.io": device_class(
            "fpga.fake.dra-conformance.io", f'device.attributes["{D}"].type == "fpga"'
        ),
        "partition.fake.dra-conformance.io": device_class(
            "partition.fake.dra-conformance.io", f'device.attributes["{D}"].type in ["partition"]'
        ),
        # accelerator-ext class missing in the cluster
    }
    sets = kind_device_sets(profile, published_devices(_slices(), D), classes)
    assert sets["default"] == {"w1/fa80-0", "w1/ff16-0", "w2/fa24-0", "w2/fa24-1"}
    assert sets["large"] == {"w1/fa80-0"}
    assert sets["small"] == {"w2/fa24-0", "w2/fa24-1"}
    assert sets["fpga"] == {"w1/ff16-0"}
    assert sets["class:accelerator"] == {"w1/fa80-0", "w2/fa24-0", "w2/fa24-1"}
    assert sets["class:partition"] == frozenset()  # no device has type "partition"
    assert sets["extended-resource"] == frozenset()  # class does not exist: nothing
    # The first and second selector under their scenario-side names.
    assert sets["selector:kind-a"] == sets["large"]
    assert sets["selector:kind-b"] == sets["small"]


def test_kind_device_sets_take_one_helper_process(cel: CelEvaluator) -> None:
    profile = load_profile(SUITE_ROOT / "drivers/fake/profile.yaml")
    fresh = CelEvaluator(cel.binary)
    classes = {c: device_class(c, f'device.driver == "{D}"') for c in profile.all_class_names()}
    sets = kind_device_sets(profile, published_devices(_slices(), D), classes, evaluator=fresh)
    assert sets["large"] == {"w1/fa80-0"}
    assert fresh.spawns == 1


def test_selector_alias_without_a_selector_matches_nothing(tmp_path: Path) -> None:
    text = (SUITE_ROOT / "drivers/fake/profile.yaml").read_text()
    document = yaml.safe_load(text)
    document["selectors"] = {"only": document["selectors"]["large"]}
    document["install"] = {"method": "preinstalled"}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(document))
    profile = load_profile(tmp_path / "p.yaml")
    classes = {profile.default_class: device_class(profile.default_class)}
    sets = kind_device_sets(profile, published_devices(_slices(), D), classes)
    assert sets["selector:kind-b"] == frozenset()
    with pytest.raises(KeyError, match="selector number 2, but it defines 1"):
        profile.kind_class_and_expression("selector:kind-b")


def test_class_without_selectors_takes_every_device(tmp_path: Path) -> None:
    devices = published_devices(_slices(), D)
    assert matching_devices([], devices, D) == {d.id for d in devices}


def test_consumable_kind_is_the_shareable_devices_of_its_class() -> None:
    profile = load_profile(SUITE_ROOT / "drivers/fake/profile.yaml")
    shared = slice_device("fs32-0", D, type="shared", model="fs-32", memory="32Gi")
    slices = [
        *_slices(),
        resource_slice("w3", D, "w3", [{**shared, "allowMultipleAllocations": True}, shared]),
    ]
    slices[-1]["spec"]["devices"][1] = {**shared, "name": "fs32-1"}  # not shareable
    devices = published_devices(slices, D)
    assert [d.id for d in devices if d.multiple_allocations] == ["w3/fs32-0"]
    expression = f'device.driver == "{D}" && device.attributes["{D}"].type == "shared"'
    classes = {"shared.fake.dra-conformance.io": device_class("x", expression)}
    assert kind_device_sets(profile, devices, classes)["consumable-capacity"] == {"w3/fs32-0"}
    assert kind_device_sets(profile, devices, {})["consumable-capacity"] == frozenset()
    without = replace(profile, consumable_capacity=None)
    assert kind_device_sets(without, devices, classes)["consumable-capacity"] == frozenset()


def test_binding_kind_is_the_devices_of_its_class_with_binding_conditions() -> None:
    profile = load_profile(SUITE_ROOT / "drivers/fake/profile.yaml")
    fabric = slice_device("fx-0", D, type="fabric", model="fx-1", memory="0")
    waiting = {**fabric, "bindingConditions": ["Attached"], "bindingFailureConditions": ["F"]}
    slices = [*_slices(), resource_slice("w3", D, "w3", [waiting, {**fabric, "name": "fx-1"}])]
    devices = published_devices(slices, D)
    (device,) = [d for d in devices if d.binding_conditions]
    assert (device.id, device.binding_failure_conditions) == ("w3/fx-0", ("F",))
    assert type(device).from_dict(device.to_dict()) == device
    expression = f'device.driver == "{D}" && device.attributes["{D}"].type == "fabric"'
    classes = {"fabric.fake.dra-conformance.io": device_class("x", expression)}
    assert kind_device_sets(profile, devices, classes)["binding-conditions"] == {"w3/fx-0"}
    assert kind_device_sets(profile, devices, {})["binding-conditions"] == frozenset()
    without = replace(profile, binding_conditions=None)
    assert kind_device_sets(without, devices, classes)["binding-conditions"] == frozenset()
