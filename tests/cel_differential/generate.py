"""Writes corpus.yaml: the selectors of the differential tier (`python generate.py`).

The corpus is data so that every tier reads the same expressions; a unit test checks the file
is what this script writes. Forms: the profile examples, every form the DRA CEL environment
documents (string extensions, quantity and semver methods, `in`, `has()`, `||`, `!`,
ternaries, list and map macros, qualified and unqualified names), attributes no device has
(evaluation errors), expressions the API server must reject, and combinations of them.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus.yaml"

D = "fake.dra-conformance.io"
T = "test-driver.cdi.k8s.io"
A = f'device.attributes["{D}"]'
C = f'device.capacity["{D}"]'
STD = 'device.attributes["resource.kubernetes.io"]'

PROFILE = [
    f'{A}.model == "fa-80"',
    f'{A}.model == "fa-24"',
    f'{A}.type == "fpga"',
    f"{A}.whole == true",
    f"{A}.whole == false",
    f'device.driver == "{D}"',
    f'{C}.memory.compareTo(quantity("24Gi")) >= 0',
]

# Boolean atoms: each is a complete selector, and the operands of the combinations below.
ATOMS = {
    "driver": [
        f'device.driver == "{D}"',
        f'device.driver != "{D}"',
        f'device.driver == "{T}"',
        'device.driver.startsWith("fake.")',
        'device.driver.endsWith(".k8s.io")',
        f'device.driver in ["{D}", "{T}"]',
    ],
    "strings": [
        f'{A}.model.startsWith("fa-")',
        f'{A}.model.endsWith("-80")',
        f'{A}.model.matches("^f[ap]-[0-9]+$")',
        f'{A}.model.contains("24")',
        f'{A}.model.upperAscii() == "FA-80"',
        f'{A}.model.lowerAscii() == "fa-24"',
        f'{A}.model.split("-")[1] == "80"',
        f'{A}.model.split("-").size() == 2',
        f'{A}.model.indexOf("-") == 2',
        f'{A}.model.lastIndexOf("4") == 3',
        f'{A}.model.substring(0, 2) == "fa"',
        f'{A}.model.replace("fa", "xx") == "xx-80"',
        f'{A}.model.charAt(0) == "f"',
        f'{A}.type.trim() == "accelerator"',
        f"{A}.model.size() == 5",
        f'["a", "b"].join("-") == "a-b" && {A}.type == "shared"',
        f'{A}.uuid.startsWith("")',
        f'{STD}.pcieRoot.startsWith("pci0000:8")',
    ],
    "numbers": [
        f"{A}.numaNode == 0",
        f"{A}.numaNode == 1",
        f"{A}.numaNode > 0",
        f"{A}.numaNode != 1",
        f"{A}.numaNode + 1 == 2",
        f"{A}.numaNode in [0, 7]",
        f"int({A}.numaNode) == 0",
        f"double({A}.numaNode) < 0.5",
    ],
    "bools": [
        f"{A}.whole",
        f"!{A}.whole",
        "device.allowMultipleAllocations",
        "device.allowMultipleAllocations == false",
        "!device.allowMultipleAllocations",
    ],
    "quantity": [
        f'{C}.memory.compareTo(quantity("40Gi")) >= 0',
        f'{C}.memory.compareTo(quantity("24Gi")) == 0',
        f'{C}.memory.isGreaterThan(quantity("24Gi"))',
        f'{C}.memory.isLessThan(quantity("20Gi"))',
        f"{C}.memory.asApproximateFloat() > 30000000000.0",
        f"{C}.memory.asInteger() == 25769803776",
        f"{C}.memory.isInteger()",
        f"{C}.memory.sign() == 1",
        f'{C}.memory.add(quantity("8Gi")).compareTo(quantity("32Gi")) == 0',
        f'{C}.memory.sub(quantity("16Gi")).isGreaterThan(quantity("8Gi"))',
        f'{C}.memory.add(1024).isGreaterThan(quantity("24Gi"))',
        f'{C}.memory == quantity("80Gi")',
        'quantity("1Gi").isGreaterThan(quantity("1G"))',
        'isQuantity("10Gi")',
        f'{C}.memory.compareTo(quantity("49152Mi")) == 0',
    ],
    "semver": [
        'semver("1.2.3").isGreaterThan(semver("1.2.0"))',
        'semver("1.2.3").isLessThan(semver("1.10.0"))',
        'semver("1.2.3").compareTo(semver("1.2.3")) == 0',
        'semver("2.1.0").major() == 2',
        'semver("2.1.0").minor() == 1',
        'semver("2.1.7").patch() == 7',
        'isSemver("1.0.0")',
        'isSemver("1.0")',
        'semver("v1.0", true).major() == 1',
        f'has({A}.firmware) && {A}.firmware.isGreaterThan(semver("1.0.0"))',
        f"has({A}.firmware) && {A}.firmware.major() >= 1",
    ],
    "presence": [
        f'"interconnect" in {A}',
        f'!("interconnect" in {A})',
        f'"{D}" in device.attributes',
        f'"{D}" in device.capacity',
        f"has({A}.interconnect)",
        f"has({A}.whole)",
        f"!has({A}.parent)",
        f"has({C}.memory)",
        f'"pcieRoot" in {STD}',
        '"resource.kubernetes.io" in device.attributes',
        "device.attributes.size() == 0",
        f'has({A}.interconnect) && {A}.interconnect == "fablink-a"',
    ],
    "macros": [
        f'["fa-80", "fa-24"].exists(m, m == {A}.model)',
        f'["fa-80", "fa-24"].all(m, m != {A}.model)',
        f'["fa-80", "fa-24", "fa-80"].exists_one(m, m == {A}.model)',
        f'["fa-80", "ff-16"].filter(m, m.startsWith("f")).size() == 2 && {A}.type == "fpga"',
        f'["fa", "ff"].map(p, p + "-16").exists(m, m == {A}.model)',
        f'{A}.exists(k, k == "interconnect")',
        f'{A}.all(k, k != "parent")',
        f'device.attributes.exists(d, d == "{D}")',
        f'{C}.exists(k, {C}[k].isGreaterThan(quantity("30Gi")))',
        "device.attributes.all(d, device.attributes[d].size() > 0)",
        f'{{"fa-80": 1, "fa-24": 2}}[{A}.model] == 1',
        f'{A}.model in {{"fa-24": true}}',
    ],
    "names": [
        f'{A}["model"] == "fa-80"',
        f'device.attributes["{D}"].model == "ff-16"',
        f'{STD}.pcieRoot == "pci0000:00"',
        f'{STD}["pcieRoot"] == "pci0000:80"',
        f'device.capacity["{D}"]["memory"].isLessThan(quantity("20Gi"))',
    ],
    "ternary": [
        f'{A}.type == "accelerator" ? {A}.numaNode == 0 : false',
        f'has({A}.whole) ? {A}.whole : {A}.type == "fpga"',
        f'device.driver == "{T}" ? true : {A}.model.startsWith("fa-8")',
        f'({A}.numaNode == 0 ? "left" : "right") == "right"',
    ],
}

# Attributes or domains no device has: an evaluation error on every device that lacks them.
MISSING = [
    f'{A}.nosuch == "x"',
    'device.attributes["other.example.com"].model == "fa-80"',
    f'{C}.nosuch.isGreaterThan(quantity("1"))',
    'device.capacity["other.example.com"].memory.isInteger()',
    f'{A}.interconnect == "fablink-a"',
    f'{A}.parent == "fp48-0"',
    f"{A}.whole == false || {A}.numaNode == 0",
    f'{A}.model == "fa-80" && {A}.interconnect.startsWith("fab")',
    f'{A}.interconnect.startsWith("fab") || true',
    f'false && {A}.nosuch == "x"',
    f'{A}.nosuch == "x" || {A}.model == "fa-24"',
    'semver("not-a-version").major() == 1',
    'quantity("lots").isInteger()',
    f'{A}.model.matches({A}.type + "[")',
    f"{A}.numaNode / 0 == 1",
    f'{A}.model.substring(10) == ""',
    "[1, 2][5] == 1",
    f'{A}.model.split("-")[3] == "x"',
    f'{A}.uuid.isGreaterThan(semver("1.0.0"))',
    f'{A}.numaNode == "0"',
]

# The API server refuses these at create time (syntax, undeclared names, types, cost).
INVALID = [
    f'{A}.model === "fa-80"',
    f'{A}.model = "fa-80"',
    f'{A}.model == "fa-80" &&',
    f'({A}.model == "fa-80"',
    f'{A}.model == "fa-80")',
    'device.name == "fa80-0"',
    'devices.driver == "x"',
    "foo == 1",
    "1 + 1",
    '"fa-80"',
    f"{C}.memory >= 3",
    f'{C}.memory > quantity("1Gi")',
    f"{A}.model.startsWith(1)",
    f'{A}.model.nosuchfunction("a")',
    'quantity("1Gi", "2")',
    "semver(1).major() == 1",
    f'{A}.model.matches("[")',
    f"{A}.model == 'fa-80' && ",
    "",
    "   ",
    "true ? 1 : 2",
    "device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, "
    "device.attributes.all(d, device.attributes[a].all(x, device.attributes[b].all(y, "
    "device.attributes[c].all(z, device.attributes[d].all(w, x == y))))))))",
    f'{A}.model.reverse() == "08-af"',
    f'"%s".format([{A}.model]) == "fa-80"',
    f'{A}.model.quote() == "x"',
    'device.driver == "x" ;',
    "device.attributes[1].model == 1",
    'isSemver("1.0.0", "x")',
]

# The API server accepts these, though they look wrong: dyn values compile against anything.
LOOSE = [
    f"{A}.model",
    f'{A}.model == b"fa-80"',
    f"{A}.numaNode == 0u",
    f"{A}.numaNode == 0.0",
    f'{A}.whole == "true"',
]


def _combinations() -> list[str]:
    """Pairs of atoms from different groups under &&, ||, negation and ternaries: the order
    and short-circuit rules of CEL (an error on one side, a decided other side) matter."""
    firsts = [group[0] for group in ATOMS.values()] + [group[-1] for group in ATOMS.values()]
    out: list[str] = []
    pairs = list(itertools.combinations(firsts, 2))[::2]
    for i, (a, b) in enumerate(pairs):
        form = i % 5
        if form == 0:
            out.append(f"({a}) && ({b})")
        elif form == 1:
            out.append(f"({a}) || ({b})")
        elif form == 2:
            out.append(f"!({a}) || ({b})")
        elif form == 3:
            out.append(f"({a}) ? ({b}) : !({b})")
        else:
            out.append(f"!(({a}) && !({b}))")
    missing = MISSING[:6]
    for a, m in zip(firsts, itertools.cycle(missing)):
        out.append(f"({a}) && ({m})")
        out.append(f"({m}) || ({a})")
    return out


def corpus() -> dict:
    entries: list[dict] = []
    seen: set[str] = set()

    def add(group: str, expressions: list[str]) -> None:
        for expression in expressions:
            if expression not in seen:
                seen.add(expression)
                entries.append({"group": group, "expression": expression})

    add("profile", PROFILE)
    for group, atoms in ATOMS.items():
        add(group, atoms)
    add("missing", MISSING)
    add("invalid", INVALID)
    add("loose", LOOSE)
    add("combined", _combinations())
    return {
        "schema": 1,
        "drivers": [D, T],
        "selectors": entries,
    }


def render() -> str:
    header = "# Generated by generate.py in this folder: edit that, then run it.\n"
    return header + yaml.safe_dump(corpus(), sort_keys=False, width=120)


if __name__ == "__main__":
    CORPUS.write_text(render())
    print(f"{CORPUS}: {len(corpus()['selectors'])} selectors")
