"""The steps of adding a requirement (CONTRIBUTING.md) that no other unit test catches when
left out: a test marked with it in scenarios/, a broken-driver check for a MUST with the fake
driver's misbehaviour it switches on, its row in docs/versions.md, and second-driver
expectations that name catalog requirements only."""

from __future__ import annotations

import pytest

from unit.docs.requirement_sources import (
    ROOT,
    catalog,
    dict_keys,
    expand,
    fake_driver_misbehaviours,
    marked_requirements,
    misbehaviours_switched,
    requirements_named,
    versions_table,
)

BROKEN_CHECKS = [
    *(ROOT / "tests" / "e2e" / "broken").glob("*.py"),
    *(ROOT / "tests" / "e2e" / "upgrade").glob("*.py"),
]
# MUSTs no fake-driver misbehaviour breaks yet: a known gap, each with the reason. A new MUST
# gets a broken-driver check, not an entry here.
NO_BROKEN_CHECK = {
    "DRA-REBOOT-002": "no misbehaviour yet refuses new claims after a node restart only",
    "DRA-UPG-002": "the broken rehearsal breaks registration only (DRA-UPG-004)",
    "DRA-UPG-003": "the broken rehearsal breaks registration only (DRA-UPG-004)",
    "DRA-UPG-005": "the broken rehearsal breaks registration only (DRA-UPG-004)",
}
# Judged for a pair of versions by the upgrade rehearsal, not per version.
NOT_PER_VERSION = {f"DRA-UPG-00{i}" for i in range(1, 6)}
# Not audited per version yet: a known gap of docs/versions.md. A new requirement gets its row
# (what its gates are on each version), not an entry here.
NOT_AUDITED = {"DRA-ALLOC-017", "DRA-LOSS-010", "DRA-LOSS-011"}


def test_every_requirement_has_a_marked_scenario_test() -> None:
    marked = marked_requirements(ROOT / "scenarios")
    missing = [rid for rid in catalog() if rid not in marked]
    assert not missing, (
        f"no test under scenarios/ carries @pytest.mark.dra_requirement for {missing}: "
        "add one (CONTRIBUTING.md, Adding a requirement)"
    )
    assert marked <= set(catalog()), (
        f"markers name IDs the catalog lacks: {marked - set(catalog())}"
    )


def test_every_must_has_a_broken_driver_check() -> None:
    checked = requirements_named(BROKEN_CHECKS)
    musts = [rid for rid, level in catalog().items() if level == "MUST"]
    missing = [rid for rid in musts if rid not in checked and rid not in NO_BROKEN_CHECK]
    assert not missing, (
        f"MUST {missing}: no check in tests/e2e/broken/ that it fails against a broken fake "
        "driver (CONTRIBUTING.md, Adding a requirement)"
    )


def test_the_known_gaps_are_still_gaps() -> None:
    checked = requirements_named(BROKEN_CHECKS)
    closed = sorted(set(NO_BROKEN_CHECK) & checked)
    assert not closed, f"{closed} have a broken-driver check now: drop them from NO_BROKEN_CHECK"
    assert set(NO_BROKEN_CHECK) <= set(catalog())


def test_every_misbehaviour_a_check_switches_on_exists() -> None:
    known = fake_driver_misbehaviours(ROOT / "drivers/fake/fakedriver/misbehave")
    switched = misbehaviours_switched(BROKEN_CHECKS)
    assert switched, "no misbehaviour found in the broken-driver checks"
    unknown = {name: where for name, where in switched.items() if name not in known}
    assert not unknown, (
        f"the broken-driver checks switch on misbehaviours the fake driver lacks: {unknown}; "
        "add each to the NAMES of its area in drivers/fake/fakedriver/misbehave/"
    )


def test_every_requirement_has_a_row_in_versions_md() -> None:
    rows = versions_table((ROOT / "docs" / "versions.md").read_text())
    exempt = NOT_PER_VERSION | NOT_AUDITED
    missing = [rid for rid in catalog() if rid not in rows and rid not in exempt]
    assert not missing, f"docs/versions.md, Requirement × version: no row for {missing}"
    audited = sorted(NOT_AUDITED & rows)
    assert not audited, f"{audited} have a row in docs/versions.md now: drop them from NOT_AUDITED"
    assert rows <= set(catalog()), f"docs/versions.md names unknown IDs: {rows - set(catalog())}"


def test_the_second_driver_expects_catalog_requirements_only() -> None:
    expected = dict_keys(ROOT / "tests" / "e2e" / "test_second_driver.py", "NOT_PASSED")
    assert expected <= set(catalog()), f"NOT_PASSED names unknown IDs: {expected - set(catalog())}"


@pytest.mark.parametrize(
    ("cell", "ids"),
    [
        ("DRA-CORE-001 … 003", {"DRA-CORE-001", "DRA-CORE-002", "DRA-CORE-003"}),
        ("DRA-LOSS-003, 005", {"DRA-LOSS-003", "DRA-LOSS-005"}),
        ("DRA-KUBELET-001, DRA-REBOOT-002", {"DRA-KUBELET-001", "DRA-REBOOT-002"}),
    ],
)
def test_a_versions_row_expands(cell: str, ids: set[str]) -> None:
    assert expand(cell) == ids
