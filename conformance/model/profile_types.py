"""Field types several sections of the profile share (names the API defines)."""

from __future__ import annotations

import re
from typing import Any

from conformance.model.cel import attribute_name_problem
from conformance.model.schema import DNS_SUBDOMAIN_RE
from conformance.model.typed import checked, text, wrong

CLASS_FORM = "a DeviceClass name (a DNS subdomain)"
DeviceClassName = text(CLASS_FORM, DNS_SUBDOMAIN_RE)

# name[:tag][@digest], the name's first part possibly a registry host[:port].
IMAGE_REF_RE = re.compile(
    r"^[a-z0-9]([a-z0-9._-]*[a-z0-9])?(:[0-9]+)?(/[a-z0-9]([a-z0-9._-]*[a-z0-9])?)*"
    r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[0-9a-f]{64})?$"
)


def qualified_name(form: str) -> Any:
    """An attribute or capacity name: `<domain>/<identifier>`, or `<identifier>` in the
    driver's domain (resolved when the profile is built, as the API does in a slice)."""

    def check(value: Any) -> str:
        if not isinstance(value, str) or attribute_name_problem(value):
            wrong(form, value)
        return value

    return checked(str, check, {"type": "string", "minLength": 1})
