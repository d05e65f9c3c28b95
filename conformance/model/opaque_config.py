"""The profile's `opaqueConfig` (docs/profile.md): the opaque parameters DRA-ALLOC-014 gives a
DeviceClass and a ResourceClaim, and what the container must show for them.

The suite cannot know what a driver does with its own (often typed, apiVersion/kind) config,
so the profile says it: `class` and `claim` are the driver's objects, `expect` how the
container shows the effective result. `${token}` in any string of them is replaced with a
fresh token per test, so what the container shows must come from this test's config.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from conformance.model.schema import Problems, join

TOKEN = "${token}"
OPAQUE_BEGIN, OPAQUE_END = "=== OPAQUE BEGIN", "=== OPAQUE END"
ExpectMethod = Literal["env", "file", "command"]
_METHODS: tuple[ExpectMethod, ...] = ("env", "file", "command")
_EXPECT_KEYS = ("method", "path", "command", "shows", "hides")


@dataclass(frozen=True)
class OpaqueExpect:
    """What the container shows: `shows` regexes must each match, `hides` none, searched
    (re.search, multi-line: ^ and $ anchor at lines) in the container's `NAME=value`
    environment lines (env), the file at `path` (file), or the output of `command`."""

    method: ExpectMethod
    shows: tuple[str, ...]
    hides: tuple[str, ...] = ()
    path: str | None = None
    command: tuple[str, ...] = ()


@dataclass(frozen=True)
class OpaqueConfig:
    class_json: str  # JSON text, so the profile stays immutable
    claim_json: str
    expect: OpaqueExpect

    def class_parameters(self, token: str) -> dict[str, Any]:
        return _render(json.loads(self.class_json), token)

    def claim_parameters(self, token: str) -> dict[str, Any]:
        return _render(json.loads(self.claim_json), token)

    def patterns(self, token: str) -> tuple[list[re.Pattern[str]], list[re.Pattern[str]]]:
        """(shows, hides) compiled with the token in place."""

        def compile_all(regexes: tuple[str, ...]) -> list[re.Pattern[str]]:
            return [re.compile(r.replace(TOKEN, re.escape(token)), re.MULTILINE) for r in regexes]

        return compile_all(self.expect.shows), compile_all(self.expect.hides)


def _render(value: Any, token: str) -> Any:
    if isinstance(value, str):
        return value.replace(TOKEN, token)
    if isinstance(value, list):
        return [_render(v, token) for v in value]
    if isinstance(value, dict):
        return {_render(k, token): _render(v, token) for k, v in value.items()}
    return value


def shown_text(method: ExpectMethod, env: Mapping[str, str], block: str | None) -> str | None:
    """What the expectations are searched in: env as sorted `NAME=value` lines, else the
    workload's opaque block (None when the container printed none)."""
    if method == "env":
        return "\n".join(f"{k}={v}" for k, v in sorted(env.items()))
    return block


def expectation_problems(config: OpaqueConfig, token: str, text: str) -> list[str]:
    shows, hides = config.patterns(token)
    where = {"env": "the container's environment", "file": config.expect.path or "the file"}
    seen = where.get(config.expect.method, "the output of " + " ".join(config.expect.command))
    problems = [f"{seen} shows nothing matching {p.pattern!r}" for p in shows if not p.search(text)]
    for p in hides:
        found = p.search(text)
        if found:
            problems.append(f"{seen} shows {found.group(0)!r}, which matches hides {p.pattern!r}")
    return problems


def last_opaque_block(log: str) -> str | None:
    """The last complete OPAQUE block the workload printed (a restart prints it again)."""
    block: list[str] | None = None
    current: list[str] | None = None
    for line in log.splitlines():
        if line == OPAQUE_BEGIN:
            current = []
        elif line == OPAQUE_END and current is not None:
            block, current = current, None
        elif current is not None:
            current.append(line)
    return None if block is None else "\n".join(block)


# --- validation (the profile loader calls this) --------------------------------------------


def parse_opaque_config(p: Problems, value: Any) -> OpaqueConfig | None:
    section = p.mapping("opaqueConfig", value, ("class", "claim", "expect"))
    if section is None:
        return None
    objects = {key: _json_object(p, section, key) for key in ("class", "claim")}
    expect = _expect(p, section.get("expect")) if "expect" in section else None
    if "expect" not in section:
        p.missing("opaqueConfig.expect", "{method: env|file|command, shows: [regex, ...]}")
    if expect is None or objects["class"] is None or objects["claim"] is None:
        return None
    return OpaqueConfig(objects["class"], objects["claim"], expect)


def _json_object(p: Problems, section: Mapping[str, Any], key: str) -> str | None:
    path = join("opaqueConfig", key)
    form = "the driver's opaque parameters as a non-empty object, e.g. {apiVersion: ..., kind: ...}"
    if key not in section:
        p.missing(path, form)
        return None
    value = section[key]
    if not isinstance(value, Mapping) or not value:
        p.wrong(path, form, value)
        return None
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError) as exc:
        p.add(path, f"not representable as JSON ({exc}); quote dates and other YAML-only values")
        return None


def _expect(p: Problems, value: Any) -> OpaqueExpect | None:
    section = p.mapping("opaqueConfig.expect", value, _EXPECT_KEYS)
    if section is None:
        return None
    if "method" not in section:
        p.missing("opaqueConfig.expect.method", "one of env, file, command")
        return None
    method = p.choice("opaqueConfig.expect.method", section["method"], _METHODS)
    if method is None:
        return None
    own = {"file": "path", "command": "command"}
    for other, key in own.items():
        if key in section and other != method:
            p.add(join("opaqueConfig.expect", key), f"not used by method {method}; remove it")
    path = None
    command: tuple[str, ...] = ()
    if method == "file":
        if "path" not in section:
            p.missing("opaqueConfig.expect.path", "an absolute path inside the container")
            return None
        path = p.string(
            "opaqueConfig.expect.path",
            section["path"],
            "an absolute path inside the container",
            re.compile(r"^/"),
        )
        if path is None:
            return None
    if method == "command":
        raw = section.get("command")
        if not isinstance(raw, list) or not raw or not all(isinstance(a, str) and a for a in raw):
            p.wrong("opaqueConfig.expect.command", "a non-empty list of strings (argv)", raw)
            return None
        command = tuple(raw)
    if "shows" not in section:
        p.missing("opaqueConfig.expect.shows", "a list of regular expressions")
        return None
    shows = _regexes(p, "opaqueConfig.expect.shows", section["shows"], required=True)
    hides = _regexes(p, "opaqueConfig.expect.hides", section.get("hides", []), required=False)
    if shows is None or hides is None:
        return None
    return OpaqueExpect(method, shows, hides, path, command)


def _regexes(p: Problems, path: str, value: Any, *, required: bool) -> tuple[str, ...] | None:
    if not isinstance(value, list):
        p.wrong(path, "a list of regular expressions", value)
        return None
    if required and not value:
        p.add(path, "give at least one regular expression the container's output must match")
        return None
    ok = True
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item:
            p.wrong(join(path, i), "a regular expression", item)
            ok = False
            continue
        try:
            re.compile(item.replace(TOKEN, "0"))
        except re.error as exc:
            p.add(join(path, i), f"not a valid regular expression: {exc}")
            ok = False
    return tuple(value) if ok else None
