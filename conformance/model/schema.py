"""Reading the YAML files users write (profile, requirements catalog, known issues).

Every problem names the field path and the expected form, and unknown keys get a did-you-mean,
because these files are written by hand by people who are not reading our source. The typed
schemas are built from `conformance.model.typed`; this module reads the file strictly and
holds the helpers their messages share.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import yaml

from conformance.errors import ConformanceError


class DocumentError(ConformanceError):
    """A file cannot be used; `problems` lists `field.path: message` lines."""

    kind: ClassVar[str] = "file"  # how the message names the file: "profile", ...

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        if len(problems) == 1:
            text = f"{self.kind} {source}: {problems[0]}"
        else:
            lines = "\n".join(f"  {p}" for p in problems)
            text = f"{self.kind} {source}: {len(problems)} problems\n{lines}"
        super().__init__(text)


class DuplicateKeyError(yaml.MarkedYAMLError):
    pass


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys (PyYAML silently keeps the last one)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise DuplicateKeyError(
                "while constructing a mapping",
                node.start_mark,
                f"duplicate key {key!r} (first defined on line {seen[key].start_mark.line + 1})",
                key_node.start_mark,
            )
        seen[key] = key_node
    return loader.construct_mapping(node)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_yaml(text: str) -> Any:
    """Parse YAML; raises ValueError with a one-line, position-bearing message."""
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise ValueError(f"not valid YAML: {exc.problem}{where}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"not valid YAML: {exc}") from None


def read_document(path: str | Path, error: type[DocumentError]) -> Any:
    """The parsed YAML of `path`; raises `error` saying why it cannot be read or parsed."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise error(str(path), [f"cannot read the file: {exc.strerror or exc}"]) from None
    try:
        return load_yaml(text)
    except ValueError as exc:
        raise error(str(path), [str(exc)]) from None


def describe(value: Any) -> str:
    """How a wrong value reads in an error: `12`, `"abc"`, `a list`, `nothing`."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value + '"' if len(value) <= 60 else '"' + value[:57] + '..."'
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, Sequence):
        return "a list"
    return repr(value)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def suggest(name: str, allowed: Iterable[str]) -> str | None:
    allowed = list(allowed)
    for candidate in (name, _camel(name)):
        lowered = {a.lower(): a for a in allowed}
        if candidate.lower() in lowered:
            return lowered[candidate.lower()]
    close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.6)
    if close:
        return close[0]
    # A truncated name ("health" for "health-reporting") scores low on edit distance.
    containing = [a for a in allowed if name and name.lower() in a.lower()]
    return containing[0] if len(containing) == 1 else None


def join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
DNS_SUBDOMAIN_RE = re.compile(
    r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)


_DURATION_RE = re.compile(r"^(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m)?(?:(?P<s>\d+(?:\.\d+)?)s)?$")


def parse_duration(value: Any) -> float | None:
    """Seconds from `90`, `90.5`, `"90s"`, `"5m"`, `"1h30m"`; None if not a duration."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value:
        m = _DURATION_RE.match(value.strip())
        if m and any(m.groupdict().values()):
            return int(m["h"] or 0) * 3600 + int(m["m"] or 0) * 60 + float(m["s"] or 0)
    return None


def expand_argv(argv: Sequence[str], values: Mapping[str, str]) -> list[str]:
    """An argv template (validated by `typed.argv`) with its {placeholders} filled in."""
    return [item.format_map(values) for item in argv]
