"""The profile's `verification` section: how a container proves which devices it received
(environment variables, a file, or a command), with the value form each method accepts."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from conformance.model.cel import attribute_name_problem, resolve_name
from conformance.model.profile import Verification
from conformance.model.typed import Strict, absolute_path, checked, regex, string_argv, wrong

_VALUE_FORM = "pool/device, device, or attribute:<domain>/<name> (or attribute:<name>)"


def _value(raw: Any) -> str:
    if raw in ("pool/device", "device"):
        return raw
    name = raw.partition(":")[2] if isinstance(raw, str) and raw.startswith("attribute:") else ""
    if name and not attribute_name_problem(name):
        return raw
    wrong(_VALUE_FORM, raw)


def _separator(raw: Any) -> str:
    if not isinstance(raw, str) or raw == "":
        wrong("a non-empty string such as ','", raw)
    return raw


Value = checked(str, _value, {"type": "string", "pattern": "^(pool/device|device|attribute:.+)$"})
Separator = checked(str, _separator, {"type": "string", "minLength": 1})
NameRegex = regex("a regular expression such as '^DRA_ASSIGNED_'")
ContainerPath = absolute_path()
Command = string_argv("a non-empty list of strings (argv), e.g. [nvidia-smi, -L]")


class _Verification(Strict):
    value: Value = Field(description=_VALUE_FORM)
    separator: Separator | None = Field(
        None, description="splits one variable, file or output into several identifiers"
    )

    def domain(self, driver: str) -> Verification:
        value = self.value
        if value.startswith("attribute:"):
            value = "attribute:" + resolve_name(value.partition(":")[2], driver)
        return Verification(
            self.method,  # type: ignore[attr-defined]
            value,
            self.separator,
            getattr(self, "name_regex", None),
            getattr(self, "path", None),
            getattr(self, "command", ()),
        )


class EnvVerification(_Verification):
    method: Literal["env"]
    name_regex: NameRegex = Field(description="a regular expression such as '^DRA_ASSIGNED_'")


class FileVerification(_Verification):
    method: Literal["file"]
    path: ContainerPath = Field(description="an absolute path inside the container")


class CommandVerification(_Verification):
    method: Literal["command"]
    command: Command = Field(description="an argv list such as [nvidia-smi, -L]")


VerificationSection = Annotated[
    EnvVerification | FileVerification | CommandVerification, Field(discriminator="method")
]
