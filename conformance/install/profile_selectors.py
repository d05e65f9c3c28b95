"""The profile's selectors checked by the exact CEL evaluator (conformance.cel): do they
compile, and, against a driver's devices (a cluster's slices or a dump of them), which kinds
match nothing, which overlap (naming the devices both match), which matchAttributes and
capacity names no device has, and which fail to evaluate on a device (the allocator then
fails the allocation rather than skipping the device). Shared by `profile check` offline,
`--slices` and live.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Literal

from conformance.cel.selection import selection
from conformance.model.devices import PublishedDevice, class_expressions
from conformance.model.profile import ManifestsInstall, Profile

Severity = Literal["error", "warning", "note"]

SHOWN_DEVICES = 5  # devices named in an overlap; the rest are counted


@dataclass(frozen=True)
class Problem:
    field: str  # the profile field concerned, e.g. "selectors.large.expression"
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        return f"{self.severity}: {self.field}: {self.message}"


def selector_expressions(profile: Profile) -> list[tuple[str, str, str]]:
    """(field, DeviceClass, expression) of every selector the profile writes: its selectors
    and the partitionableDevices sides that carry an expression."""
    out = [(f"selectors.{n}", s.device_class, s.expression) for n, s in profile.selectors.items()]
    block = profile.partitionable
    if block is not None:
        out += [
            (f"partitionableDevices.{side}", choice.device_class, choice.expression)
            for side, choice in (("whole", block.whole), ("partition", block.partition))
            if choice.expression
        ]
    return out


def shipped_classes(profile: Profile) -> dict[str, Mapping]:
    """The DeviceClasses in the profile's manifests (none for Helm or preinstalled drivers:
    their classes are only known on a cluster)."""
    if not isinstance(profile.install, ManifestsInstall):
        return {}
    from conformance.install.manifests import manifest_files, render_documents

    documents = render_documents(manifest_files(profile.install.paths), "image")
    return {d["metadata"]["name"]: d for d in documents if d.get("kind") == "DeviceClass"}


def _describe(problem: Any) -> str:
    where = ""
    if problem.line is not None:
        where = f" (line {problem.line}, column {problem.column})"
    lines = problem.message.strip().splitlines() or [""]
    return "\n".join([f"the API server would reject it{where}: {lines[0]}", *lines[1:]])


def compile_problems(
    profile: Profile, evaluator: Any, classes: Mapping[str, Mapping] = {}
) -> list[Problem]:
    """Every selector of the profile, and of the DeviceClasses it ships, compiled as the API
    server compiles it; a problem per expression it would reject, with the position."""
    targets = [(f"{f}.expression", e) for f, _, e in selector_expressions(profile)]
    for name, cls in classes.items():
        targets += [
            (f"install.manifests: DeviceClass {name} selector #{i}", e)
            for i, e in enumerate(class_expressions(cls))
        ]
    verdicts = evaluator.compile([e for _, e in targets])
    return [
        Problem(field, _describe(verdict))
        for (field, _), verdict in zip(targets, verdicts, strict=True)
        if verdict is not None
    ]


def rejected_selectors(problems: Sequence[Problem]) -> set[str]:
    """The selector fields (`selectors.x`, `partitionableDevices.whole`) a compile problem
    names: they are not evaluated against devices."""
    return {p.field.rsplit(".", 1)[0] for p in problems if p.field.endswith(".expression")}


def device_problems(
    profile: Profile,
    devices: Sequence[PublishedDevice],
    classes: Mapping[str, Mapping],
    rejected: Collection[str] = (),
) -> list[Problem]:
    """Kinds that match none of `devices`, kinds that share devices, and matchAttributes,
    capacity and verification names no device has. A selector whose class is not in
    `classes` or that is `rejected` was reported already and is left out."""
    return _match_problems(profile, devices, classes, rejected) + _name_problems(profile, devices)


def _match_problems(
    profile: Profile,
    devices: Sequence[PublishedDevice],
    classes: Mapping[str, Mapping],
    rejected: Collection[str],
) -> list[Problem]:
    problems: list[Problem] = []
    matched: dict[str, frozenset[str]] = {}
    for field, class_name, expression in selector_expressions(profile):
        cls = classes.get(class_name)
        if cls is None or field in rejected:
            continue
        ids, erring = selection(class_expressions(cls) + [expression], devices, profile.driver)
        if erring:
            first = sorted(erring)[0]
            more = f" and {len(erring) - 1} more" if len(erring) > 1 else ""
            problems.append(
                Problem(
                    field,
                    f"fails to evaluate on {first}{more}: the scheduler fails the whole "
                    "allocation on a node with such a device rather than skipping it: "
                    f"{erring[first]}",
                )
            )
        if not ids:
            problems.append(
                Problem(
                    field,
                    f"matches none of the {len(devices)} published devices "
                    f"(with the selectors of DeviceClass {class_name})",
                )
            )
        elif field.startswith("selectors."):
            matched[field.split(".", 1)[1]] = ids
    for a, b in combinations(sorted(matched), 2):
        both = sorted(matched[a] & matched[b])
        if both:
            shown = ", ".join(both[:SHOWN_DEVICES])
            more = f" and {len(both) - SHOWN_DEVICES} more" if len(both) > SHOWN_DEVICES else ""
            problems.append(
                Problem(
                    f"selectors.{b}",
                    f"selectors {a} and {b} both match {len(both)} device(s): {shown}{more}; "
                    "selectors must pick disjoint kinds of device",
                )
            )
    return problems


def _name_problems(profile: Profile, devices: Sequence[PublishedDevice]) -> list[Problem]:
    problems = []
    for i, attribute in enumerate(profile.match_attributes):
        if not any(attribute in d.attributes for d in devices):
            problems.append(
                Problem(f"matchAttributes[{i}]", f"no published device has attribute {attribute}")
            )
    if profile.capacity and not any(profile.capacity in d.capacity for d in devices):
        problems.append(Problem("capacity", f"no published device has capacity {profile.capacity}"))
    attribute = profile.verification.attribute
    if attribute:
        missing = [d.id for d in devices if attribute not in d.attributes]
        if missing:
            problems.append(
                Problem(
                    "verification.value",
                    f"{len(missing)} published device(s) lack attribute {attribute} "
                    f"(e.g. {missing[0]}), so the container cannot be checked for them",
                )
            )
    return problems
