"""profile-cel.yaml: the fake driver's profile with selectors beyond `==` picks exactly the
devices profile.yaml picks, on the slices the fake driver publishes (the real selector
helper evaluates both)."""

from __future__ import annotations

import pytest
import yaml
from fakedriver.catalog import Catalog
from fakedriver.controls import NodeControls
from fakedriver.slices import render_pool

from conformance.cel import CelEvaluator
from conformance.cel.selection import kind_device_sets
from conformance.model.devices import published_devices
from conformance.model.profile_parse import load_profile
from unit.fakedriver.conftest import DRIVER, FAKE_DIR, NODE, NODE2

EQ, CEL = FAKE_DIR / "profile.yaml", FAKE_DIR / "profile-cel.yaml"


def _expressions(document: dict) -> list[str]:
    out = [s["expression"] for s in document["selectors"].values()]
    return out + [c["expression"] for c in document["partitionableDevices"].values()]


def _without_expressions(document: dict) -> dict:
    for entry in [*document["selectors"].values(), *document["partitionableDevices"].values()]:
        entry.pop("expression")
    return document


def test_it_differs_from_the_eq_profile_only_in_expressions_and_uses_more_than_eq() -> None:
    eq, cel = (yaml.safe_load(p.read_text()) for p in (EQ, CEL))
    rich = _expressions(cel)
    assert _without_expressions(cel) == _without_expressions(eq)
    for needed in ("startsWith(", 'quantity("', 'semver("', "isGreaterThan("):
        assert any(needed in e for e in rich), needed
    assert not any("==" in e for e in rich)


def test_every_expression_compiles_as_the_api_server_compiles_it(cel: CelEvaluator) -> None:
    expressions = _expressions(yaml.safe_load(CEL.read_text()))
    assert cel.compile(expressions) == [None] * len(expressions)


@pytest.mark.usefixtures("cel")
def test_it_selects_the_same_devices_as_the_eq_profile() -> None:
    catalog = Catalog.load(FAKE_DIR / "catalog.yaml")
    slices = [
        {"spec": s.spec}
        for node in (NODE, NODE2, "kind-worker3")
        for s in render_pool(DRIVER, node, catalog.for_node(node), NodeControls()).slices
    ]
    devices = published_devices(slices, DRIVER)
    classes = {
        c["metadata"]["name"]: c
        for c in yaml.safe_load_all((FAKE_DIR / "deploy/deviceclasses.yaml").read_text())
    }
    eq = kind_device_sets(load_profile(EQ), devices, classes)
    rich = kind_device_sets(load_profile(CEL), devices, classes)
    assert rich == eq
    for kind in ("large", "small", "fpga", "partitionable:whole", "partitionable:partition"):
        assert eq[kind], f"kind {kind} selects no device of the fake driver"
    assert eq["large"] == {f"{NODE}/fa80-0", f"{NODE}/fa80-1"}
