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
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from conformance.model.typed import (
    Strict,
    absolute_path,
    checked,
    fail,
    regex,
    string_argv,
    wrong,
)

TOKEN = "${token}"
OPAQUE_BEGIN, OPAQUE_END = "=== OPAQUE BEGIN", "=== OPAQUE END"
ExpectMethod = Literal["env", "file", "command"]


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


# --- the section's schema (the profile loader validates with it) ------------------------------

_OBJECT_FORM = (
    "the driver's opaque parameters as a non-empty object, e.g. {apiVersion: ..., kind: ...}"
)


def _json_object(value: Any) -> str:
    if not isinstance(value, Mapping) or not value:
        wrong(_OBJECT_FORM, value)
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError) as exc:
        fail(f"not representable as JSON ({exc}); quote dates and other YAML-only values")


JsonObject = checked(str, _json_object, {"type": "object", "minProperties": 1})
Regex = regex(prepare=lambda r: r.replace(TOKEN, "0"))


def _regexes(*, required: bool) -> Any:
    def check(value: Any) -> Any:
        if not isinstance(value, list):
            wrong("a list of regular expressions", value)
        if required and not value:
            fail("give at least one regular expression the container's output must match")
        return value

    return Annotated[tuple[Regex, ...], BeforeValidator(check)]


Shows = _regexes(required=True)
Hides = _regexes(required=False)
ContainerPath = absolute_path()
ContainerArgv = string_argv("a non-empty list of strings (argv)")


class _Expect(Strict):
    shows: Shows = Field(description="a list of regular expressions")
    hides: Hides = Field((), description="regular expressions the container must not show")

    def domain(self) -> OpaqueExpect:
        path, command = getattr(self, "path", None), getattr(self, "command", ())
        return OpaqueExpect(self.method, self.shows, self.hides, path, command)  # type: ignore[attr-defined]


class EnvExpect(_Expect):
    method: Literal["env"]


class FileExpect(_Expect):
    method: Literal["file"]
    path: ContainerPath = Field(description="an absolute path inside the container")


class CommandExpect(_Expect):
    method: Literal["command"]
    command: ContainerArgv = Field(description="a non-empty list of strings (argv)")


Expect = Annotated[EnvExpect | FileExpect | CommandExpect, Field(discriminator="method")]


class OpaqueSection(Strict):
    """`opaqueConfig`: the class's and the claim's opaque parameters, and what shows them."""

    class_: JsonObject = Field(alias="class", description=_OBJECT_FORM)
    claim: JsonObject = Field(description=_OBJECT_FORM)
    expect: Expect = Field(description="{method: env|file|command, shows: [regex, ...]}")

    def domain(self) -> OpaqueConfig:
        return OpaqueConfig(self.class_, self.claim, self.expect.domain())
