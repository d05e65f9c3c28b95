"""CEL helpers for device selectors: references to attributes/capacity, and a deliberately tiny
evaluator for the `==` (and `!=`) conjunctions profiles commonly use.

The evaluator is NOT a CEL implementation. It recognises only
`<ref> == <literal> [&& <ref> != <literal> ...]` where `<ref>` is `device.driver` or
`device.attributes["<domain>"].<id>` and `<literal>` is a string, integer or bool, and answers
None ("cannot tell") for anything else. Callers must treat None as unknown, never as a match.
The API server remains the authority: compile errors come from a server-side dry run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

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


# --- the tiny evaluator -------------------------------------------------------------------

_TOKEN_RE = re.compile(
    r"""\s*(?:
        (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
      | (?P<int>-?\d+)(?![\w.])
      | (?P<op>==|!=|&&|[.\[\]()])
      | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<other>\S+)
    )""",
    re.VERBOSE,
)


def _tokens(expression: str) -> list[tuple[str, str]] | None:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(expression):
        if expression[pos:].strip() == "":
            break
        m = _TOKEN_RE.match(expression, pos)
        if not m or m.lastgroup == "other":
            return None
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def _unquote(token: str) -> str:
    return re.sub(r"\\(.)", r"\1", token[1:-1])


@dataclass(frozen=True)
class EqualityTerm:
    """`ref == value` (`ref != value` when `negated`); `attribute` is a qualified name, or
    None for `device.driver`."""

    attribute: str | None
    value: Scalar
    negated: bool = False


@dataclass(frozen=True)
class SimpleSelector:
    terms: tuple[EqualityTerm, ...]

    def matches(self, driver: str, attributes: Mapping[str, Scalar]) -> bool:
        """`attributes` keyed by qualified name. A missing attribute is a non-match (in CEL
        it is an evaluation error, which the scheduler does not count as a match either)."""
        for term in self.terms:
            actual = driver if term.attribute is None else attributes.get(term.attribute)
            if actual is None:
                return False
            # bool is an int in Python; CEL never equates true with 1.
            equal = type(actual) is type(term.value) and actual == term.value
            if equal == term.negated:
                return False
        return True


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.pos = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, kind: str, text: str | None = None) -> str | None:
        tok = self.peek()
        if tok is None or tok[0] != kind or (text is not None and tok[1] != text):
            return None
        self.pos += 1
        return tok[1]

    def conjunction(self) -> list[EqualityTerm] | None:
        terms: list[EqualityTerm] = []
        while True:
            if self.take("op", "("):
                inner = self.conjunction()
                if inner is None or not self.take("op", ")"):
                    return None
                terms.extend(inner)
            else:
                term = self.comparison()
                if term is None:
                    return None
                terms.append(term)
            if not self.take("op", "&&"):
                return terms

    def comparison(self) -> EqualityTerm | None:
        start = self.pos
        ref = self.reference()
        if ref is not False:
            negated = self.operator()
            if negated is None:
                return None
            value = self.literal()
            return None if value is None else EqualityTerm(ref, value, negated)
        self.pos = start
        value = self.literal()
        negated = self.operator() if value is not None else None
        if negated is None:
            return None
        ref = self.reference()
        return None if ref is False else EqualityTerm(ref, value, negated)

    def operator(self) -> bool | None:
        """False for `==`, True for `!=`, None for anything else."""
        if self.take("op", "=="):
            return False
        return True if self.take("op", "!=") else None

    def reference(self) -> str | None | bool:
        """Qualified attribute name, None for device.driver, False if not a reference."""
        if not (self.take("ident", "device") and self.take("op", ".")):
            return False
        field = self.take("ident")
        if field == "driver":
            return None
        if field != "attributes" or not self.take("op", "["):
            return False
        domain = self.take("str")
        if domain is None or not self.take("op", "]"):
            return False
        if self.take("op", "."):
            ident = self.take("ident")
        elif self.take("op", "["):
            key = self.take("str")
            ident = _unquote(key) if key is not None and self.take("op", "]") else None
        else:
            ident = None
        return False if ident is None else f"{_unquote(domain)}/{ident}"

    def literal(self) -> Scalar | None:
        tok = self.peek()
        if tok is None:
            return None
        kind, text = tok
        if kind == "str":
            self.pos += 1
            return _unquote(text)
        if kind == "int":
            self.pos += 1
            return int(text)
        if kind == "ident" and text in ("true", "false"):
            self.pos += 1
            return text == "true"
        return None


def parse_simple_selector(expression: str) -> SimpleSelector | None:
    """The expression as a conjunction of equalities, or None when it is anything else."""
    tokens = _tokens(expression)
    if not tokens:
        return None
    parser = _Parser(tokens)
    terms = parser.conjunction()
    if terms is None or parser.peek() is not None:
        return None
    return SimpleSelector(tuple(terms))


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
