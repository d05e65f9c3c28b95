"""Reading what the docs tests compare: pyproject.toml's import-linter contracts and the
sections and fenced blocks of the Markdown documents."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]


def importlinter() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)["tool"]["importlinter"]


def conformance_layers() -> list[frozenset[str]]:
    """The `conformance` package's layers, highest first, each a set of independent names."""
    (contract,) = [
        c
        for c in importlinter()["contracts"]
        if c["type"] == "layers" and c.get("containers") == ["conformance"]
    ]
    return [parse_layer(layer) for layer in contract["layers"]]


def parse_layer(text: str) -> frozenset[str]:
    return frozenset(part.strip() for part in text.split("|") if part.strip())


def section(text: str, heading: str, *, own: bool = False) -> str:
    """The body of the Markdown section whose heading starts with `heading`, to the next
    heading of the same or a higher level (`own`: to the next heading of any level)."""
    match = re.search(rf"^(#+) {re.escape(heading)}.*$", text, re.MULTILINE)
    assert match, f"no section {heading!r}"
    level = len(match[1])
    rest = text[match.end() :]
    end = re.search(rf"^#{{1,{6 if own else level}}} ", rest, re.MULTILINE)
    return rest[: end.start()] if end else rest


def fenced_blocks(text: str) -> list[str]:
    return re.findall(r"^```[\w-]*\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
