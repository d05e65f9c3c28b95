"""The steps of adding a profile field, a fault method or a driver's example profile that only
documentation records: docs/profile.md's Fields table is the profile's JSON Schema's top-level
fields, every fault method the profile accepts is documented (its injector:
tests/unit/faults/test_methods_table.py), and every example driver directory has its profile
and its README."""

from __future__ import annotations

import json
import re

from conformance.model.fault_config import METHODS
from unit.docs.contracts import ROOT, section

PROFILE_MD = ROOT / "docs" / "profile.md"
SCHEMA = ROOT / "docs" / "profile.schema.json"
EXAMPLES = ROOT / "docs" / "examples"


def documented_fields() -> set[str]:
    """The top-level names the first column of docs/profile.md's Fields table gives."""
    body = section(PROFILE_MD.read_text(), "Fields", own=True)
    return {row.split(".")[0] for row in re.findall(r"^\| `([\w.]+)` \|", body, re.MULTILINE)}


def test_every_profile_field_is_in_the_fields_table() -> None:
    schema = set(json.loads(SCHEMA.read_text())["properties"])
    documented = documented_fields()
    assert not schema - documented, (
        f"docs/profile.md, Fields: no row for {sorted(schema - documented)} "
        "(docs/profile.schema.json has them)"
    )
    assert not documented - schema, (
        f"docs/profile.md, Fields: rows for fields the profile lacks: {sorted(documented - schema)}"
    )


def test_every_fault_method_is_documented() -> None:
    faults = section(PROFILE_MD.read_text(), "faults")
    contracts = (ROOT / "docs" / "CONTRACTS.md").read_text()
    for method in METHODS:
        assert f"`{method}`" in faults, f"docs/profile.md, faults: method `{method}` undocumented"
        assert f"`{method}`" in contracts, f"docs/CONTRACTS.md does not name method `{method}`"


def test_every_example_driver_has_a_profile_and_a_readme() -> None:
    drivers = [d for d in sorted(EXAMPLES.iterdir()) if d.is_dir()]
    assert drivers, "no example driver under docs/examples/"
    for driver in drivers:
        name = driver.relative_to(ROOT).as_posix()
        assert (driver / "profile.yaml").is_file(), f"{name}: no profile.yaml"
        readme = driver / "README.md"
        assert readme.is_file(), f"{name}: no README.md (how it is built, the verdict it gets)"
        command = f"dra-conformance run --profile {name}/profile.yaml"
        assert command in readme.read_text(), f"{name}/README.md: no `{command} ...` line"
