"""The profile's `verification` section: how a container proves which devices it received
(environment variables, a file, or a command), with the value form each method accepts."""

from __future__ import annotations

import re
from typing import Any

from conformance.model.cel import attribute_name_problem, resolve_name
from conformance.model.profile import Verification
from conformance.model.schema import Problems, join

_VERIFICATION_VALUE_FORM = "pool/device, device, or attribute:<domain>/<name> (or attribute:<name>)"


class VerificationSection:
    """Validate `verification`; problems go to the shared Problems."""

    def __init__(self, problems: Problems) -> None:
        self.p = problems

    def verification(self, value: Any, driver: str | None) -> Verification | None:
        if value is None:
            return None
        keys = ("method", "value", "separator", "nameRegex", "path", "command")
        section = self.p.mapping("verification", value, keys)
        if section is None:
            return None
        if "method" not in section:
            self.p.missing("verification.method", "one of env, file, command")
            return None
        method = self.p.choice("verification.method", section["method"], ("env", "file", "command"))
        if method is None:
            return None
        own = {"env": "nameRegex", "file": "path", "command": "command"}
        for other_method, key in own.items():
            if key in section and other_method != method:
                self.p.add(join("verification", key), f"not used by method {method}; remove it")
        if "value" not in section:
            self.p.missing("verification.value", _VERIFICATION_VALUE_FORM)
            ident = None
        else:
            ident = self._verification_value(section["value"], driver)
        separator = None
        if "separator" in section:
            raw = section["separator"]
            if not isinstance(raw, str) or raw == "":
                self.p.wrong("verification.separator", "a non-empty string such as ','", raw)
            else:
                separator = raw
        name_regex = path = None
        command: tuple[str, ...] = ()
        if method == "env":
            if "nameRegex" not in section:
                self.p.missing(
                    "verification.nameRegex", "a regular expression such as '^DRA_ASSIGNED_'"
                )
            else:
                name_regex = self.p.string(
                    "verification.nameRegex",
                    section["nameRegex"],
                    "a regular expression such as '^DRA_ASSIGNED_'",
                )
                if name_regex is not None:
                    try:
                        re.compile(name_regex)
                    except re.error as exc:
                        self.p.add(
                            "verification.nameRegex", f"not a valid regular expression: {exc}"
                        )
                        name_regex = None
        elif method == "file":
            if "path" not in section:
                self.p.missing("verification.path", "an absolute path inside the container")
            else:
                path = self.p.string(
                    "verification.path",
                    section["path"],
                    "an absolute path inside the container",
                    re.compile(r"^/"),
                )
        else:
            if "command" not in section:
                self.p.missing("verification.command", "an argv list such as [nvidia-smi, -L]")
            else:
                raw = section["command"]
                if (
                    not isinstance(raw, list)
                    or not raw
                    or not all(isinstance(a, str) and a for a in raw)
                ):
                    self.p.wrong(
                        "verification.command",
                        "a non-empty list of strings (argv), e.g. [nvidia-smi, -L]",
                        raw,
                    )
                else:
                    command = tuple(raw)
        if (
            ident is None
            or (method == "env" and name_regex is None)
            or (method == "file" and path is None)
            or (method == "command" and not command)
        ):
            return None
        return Verification(method, ident, separator, name_regex, path, command)

    def _verification_value(self, raw: Any, driver: str | None) -> str | None:
        if raw in ("pool/device", "device"):
            return raw
        if isinstance(raw, str) and raw.startswith("attribute:"):
            name = raw.partition(":")[2]
            if not attribute_name_problem(name):
                return "attribute:" + (resolve_name(name, driver) if driver else name)
        self.p.wrong("verification.value", _VERIFICATION_VALUE_FORM, raw)
        return None
