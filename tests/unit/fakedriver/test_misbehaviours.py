"""`fakedriver.controls.MISBEHAVIOURS` is the one list of misbehaviours: the control channel
rejects a name not in it, but the driver's own checks (`misbehaving("...")`,
`"..." in controls.misbehaviours`) would silently never fire on a misspelt name."""

from __future__ import annotations

import re
from pathlib import Path

import fakedriver
from fakedriver.controls import MISBEHAVIOURS

PACKAGE = Path(fakedriver.__file__).parent
README = PACKAGE.parent / "README.md"
CHECK = re.compile(
    r"""misbehaving\(\s*["']([^"']+)["']\s*\)|["']([^"']+)["']\s+in\s+[\w.]*misbehaviours"""
)


def _checked_names() -> dict[str, list[str]]:
    """Misbehaviour name -> the driver modules that check it."""
    found: dict[str, list[str]] = {}
    for module in sorted(PACKAGE.rglob("*.py")):
        for match in CHECK.finditer(module.read_text()):
            name = match[1] or match[2]
            found.setdefault(name, []).append(module.name)
    return found


def test_the_driver_checks_only_known_misbehaviours() -> None:
    checked = _checked_names()
    unknown = {n: where for n, where in checked.items() if n not in MISBEHAVIOURS}
    assert not unknown, f"checked but not in controls.MISBEHAVIOURS: {unknown}"


def test_every_known_misbehaviour_is_checked_by_the_driver() -> None:
    assert sorted(MISBEHAVIOURS - set(_checked_names())) == []


def test_the_readme_documents_exactly_the_known_misbehaviours() -> None:
    section = README.read_text().split("## Misbehaviours", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z0-9-]+)` \|", section, re.MULTILINE))
    assert documented == MISBEHAVIOURS


def test_misbehaviours_are_checked_only_in_their_area_module() -> None:
    """The honest modules call hooks; a misbehaviour's name lives in the `fakedriver.misbehave`
    module of its area (its NAMES), so the reference path never reads one."""
    from fakedriver.misbehave import AREAS

    area_of = {name: Path(area.__file__).name for area in AREAS for name in area.NAMES}
    elsewhere = {
        name: [m for m in modules if m != area_of.get(name)]
        for name, modules in _checked_names().items()
    }
    assert not {n: m for n, m in elsewhere.items() if m}, "checked outside their area module"


def test_the_honest_modules_name_no_misbehaviour() -> None:
    honest = [m for m in PACKAGE.rglob("*.py") if "misbehave" not in m.relative_to(PACKAGE).parts]
    named = {
        module.relative_to(PACKAGE).as_posix(): sorted(
            name for name in MISBEHAVIOURS if re.search(rf"\b{re.escape(name)}\b", text)
        )
        for module in honest
        if "_gen" not in module.parts and (text := module.read_text())
    }
    assert not {m: n for m, n in named.items() if n}, "name their misbehaviours in misbehave/"
