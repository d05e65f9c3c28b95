"""The requirement facts the report needs (ID, suite, level, statement), from the catalog.

The catalog itself (`scenarios/requirements.yaml`) is validated by `conformance/requirements.py`;
this module only reads the four fields the report shows, so a report can be written even when
the harness is not loaded (unit tests, a standalone run).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

CATALOG_KEY = pytest.StashKey[Mapping[str, "RequirementInfo"]]()
CATALOG_ENV = "DRA_REQUIREMENTS_FILE"
DEFAULT_CATALOG = Path(__file__).resolve().parents[2] / "scenarios" / "requirements.yaml"

LEVELS = ("MUST", "SHOULD", "MAY")


@dataclass(frozen=True)
class RequirementInfo:
    id: str
    suite: str
    level: str  # MUST | SHOULD | MAY
    statement: str
    disruptive: bool = False

    @classmethod
    def from_any(cls, entry: Any) -> RequirementInfo:
        """From a catalog dict or any object with the same attributes (the harness's model)."""
        get = entry.get if isinstance(entry, Mapping) else lambda k, d=None: getattr(entry, k, d)
        return cls(
            id=str(get("id")),
            suite=str(get("suite", "") or ""),
            level=str(get("level", "") or "").upper(),
            statement=" ".join(str(get("statement", "") or "").split()),
            disruptive=bool(get("disruptive", False)),
        )


class CatalogError(Exception):
    """The catalog file is missing or malformed; the message names the file."""


def load_catalog(path: str | os.PathLike[str]) -> dict[str, RequirementInfo]:
    """Read `requirements:` from a catalog file into {id: RequirementInfo}, in file order."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CatalogError(f"requirements catalog {path}: cannot read it ({exc})") from exc
    except yaml.YAMLError as exc:
        raise CatalogError(f"requirements catalog {path}: not valid YAML ({exc})") from exc
    entries = data.get("requirements") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise CatalogError(f"requirements catalog {path}: expected a top-level 'requirements' list")
    return catalog_from(entries)


def catalog_from(entries: Iterable[Any]) -> dict[str, RequirementInfo]:
    catalog: dict[str, RequirementInfo] = {}
    for entry in entries:
        info = RequirementInfo.from_any(entry)
        catalog[info.id] = info
    return catalog


def set_catalog(config: pytest.Config, entries: Iterable[Any] | Mapping[str, Any]) -> None:
    """Give the report the catalog the harness already loaded (dicts or requirement objects)."""
    values = entries.values() if isinstance(entries, Mapping) else entries
    config.stash[CATALOG_KEY] = catalog_from(values)


def catalog_path(config: pytest.Config | None = None) -> Path:
    """Where the catalog is read from: `$DRA_REQUIREMENTS_FILE`, the rootdir's, or the package's."""
    env = os.environ.get(CATALOG_ENV)
    if env:
        return Path(env)
    if config is not None:
        candidate = Path(config.rootpath) / "scenarios" / "requirements.yaml"
        if candidate.is_file():
            return candidate
    return DEFAULT_CATALOG


def catalog_for(config: pytest.Config) -> tuple[dict[str, RequirementInfo], str | None]:
    """The catalog for this run and, when it could not be loaded, the reason (else None)."""
    stored = config.stash.get(CATALOG_KEY, None)
    if stored is not None:
        return dict(stored), None
    try:
        catalog = load_catalog(catalog_path(config))
    except CatalogError as exc:
        return {}, str(exc)
    config.stash[CATALOG_KEY] = catalog
    return catalog, None
