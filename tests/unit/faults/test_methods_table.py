"""The fault methods are named once (conformance.model.fault_config.METHODS, for the profile's
validation); the registry's injector factories and the profile schema's spec classes must cover
exactly those names, since the model cannot import the injectors it names."""

from __future__ import annotations

from typing import get_args

from conformance.faults.registry import INJECTOR_FACTORIES
from conformance.model.fault_config import METHODS, Spec


def _schema_methods() -> set[str]:
    union = get_args(Spec)[0]  # Annotated[A | B | ..., Field(discriminator="method")]
    return {get_args(cls.model_fields["method"].annotation)[0] for cls in get_args(union)}


def missing(names: set[str], table: set[str]) -> str:
    """The methods named but without an entry, and the entries no method names (or "")."""
    parts = []
    if names - table:
        parts.append(f"without an entry: {sorted(names - table)}")
    if table - names:
        parts.append(f"not a method: {sorted(table - names)}")
    return "; ".join(parts)


def test_every_method_has_an_injector_factory_and_nothing_else_does() -> None:
    problem = missing(set(METHODS), set(INJECTOR_FACTORIES))
    assert not problem, f"conformance.faults.registry.INJECTOR_FACTORIES: {problem}"


def test_every_method_has_a_spec_class_in_the_profile_schema() -> None:
    problem = missing(set(METHODS), _schema_methods())
    assert not problem, f"conformance.model.fault_config.Spec: {problem}"


def test_a_method_in_one_table_only_is_named() -> None:
    assert missing({"command", "exec"}, {"command", "ssh"}) == (
        "without an entry: ['exec']; not a method: ['ssh']"
    )
    assert missing({"command"}, {"command"}) == ""
