"""CEL text for device selectors: attribute and capacity names as resource.k8s.io/v1 defines
them, references to them, and literals. Selectors are evaluated by conformance.cel (the
Kubernetes CEL package itself), never here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

Scalar = str | int | bool

_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")
_DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


MAX_DOMAIN_LENGTH = 63  # resource.k8s.io/v1 DeviceMaxDomainLength
MAX_IDENTIFIER_LENGTH = 32  # resource.k8s.io/v1 DeviceMaxIDLength


def _is_domain(domain: str) -> bool:
    return len(domain) <= MAX_DOMAIN_LENGTH and bool(_DNS_SUBDOMAIN_RE.match(domain))


def _is_identifier(ident: str) -> bool:
    return bool(_IDENT_RE.match(ident))


def attribute_name_problem(name: str) -> str | None:
    """Why `name` is not an attribute or capacity name as resource.k8s.io/v1 defines it
    (QualifiedName: a C identifier, taken to be in the driver's domain, or
    `<DNS subdomain>/<C identifier>`), or None when it is one.

    The API server does not yet reject a name with two or more slashes (a known gap of its
    validation); such a name is still invalid: CEL and matchAttribute cannot name it.
    """
    parts = name.split("/")
    if len(parts) > 2:
        return "more than one '/' (the form is <domain>/<name> or <name>)"
    if len(parts) == 2 and not _is_domain(parts[0]):
        return (
            f"domain {parts[0]!r} is not a DNS subdomain of at most {MAX_DOMAIN_LENGTH} characters"
        )
    if not _is_identifier(parts[-1]):
        return f"{parts[-1]!r} is not a C identifier of at most {MAX_IDENTIFIER_LENGTH} characters"
    return None


def resolve_name(name: str, driver: str) -> str:
    """The fully qualified form of an attribute or capacity name: the API takes an
    unqualified name to be in the driver's domain (`model` of driver d is `d/model`), in
    CEL (`device.attributes["d"].model`) and in matchAttribute alike."""
    return name if "/" in name else f"{driver}/{name}"


def split_qualified(name: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    if not sep:
        raise ValueError(
            f"{name!r} is not a qualified name (expected <domain>/<identifier>; resolve "
            "unqualified names with resolve_name first)"
        )
    return domain, ident


def attribute_ref(qualified_name: str) -> str:
    """`fake.dra-conformance.io/model` -> `device.attributes["fake.dra-conformance.io"].model`."""
    domain, ident = split_qualified(qualified_name)
    return f'device.attributes["{domain}"].{ident}'


def capacity_ref(qualified_name: str) -> str:
    domain, ident = split_qualified(qualified_name)
    return f'device.capacity["{domain}"].{ident}'


def capacity_at_least(qualified_name: str, quantity: str) -> str:
    """The documented capacity comparison: `...compareTo(quantity("24Gi")) >= 0`."""
    return f'{capacity_ref(qualified_name)}.compareTo(quantity("{quantity}")) >= 0'


def cel_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def device_attributes(
    device: Mapping, driver: str, *, include_versions: bool = False
) -> dict[str, Scalar]:
    """A slice device's attributes keyed by qualified name (unqualified names belong to the
    driver's domain, as in the CEL environment). List-typed attributes are left out; version
    attributes only on request, because in CEL a version never equals a string literal."""
    out: dict[str, Scalar] = {}
    kinds = ("string", "int", "bool", "version") if include_versions else ("string", "int", "bool")
    for name, typed in (device.get("attributes") or {}).items():
        qualified = resolve_name(name, driver)
        for key in kinds:
            if typed.get(key) is not None:
                out[qualified] = typed[key]
                break
    return out


def device_capacity(device: Mapping, driver: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, cap in (device.get("capacity") or {}).items():
        out[resolve_name(name, driver)] = str(cap.get("value"))
    return out
