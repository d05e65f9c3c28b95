"""A driver without an optional feature can run the suite: the bundled fake driver's profile
minus one optional block at a time collects the whole scenario tree, and the requirements gated
on what it dropped come out not applicable (a capability the driver lacks) or not run (a fault
it cannot inject), each with its reason. Run with pytester, the cluster stubbed (no fixture of
those tests is set up)."""

from __future__ import annotations

import copy
import dataclasses
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.model.frozen import FrozenMap
from conformance.model.requirements import load_catalog
from conformance.suite_root import SUITE_ROOT
from unit.plugin.test_plugin import stub_cluster

pytest_plugins = ["pytester"]

SCENARIOS = SUITE_ROOT / "scenarios"
FAKE_PROFILE = SUITE_ROOT / "drivers" / "fake" / "profile.yaml"
CATALOG = load_catalog(SCENARIOS / "requirements.yaml")


def _without(*keys: str, capability: str | None = None) -> Callable[[dict[str, Any]], None]:
    def drop(profile: dict[str, Any]) -> None:
        for key in keys:
            del profile[key]
        if capability:
            profile["capabilities"].remove(capability)

    return drop


def _two_selectors(profile: dict[str, Any]) -> None:
    profile["selectors"] = dict(list(profile["selectors"].items())[:2])


def _no_partitionable(profile: dict[str, Any]) -> None:
    _without("partitionableDevices", capability="partitionable-devices")(profile)
    del profile["deviceClasses"]["partition"]  # a driver without them has no such class


def _gated_on(capability: str) -> list[str]:
    return [r.id for r in CATALOG.requirements if capability in r.capabilities]


def _injecting_more_than_taints() -> list[str]:
    # Binding-condition requirements lease a kind of device the stubbed cluster does not
    # publish: that the driver lacks them decides first (not applicable), before the faults.
    return [
        r.id
        for r in CATALOG.requirements
        if set(r.faults) - {"taint"} and "binding-conditions" not in r.capabilities
    ]


# name -> (how the profile is derived, requirement ids, how each of them must end)
ABSENCES: dict[str, tuple[Callable[[dict[str, Any]], None], list[str], str]] = {
    "no extended resource": (
        _without("extendedResource", capability="extended-resource"),
        _gated_on("extended-resource"),
        "not applicable: the driver profile does not declare capability extended-resource",
    ),
    "no partitionable devices": (
        _no_partitionable,
        _gated_on("partitionable-devices"),
        "not applicable: the driver profile does not declare capability partitionable-devices",
    ),
    "no consumable capacity": (
        _without("consumableCapacity", capability="consumable-capacity"),
        _gated_on("consumable-capacity"),
        "not applicable: the driver profile does not declare capability consumable-capacity",
    ),
    "no binding conditions": (
        _without("bindingConditions", capability="binding-conditions"),
        _gated_on("binding-conditions"),
        "not applicable: the driver profile does not declare capability binding-conditions",
    ),
    "no opaque config": (
        _without("opaqueConfig", capability="opaque-config"),
        _gated_on("opaque-config"),
        "not applicable: the driver profile does not declare capability opaque-config",
    ),
    # Behaviours the API lets a driver decline: a MUST for those that declare them, not
    # applicable (never not run) for the others.
    "no shared claims": (
        _without(capability="shared-claims"),
        _gated_on("shared-claims"),
        "not applicable: the driver profile does not declare capability shared-claims",
    ),
    "no capacity": (
        _without("capacity"),
        [r.id for r in CATALOG.requirements if "capacity" in r.profile_fields],
        "not applicable: the profile declares no capacity",
    ),
    # Injecting a fault is the harness's job, never a driver feature (docs/profile.md, faults).
    "no faults": (_without("faults"), _injecting_more_than_taints(), "not run: "),
    "no selectors beyond two": (_two_selectors, [], ""),
}


def _profile(path: Path, derive: Callable[[dict[str, Any]], None]) -> Path:
    profile = copy.deepcopy(yaml.safe_load(FAKE_PROFILE.read_text()))
    profile["install"] = {"method": "preinstalled"}  # the stubbed cluster installs nothing
    derive(profile)
    path.write_text(yaml.safe_dump(profile))
    return path


