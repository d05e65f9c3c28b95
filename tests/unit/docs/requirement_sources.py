"""What the steps of adding a requirement leave in the tree, read as text (AST), never
imported: the catalog, the scenario markers, the broken-driver checks and the fake driver's
misbehaviours, the second driver's expectations, docs/versions.md's table."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
CATALOG = ROOT / "scenarios" / "requirements.yaml"
ID = re.compile(r"DRA-[A-Z]+-\d{3}")


def catalog() -> dict[str, str]:
    """Requirement ID -> level, in catalog order."""
    entries = yaml.safe_load(CATALOG.read_text())["requirements"]
    return {e["id"]: e["level"] for e in entries}


def _trees(paths: Iterable[Path]) -> Iterator[ast.AST]:
    for path in sorted(paths):
        yield ast.parse(path.read_text(), filename=str(path))


def _constants(tree: ast.AST) -> dict[str, str]:
    """Module-level NAME = "string" assignments."""
    found: dict[str, str] = {}
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                    found[target.id] = node.value.value
    return found


def marked_requirements(scenarios: Path) -> set[str]:
    """IDs given to `dra_requirement(...)` in the scenario tree: literals, or module constants
    of the tree (`UPG_KEEP = "DRA-UPG-001"` imported by a test module)."""
    trees = list(_trees(scenarios.rglob("*.py")))
    constants: dict[str, str] = {}
    for tree in trees:
        constants.update(_constants(tree))
    marked: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and _name(node.func) == "dra_requirement"):
                continue
            for arg in node.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    marked.add(arg.value)
                elif isinstance(arg, ast.Name) and arg.id in constants:
                    marked.add(constants[arg.id])
    return marked


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def requirements_named(paths: Iterable[Path]) -> set[str]:
    """Every requirement ID a string constant of these files is (the broken-driver checks
    name theirs so: run_scenario_against_broken_driver("DRA-CORE-001", [...]))."""
    found: set[str] = set()
    for tree in _trees(paths):
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.update(ID.findall(node.value) if ID.fullmatch(node.value) else ())
    return found


def misbehaviours_switched(paths: Iterable[Path]) -> dict[str, str]:
    """Misbehaviour name -> file, for every name a broken-driver check switches on: the
    literal list of run_scenario_against_broken_driver(ID, [...]) and the values of a
    parametrize over `misbehaviour`."""
    found: dict[str, str] = {}
    for path in sorted(paths):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            if _name(node.func) == "run_scenario_against_broken_driver" and len(node.args) > 1:
                for name in _strings(node.args[1]):
                    found[name] = path.name
            elif _name(node.func) == "parametrize" and _names_misbehaviour(node):
                for name in _first_of_each(node.args[1]):
                    found[name] = path.name
    return found


def _strings(node: ast.expr) -> list[str]:
    if isinstance(node, ast.List | ast.Tuple):
        return [e.value for e in node.elts if isinstance(e, ast.Constant)]
    return []


def _names_misbehaviour(call: ast.Call) -> bool:
    first = call.args[0] if call.args else None
    names = _strings(first) if isinstance(first, ast.Tuple | ast.List) else []
    if isinstance(first, ast.Constant):
        names = [n.strip() for n in str(first.value).split(",")]
    return bool(names) and names[0] == "misbehaviour" and len(call.args) > 1


def _first_of_each(values: ast.expr) -> list[str]:
    firsts: list[str] = []
    for value in getattr(values, "elts", []):
        if isinstance(value, ast.Call):  # pytest.param(name, ...)
            value = value.args[0] if value.args else value
        if isinstance(value, ast.Tuple) and value.elts:
            value = value.elts[0]
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            firsts.append(value.value)
    return firsts


def fake_driver_misbehaviours(misbehave: Path) -> set[str]:
    """The names every area module of the fake driver declares in its NAMES."""
    names: set[str] = set()
    for tree in _trees(misbehave.glob("*.py")):
        for node in getattr(tree, "body", []):
            targets = getattr(node, "targets", None) or [getattr(node, "target", None)]
            if any(isinstance(t, ast.Name) and t.id == "NAMES" for t in targets):
                names |= {
                    c.value
                    for c in ast.walk(node.value)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
                }
    return names


def dict_keys(path: Path, variable: str) -> set[str]:
    """The string keys of a module-level dict literal `variable` (annotated or not)."""
    for node in ast.parse(path.read_text()).body:
        target = getattr(node, "target", None) or (getattr(node, "targets", None) or [None])[0]
        if isinstance(target, ast.Name) and target.id == variable:
            assert isinstance(node.value, ast.Dict), f"{path.name}: {variable} is no dict literal"
            return {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
    raise AssertionError(f"{path.name} has no {variable}")


def versions_table(text: str) -> set[str]:
    """The requirement IDs the first column of docs/versions.md's "Requirement × version"
    table names, ranges expanded: "DRA-ALLOC-001 … 006, 008", "DRA-KUBELET-001, 002"."""
    body = text.split("## Requirement × version", 1)[1].split("\n#", 1)[0]
    found: set[str] = set()
    for row in re.findall(r"^\| (DRA-[^|]*?) \|", body, re.MULTILINE):
        found |= expand(re.sub(r"\(.*?\)", "", row))
    return found


def expand(cell: str) -> set[str]:
    found: set[str] = set()
    prefix = ""
    for part in (p.strip() for p in cell.split(",")):
        if not part:
            continue
        ends = [e.strip() for e in re.split(r"…|\.\.\.?", part)]
        numbers = []
        for end in ends:
            if match := re.fullmatch(r"(DRA-[A-Z]+-)(\d{3})", end):
                prefix, number = match[1], match[2]
            elif re.fullmatch(r"\d{3}", end):
                number = end
            else:
                raise AssertionError(f"docs/versions.md: cannot read {end!r} in {cell!r}")
            numbers.append(int(number))
        found |= {f"{prefix}{n:03d}" for n in range(numbers[0], numbers[-1] + 1)}
    return found
