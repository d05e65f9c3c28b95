"""pydantic's validation errors as the `field.path: message` lines users get.

Each error's location is walked down the model it came from: that gives the path as the user
wrote it (aliases, `[i]` for list items, no union tags), the field's description (what a
missing field should hold) and, for an unknown key, the keys the section does take, from which
the did-you-mean is built.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Union

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from conformance.model.schema import describe, join, suggest
from conformance.model.typed import ERROR_TYPE, choice_message


@dataclass
class _Place:
    path: str = ""
    kind: Any = None  # the type at this place (a model class, a union, ...)
    field: FieldInfo | None = None  # the field holding it, when in a model
    variants: tuple[type[BaseModel], ...] = ()  # when a variant of a tagged union
    tag: str | None = None


def _unwrap(kind: Any) -> Any:
    """The type without Annotated and without None (Optional)."""
    while typing.get_origin(kind) is typing.Annotated:
        kind = typing.get_args(kind)[0]
    if typing.get_origin(kind) in (Union, types.UnionType):
        members = [a for a in typing.get_args(kind) if a is not type(None)]
        if len(members) == 1:
            return _unwrap(members[0])
        return Union[tuple(_unwrap(m) for m in members)]  # noqa: UP007 - built at run time
    return kind


def _models(kind: Any) -> tuple[type[BaseModel], ...]:
    """The models of a union of models (the variants of a tagged union)."""
    if typing.get_origin(kind) in (Union, types.UnionType):
        members = typing.get_args(kind)
        if all(isinstance(m, type) and issubclass(m, BaseModel) for m in members):
            return members
    return ()


def tag_of(model: type[BaseModel], discriminator: str = "method") -> str | None:
    field = model.model_fields.get(discriminator)
    if field is None or typing.get_origin(_unwrap(field.annotation)) is not Literal:
        return None
    return typing.get_args(_unwrap(field.annotation))[0]


def aliases(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items() if not f.exclude]


def _field(model: type[BaseModel], key: Any) -> tuple[str, FieldInfo | None]:
    """The key as the user writes it, and its field (a default's error names the field)."""
    for name, field in model.model_fields.items():
        if key in (field.alias or name, name):
            return field.alias or name, field
    return key, None


def _walk(root: type[BaseModel], loc: Sequence[Any]) -> _Place:
    place = _Place(kind=root)
    for part in loc:
        kind = _unwrap(place.kind)
        if part == "[key]":
            continue
        variants = _models(kind)
        if variants and isinstance(part, str):
            chosen = [v for v in variants if tag_of(v) == part]
            if chosen:
                place = _Place(place.path, chosen[0], place.field, variants, part)
                continue
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            key, field = _field(kind, part)
            place = _Place(join(place.path, key), field.annotation if field else None, field)
            continue
        origin, args = typing.get_origin(kind), typing.get_args(kind)
        inner = None
        if origin in (dict, Mapping) and len(args) == 2:
            inner = args[1]
        elif origin in (list, tuple) and args:
            inner = args[0]
        place = _Place(join(place.path, part), inner)
    return place


def _unknown_key(root: type[BaseModel], loc: Sequence[Any]) -> str:
    parent = _walk(root, loc[:-1])
    key = loc[-1]
    model = _unwrap(parent.kind)
    own = aliases(model) if isinstance(model, type) and issubclass(model, BaseModel) else []
    every = list(dict.fromkeys(k for v in parent.variants for k in aliases(v))) or own
    if key in every and key not in own and parent.tag is not None:
        return f"not used by method {parent.tag}{model.unused_suffix}"
    best = suggest(str(key), every)
    return (
        f"unknown field; did you mean '{best}'?"
        if best
        else ("unknown field; expected one of: " + ", ".join(every))
    )


def _tag_problem(root: type[BaseModel], error: Mapping[str, Any]) -> tuple[str, str]:
    """A tagged union's missing or unknown `method`."""
    place = _walk(root, error["loc"])
    name = str(error.get("ctx", {}).get("discriminator", "'method'")).strip("'")
    tags = [t for t in (tag_of(v, name) for v in _models(_unwrap(place.kind))) if t]
    path = join(place.path, name)
    if error["type"] == "union_tag_not_found":
        return path, f"required field is missing (expected one of {', '.join(tags)})"
    given = error["input"].get(name) if isinstance(error["input"], Mapping) else None
    return path, choice_message(given, tags)


def _problem(root: type[BaseModel], error: Mapping[str, Any]) -> tuple[str, str]:
    kind, loc = error["type"], tuple(error["loc"])
    if kind == ERROR_TYPE:
        ctx = error["ctx"]
        return _walk(root, loc + tuple(ctx.get("at", ()))).path, ctx["message"]
    if kind == "extra_forbidden":  # the key as written, even when it is a field's own name
        return join(_walk(root, loc[:-1]).path, loc[-1]), _unknown_key(root, loc)
    if kind in ("union_tag_not_found", "union_tag_invalid"):
        return _tag_problem(root, error)
    place = _walk(root, loc)
    if kind == "missing":
        form = place.field.description if place.field else None
        return place.path, "required field is missing" + (f" (expected {form})" if form else "")
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        form = getattr(_unwrap(place.kind), "mapping_form", "a mapping")
        return place.path, f"expected {form}, got {describe(error['input'])}"
    return place.path, f"{error['msg']}, got {describe(error['input'])}"


def problems_of(exc: ValidationError, root: type[BaseModel]) -> list[str]:
    """`path: message` lines, an unknown key before the other problems of its section (a
    misspelt key explains the missing one), otherwise in the document's order."""
    found: list[tuple[tuple[Any, ...], bool, str]] = []
    for error in exc.errors():
        path, message = _problem(root, error)
        line = f"{path}: {message}" if path else message
        if line not in (f[2] for f in found):
            found.append((tuple(error["loc"]), error["type"] == "extra_forbidden", line))
    ordered: list[tuple[tuple[Any, ...], bool, str]] = []
    for entry in found:
        loc, unknown, _ = entry
        if unknown:
            parent = loc[:-1]
            at = next(
                (i for i, e in enumerate(ordered) if e[0][: len(parent)] == parent and not e[1]),
                len(ordered),
            )
            ordered.insert(at, entry)
        else:
            ordered.append(entry)
    return [line for _, _, line in ordered]