@pytest.fixture
def here(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.delenv("DRA_REQUIREMENTS_FILE", raising=False)
    monkeypatch.setenv("DRA_CONFORMANCE_CACHE", str(pytester.path / "cache"))
    return pytester


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("-p", "conformance.plugin", "-p", "no:cacheprovider", *args)


def _collected(result: pytest.RunResult) -> int:
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    return sum(1 for line in result.stdout.lines if "::" in line)


@pytest.mark.parametrize("absence", list(ABSENCES))
def test_a_profile_without_an_optional_block_collects_the_whole_suite(
    here: pytest.Pytester, absence: str
) -> None:
    full = _profile(here.path / "full.yaml", lambda p: None)
    derived = _profile(here.path / "derived.yaml", ABSENCES[absence][0])
    every = _collected(
        _run(here, "--collect-only", "-q", "--dra-profile", str(full), str(SCENARIOS))
    )
    result = _run(here, "--collect-only", "-q", "--dra-profile", str(derived), str(SCENARIOS))
    assert _collected(result) == every
    result.stdout.fnmatch_lines(["*requirement coverage checked for suites: allocation, *"])


def _stub_every_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stubbed cluster, with every feature gate of the catalog on: only the profile decides."""
    from conformance.plugin import session

    stub_cluster(monkeypatch, {})
    stubbed = session.read_cluster_facts
    gates = FrozenMap({g: True for r in CATALOG.requirements for g in r.feature_gates})

    def read_facts(k8s: Any, profile: Any) -> Any:
        return dataclasses.replace(stubbed(k8s, profile), feature_gates=gates, devices=())

    monkeypatch.setattr(session, "read_cluster_facts", read_facts)


def _skip_messages(
    here: pytest.Pytester, profile: Path, ids: list[str], *options: str
) -> dict[str | None, str | None]:
    """Run `ids` on the stubbed cluster: requirement -> its skip message (None: not skipped)."""
    wanted = [arg for rid in ids for arg in ("--dra-requirement", rid)]
    result = _run(
        here,
        *("--dra-profile", str(profile), "--dra-cluster", "existing", *options),
        *("--dra-workload-image", "localhost/w:1", "--dra-report-dir", str(here.path / "run")),
        *("--junitxml", str(here.path / "junit.xml"), *wanted, str(SCENARIOS)),
    )
    ended = {}
    for case in ET.parse(here.path / "junit.xml").getroot().iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        skipped = case.find("skipped")
        ended[props.get("requirement")] = skipped.get("message") if skipped is not None else None
    assert sorted(ended) == sorted(ids), result.stdout.str()
    return ended


@pytest.mark.parametrize("absence", [a for a, (_, ids, _) in ABSENCES.items() if ids])
def test_the_requirements_of_what_the_profile_lacks_end_with_the_reason(
    here: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, absence: str
) -> None:
    derive, ids, ending = ABSENCES[absence]
    _stub_every_gate(monkeypatch)
    profile = _profile(here.path / "derived.yaml", derive)
    for rid, message in _skip_messages(here, profile, ids).items():
        assert message is not None and message.startswith(ending), (rid, message)


def test_a_probed_capability_without_its_profile_field_is_not_applicable(
    here: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Probing runs a requirement of an undeclared capability, but without the block that says
    # what to ask for (the extended resource's name and class) there is nothing to run: not
    # applicable with the reason, never a crash recorded as "observed not working".
    _stub_every_gate(monkeypatch)
    profile = _profile(here.path / "derived.yaml", ABSENCES["no extended resource"][0])
    ids = [r.id for r in CATALOG.requirements if "extendedResource" in r.profile_fields]
    assert len(ids) >= 4, ids
    for rid, message in _skip_messages(here, profile, ids, "--dra-probe-capabilities").items():
        assert message is not None and message.startswith("not applicable: "), (rid, message)
        assert "the profile declares no extendedResource" in message, (rid, message)
