"""The building blocks of the typed schemas of the files users write (profile, catalog):
pydantic v2 models that refuse unknown keys, and field types whose errors read as the
one-line messages of docs/profile.md (`expected <form>, got <value>`).

A field type checks its value *before* pydantic's own coercion, so `12` for a string is
reported as `expected a non-empty CEL string, got 12`, never silently turned into "12".
`conformance.model.typed_errors` turns the collected errors into `field.path: message` lines.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, ClassVar, Literal, NoReturn

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from conformance.model.schema import describe, parse_duration, suggest

ERROR_TYPE = "dra"  # a custom error carrying its final message


class Strict(BaseModel):
    """A section of a user-written file: unknown keys are errors, keys are the aliases."""

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel)

    # A variant of a union tagged by `method`: how a key of another variant is reported.
    unused_suffix: ClassVar[str] = "; remove it"
    # What a value that is not a mapping is told it should be.
    mapping_form: ClassVar[str] = "a mapping"


class Snake(Strict):
    """A section whose keys are snake_case (the requirements catalog)."""

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=None)


def fail(message: str, *at: str | int) -> NoReturn:
    """Report `message` on this field (or on `at`, a path below it)."""
    raise PydanticCustomError(ERROR_TYPE, "{message}", {"message": message, "at": at})


def wrong(expected: str, value: Any, *at: str | int) -> NoReturn:
    fail(f"expected {expected}, got {describe(value)}", *at)


def missing(expected: str, *at: str | int) -> NoReturn:
    fail(f"required field is missing (expected {expected})", *at)


def _schema(extra: Mapping[str, Any]) -> Any:
    return Field(json_schema_extra=dict(extra)) if extra else Field()


def text(
    form: str = "a non-empty string", pattern: re.Pattern[str] | None = None, **schema: Any
) -> Any:
    """A non-empty string (matching `pattern`); else `expected <form>, got <value>`."""

    def check(value: Any) -> str:
        if (
            not isinstance(value, str)
            or not value.strip()
            or (pattern is not None and not pattern.match(value))
        ):
            wrong(form, value)
        return value

    extra = {"minLength": 1, **({"pattern": pattern.pattern} if pattern else {}), **schema}
    return Annotated[str, BeforeValidator(check), _schema(extra)]


def checked(kind: Any, check: Callable[[Any], Any], schema: Mapping[str, Any] | None = None) -> Any:
    """`kind` as validated by `check` (which calls `fail`), described by `schema` if given."""
    marks: list[Any] = [BeforeValidator(check)]
    if schema is not None:
        marks.append(WithJsonSchema(dict(schema)))
    return Annotated[(kind, *marks)]


def integer(minimum: int = 0) -> Any:
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            wrong(f"an integer >= {minimum}", value)
        return value

    return Annotated[int, BeforeValidator(check), Field(json_schema_extra={"minimum": minimum})]


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        wrong("true or false", value)
    return value


Boolean = Annotated[bool, BeforeValidator(_boolean)]


def choice_message(value: Any, choices: Sequence[str]) -> str:
    expected = "one of " + ", ".join(choices)
    best = suggest(value, choices) if isinstance(value, str) else None
    hint = f" (did you mean '{best}'?)" if best else ""
    return f"expected {expected}, got {describe(value)}{hint}"


def choice(choices: Sequence[str]) -> Any:
    """One of `choices`, with a did-you-mean for a near miss."""

    def check(value: Any) -> str:
        if not (isinstance(value, str) and value in choices):
            fail(choice_message(value, choices))
        return value

    return Annotated[Literal[tuple(choices)], BeforeValidator(check)]  # type: ignore[misc]


def listed(item: Any, form: str, *, nonempty: bool = False) -> Any:
    """A list of `item`s; `expected a list of <form>, got <value>` otherwise."""

    def check(value: Any) -> list[Any]:
        if not isinstance(value, list):
            wrong(f"a list of {form}", value)
        if nonempty and not value:
            wrong(f"a non-empty list of {form}", value)
        return value

    return Annotated[tuple[item, ...], BeforeValidator(check)]


def mapping_of(key: Any, value: Any) -> Any:
    def check(raw: Any) -> Mapping[Any, Any]:
        if not isinstance(raw, Mapping):
            wrong("a mapping", raw)
        return raw

    return Annotated[dict[key, value], BeforeValidator(check)]


def schema_version(version: int) -> Any:
    """A file's `schema:` number, which must be `version` (missing: `got nothing`)."""

    def check(value: Any) -> int:
        if value != version or isinstance(value, bool):
            wrong(str(version), value)
        return value

    return checked(int, check, {"const": version})


DURATION_SCHEMA = {
    "anyOf": [
        {"type": "number", "exclusiveMinimum": 0},
        {"type": "string", "pattern": r"^(\d+h)?(\d+m)?(\d+(\.\d+)?s)?$"},
    ]
}


def duration(form: str) -> Any:
    """Seconds from `90`, `"90s"`, `"5m"`, `"1h30m"`; positive."""

    def check(value: Any) -> float:
        seconds = parse_duration(value)
        if seconds is None or seconds <= 0:
            wrong(form, value)
        return seconds

    return checked(float, check, DURATION_SCHEMA)


def argv(placeholders: Sequence[str]) -> Any:
    """A profile's argv (a list, never a shell line) whose items may use `{placeholder}`s."""
    names = ", ".join("{" + n + "}" for n in placeholders)

    def check(value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not value:
            wrong("a non-empty list of strings (an argv, not a shell line)", value)
        out = []
        for i, item in enumerate(value):
            if isinstance(item, bool) or not isinstance(item, str | int | float):
                wrong("a string", item, i)
            bad = _bad_placeholder(str(item), placeholders)
            if bad is not None:
                fail(f"{bad}; placeholders are {names} (write {{{{ and }}}} for literal braces)", i)
            out.append(str(item))
        return tuple(out)

    schema = {"type": "array", "minItems": 1, "items": {"type": ["string", "number"]}}
    return checked(tuple[str, ...], check, schema)


def _bad_placeholder(text: str, placeholders: Sequence[str]) -> str | None:
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
    except ValueError as exc:
        return f"not a valid template ({exc})"
    for name in fields:
        if name not in placeholders:
            return f"unknown placeholder {{{name}}}"
    return None


def regex(form: str = "a regular expression", prepare: Callable[[str], str] = str) -> Any:
    """A regular expression Python compiles (after `prepare`, e.g. a token filled in)."""

    def check(value: Any) -> str:
        if not isinstance(value, str) or not value:
            wrong(form, value)
        try:
            re.compile(prepare(value))
        except re.error as exc:
            fail(f"not a valid regular expression: {exc}")
        return value

    return Annotated[str, BeforeValidator(check), Field(json_schema_extra={"format": "regex"})]


def absolute_path(form: str = "an absolute path inside the container") -> Any:
    return text(form, re.compile(r"^/"))


def string_argv(form: str) -> Any:
    """A non-empty argv of non-empty strings, no placeholders (run inside a container)."""

    def check(value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(a, str) and a for a in value):
            wrong(form, value)
        if not value:
            wrong(form, value)
        return tuple(value)

    schema = {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}
    return checked(tuple[str, ...], check, schema)
