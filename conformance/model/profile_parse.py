"""Reading a profile document: one method per section, every problem named by its field
path (docs/profile.md). The typed result is conformance.model.profile's `Profile`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conformance.model.capabilities import CAPABILITIES, FAULT_ABILITIES
from conformance.model.cdi_paths import SECTION as CDI_SECTION
from conformance.model.cdi_paths import parse_cdi_paths
from conformance.model.cel import attribute_name_problem, resolve_name
from conformance.model.consumable_capacity import parse_consumable_capacity
from conformance.model.fault_config import FaultsConfig, parse_faults
from conformance.model.frozen import FrozenMap
from conformance.model.node_commands import parse_node_commands
from conformance.model.opaque_config import parse_opaque_config
from conformance.model.partitionable import SECTION as PARTITIONABLE_SECTION
from conformance.model.partitionable import parse_partitionable
from conformance.model.profile import (
    API_VERSION,
    DEFAULT_KIND,
    DEFAULT_NODE_SELECTOR,
    DEFAULT_TIMEOUTS,
    EXTENDED_RESOURCE_KIND,
    KIND,
    ExtendedResource,
    Install,
    Profile,
    ProfileError,
    Readiness,
    Selector,
    Timeouts,
    Verification,
)
from conformance.model.profile_install import InstallSection
from conformance.model.profile_verification import VerificationSection
from conformance.model.schema import (
    DNS_LABEL_RE,
    DNS_SUBDOMAIN_RE,
    Problems,
    describe,
    join,
    parse_duration,
    read_document,
    suggest,
)

_TOP_KEYS = (
    "apiVersion",
    "kind",
    "driver",
    "nodes",
    "deviceClasses",
    "selectors",
    "install",
    "readiness",
    "matchAttributes",
    "capacity",
    "verification",
    "capabilities",
    "extendedResource",
    "faults",
    "timeouts",
    "opaqueConfig",
    "nodeCommands",
    PARTITIONABLE_SECTION,
    "consumableCapacity",
    CDI_SECTION,
)
_REQUIRED_TOP = ("apiVersion", "kind", "driver", "deviceClasses", "install", "verification")

_EXTENDED_RESOURCE_RE = re.compile(
    r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
# name[:tag][@digest], the name's first part possibly a registry host[:port].
_IMAGE_REF_RE = re.compile(
    r"^[a-z0-9]([a-z0-9._-]*[a-z0-9])?(:[0-9]+)?(/[a-z0-9]([a-z0-9._-]*[a-z0-9])?)*"
    r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[0-9a-f]{64})?$"
)


def load_profile(path: str | Path) -> Profile:
    """Read and validate a profile; raises ProfileError naming every bad field."""
    document = read_document(path, ProfileError)
    return parse_profile(document, source=Path(path), shown=str(path))


def parse_profile(document: Any, *, source: Path, shown: str | None = None) -> Profile:
    """Validate an already parsed document (relative paths resolve against `source`)."""
    shown = shown or str(source)
    p = Problems()
    if not isinstance(document, Mapping):
        raise ProfileError(
            shown, [f"expected a mapping at the top level, got {describe(document)}"]
        )
    p.mapping("", document, _TOP_KEYS)
    for key in _REQUIRED_TOP:
        if key not in document:
            p.missing(key, _TOP_FORMS[key])
    builder = _Builder(p, source.resolve().parent)
    if "apiVersion" in document and document["apiVersion"] != API_VERSION:
        p.wrong("apiVersion", f"'{API_VERSION}'", document["apiVersion"])
    if "kind" in document and document["kind"] != KIND:
        p.wrong("kind", f"'{KIND}'", document["kind"])
    driver = (
        p.string("driver", document["driver"], _DRIVER_FORM, DNS_SUBDOMAIN_RE)
        if ("driver" in document)
        else None
    )
    if driver and len(driver) > 63:
        p.wrong("driver", _DRIVER_FORM, driver)
        driver = None
    node_selector = builder.nodes(document.get("nodes"))
    classes = builder.device_classes(document.get("deviceClasses"))
    default_class = classes.get(DEFAULT_KIND) if classes else None
    selectors = builder.selectors(document.get("selectors"), default_class)
    install = builder.install(document.get("install"))
    readiness = builder.readiness(document.get("readiness"))
    match_attributes = builder.match_attributes(document.get("matchAttributes"), driver)
    capacity = builder.capacity(document.get("capacity"), driver)
    verification = builder.verification(document.get("verification"), driver)
    capabilities = builder.capabilities(document.get("capabilities"))
    extended = builder.extended_resource(document.get("extendedResource"))
    faults = builder.faults(document.get("faults"))
    node_commands = parse_node_commands(p, document.get("nodeCommands"))
    timeouts = builder.timeouts(document.get("timeouts"))
    opaque = (
        parse_opaque_config(p, document["opaqueConfig"]) if "opaqueConfig" in document else None
    )
    if "opaque-config" in capabilities and "opaqueConfig" not in document:
        p.add(
            "opaqueConfig",
            "required when capabilities lists opaque-config (expected {class: <object>, "
            "claim: <object>, expect: {method: env|file|command, shows: [regex, ...]}})",
        )

    partitionable = parse_partitionable(p, document, capabilities)
    if (
        "extended-resource" in capabilities
        and extended is None
        and "extendedResource" not in (document)
    ):
        p.add(
            "extendedResource",
            "required when capabilities lists extended-resource "
            "(expected {name: <resource name>, class: <device class>})",
        )
    if extended is not None and "extended-resource" not in capabilities:
        p.add(
            "capabilities",
            "must list extended-resource when extendedResource is set (or remove extendedResource)",
        )
    consumable = (
        parse_consumable_capacity(p, document["consumableCapacity"], driver)
        if "consumableCapacity" in document
        else None
    )
    cdi = parse_cdi_paths(p, document.get(CDI_SECTION))
    if p.items:
        raise ProfileError(shown, p.items)
    assert driver and classes and install and verification  # guaranteed when no problems
    return Profile(
        source=source.resolve(),
        driver=driver,
        node_selector=node_selector,
        device_classes=FrozenMap(classes),
        selectors=FrozenMap(selectors),
        install=install,
        readiness=readiness,
        match_attributes=match_attributes,
        capacity=capacity,
        verification=verification,
        capabilities=capabilities,
        extended_resource=extended,
        faults=faults,
        timeouts=timeouts,
        opaque_config=opaque,
        node_commands=node_commands,
        partitionable=partitionable,
        consumable_capacity=consumable,
        cdi=cdi,
    )


_DRIVER_FORM = "a driver name (a DNS subdomain of at most 63 characters)"
_CLASS_FORM = "a DeviceClass name (a DNS subdomain)"
_TOP_FORMS = {
    "apiVersion": f"'{API_VERSION}'",
    "kind": f"'{KIND}'",
    "driver": _DRIVER_FORM,
    "deviceClasses": "a mapping with at least {default: <DeviceClass name>}",
    "install": "{method: manifests|helm|preinstalled, ...}",
    "verification": "{method: env|file|command, value: ..., ...}",
}


class _Builder:
    """One method per profile section: validate it, return the typed value (or a default)."""

    def __init__(self, problems: Problems, base_dir: Path) -> None:
        self.p = problems
        self.base_dir = base_dir
        self.install_section = InstallSection(problems, base_dir)

    def nodes(self, value: Any) -> str:
        if value is None:
            return DEFAULT_NODE_SELECTOR
        section = self.p.mapping("nodes", value, ("selector",))
        if section is None or "selector" not in section:
            if section is not None:
                self.p.missing("nodes.selector", "a label selector such as 'pool=gpu'")
            return DEFAULT_NODE_SELECTOR
        return (
            self.p.string(
                "nodes.selector", section["selector"], "a label selector such as 'pool=gpu'"
            )
            or DEFAULT_NODE_SELECTOR
        )

    def device_classes(self, value: Any) -> dict[str, str] | None:
        if value is None:
            return None
        section = self.p.string_map("deviceClasses", value)
        if section is None:
            return None
        out: dict[str, str] = {}
        for key, name in section.items():
            path = join("deviceClasses", str(key))
            if not isinstance(key, str) or not DNS_LABEL_RE.match(key):
                self.p.add(path, "expected a lower-case key such as 'default' or 'fpga'")
                continue
            checked = self.p.string(path, name, _CLASS_FORM, DNS_SUBDOMAIN_RE)
            if checked:
                out[key] = checked
        if DEFAULT_KIND not in section:
            self.p.missing("deviceClasses.default", _CLASS_FORM)
        return out

    def selectors(self, value: Any, default_class: str | None) -> dict[str, Selector]:
        if value is None:
            return {}
        section = self.p.string_map("selectors", value)
        if section is None:
            return {}
        out: dict[str, Selector] = {}
        for name, body in section.items():
            path = join("selectors", str(name))
            if not isinstance(name, str) or not DNS_LABEL_RE.match(name):
                self.p.add(path, "expected a selector name that is a DNS label (e.g. 'large')")
                continue
            if name in (DEFAULT_KIND, EXTENDED_RESOURCE_KIND):
                self.p.add(path, f"'{name}' is reserved; choose another selector name")
                continue
            entry = self.p.mapping(path, body, ("expression", "class"))
            if entry is None:
                continue
            if "expression" not in entry:
                self.p.missing(join(path, "expression"), "a non-empty CEL string")
                continue
            expression = self.p.string(
                join(path, "expression"), entry["expression"], "a non-empty CEL string"
            )
            device_class = default_class
            if "class" in entry:
                device_class = self.p.string(
                    join(path, "class"), entry["class"], _CLASS_FORM, DNS_SUBDOMAIN_RE
                )
            if expression and device_class:
                out[name] = Selector(name, expression, device_class)
        return out

    def install(self, value: Any) -> Install | None:
        return self.install_section.install(value)

    def readiness(self, value: Any) -> Readiness:
        if value is None:
            return Readiness(None, None, 1)
        section = self.p.mapping("readiness", value, ("daemonSet", "slicesPerNode"))
        if section is None:
            return Readiness(None, None, 1)
        name = namespace = image = container = None
        if "daemonSet" in section:
            ds = self.p.mapping(
                "readiness.daemonSet", section["daemonSet"], ("name", "namespace", "update")
            )
            if ds is not None:
                for key in ("name", "namespace"):
                    if key not in ds:
                        self.p.missing(join("readiness.daemonSet", key), "a DNS label")
                name = (
                    self.p.string(
                        "readiness.daemonSet.name",
                        ds.get("name", ""),
                        "a DaemonSet name",
                        DNS_SUBDOMAIN_RE,
                    )
                    if "name" in ds
                    else None
                )
                namespace = (
                    self.p.string(
                        "readiness.daemonSet.namespace",
                        ds.get("namespace", ""),
                        "a namespace name",
                        DNS_LABEL_RE,
                    )
                    if "namespace" in ds
                    else None
                )
                if "update" in ds:
                    image, container = self.daemonset_update(ds["update"])
        slices = 1
        if "slicesPerNode" in section:
            slices = self.p.integer("readiness.slicesPerNode", section["slicesPerNode"]) or 0
        return Readiness(name, namespace, slices, image, container)

    def daemonset_update(self, value: Any) -> tuple[str | None, str | None]:
        """`readiness.daemonSet.update: {image, container}`: the second image DRA-UPD-001
        rolls out, and the container to set it on (default: the first)."""
        path = "readiness.daemonSet.update"
        section = self.p.mapping(path, value, ("image", "container"))
        if section is None:
            return None, None
        image = container = None
        if "image" not in section:
            self.p.missing(join(path, "image"), "an image reference")
        else:
            image = self.p.string(
                join(path, "image"), section["image"], "an image reference", _IMAGE_REF_RE
            )
        if "container" in section:
            container = self.p.string(
                join(path, "container"), section["container"], "a container name", DNS_LABEL_RE
            )
        return image, container

    def qualified(self, path: str, value: Any, driver: str | None) -> str | None:
        """An attribute or capacity name, fully qualified: `<name>` is in the driver's
        domain, as the API takes an unqualified name in a slice (docs/profile.md)."""
        form = "an attribute name <domain>/<identifier> or <identifier>, e.g. gpu.example.com/model"
        if not isinstance(value, str) or attribute_name_problem(value):
            self.p.wrong(path, form, value)
            return None
        return resolve_name(value, driver) if driver else value

    def match_attributes(self, value: Any, driver: str | None) -> tuple[str, ...]:
        if value is None:
            return ()
        items = self.p.list_of("matchAttributes", value, "attribute names")
        out = [
            self.qualified(join("matchAttributes", i), v, driver) for i, v in enumerate(items or [])
        ]
        return tuple(v for v in out if v)

    def capacity(self, value: Any, driver: str | None) -> str | None:
        return None if value is None else self.qualified("capacity", value, driver)

    def verification(self, value: Any, driver: str | None) -> Verification | None:
        return VerificationSection(self.p).verification(value, driver)

    def capabilities(self, value: Any) -> frozenset[str]:
        if value is None:
            return frozenset()
        items = self.p.list_of("capabilities", value, "capability names")
        out: set[str] = set()
        for i, item in enumerate(items or []):
            path = join("capabilities", i)
            if not isinstance(item, str):
                self.p.wrong(path, "a capability name", item)
            elif item in FAULT_ABILITIES:
                self.p.add(
                    path,
                    f"'{item}' is a fault ability now, not a driver feature: remove it and "
                    f"configure faults.{FAULT_ABILITIES[item]} (docs/profile.md, Faults)",
                )
            elif item not in CAPABILITIES:
                best = suggest(item, sorted(CAPABILITIES))
                hint = (
                    f"did you mean '{best}'?"
                    if best
                    else "known: " + ", ".join(sorted(CAPABILITIES))
                )
                self.p.add(path, f"unknown capability '{item}'; {hint}")
            elif item in out:
                self.p.add(path, f"'{item}' is listed twice")
            else:
                out.add(item)
        return frozenset(out)

    def extended_resource(self, value: Any) -> ExtendedResource | None:
        if value is None:
            return None
        section = self.p.mapping("extendedResource", value, ("name", "class"))
        if section is None:
            return None
        for key, form in (
            ("name", "an extended resource name such as example.com/gpu"),
            ("class", _CLASS_FORM),
        ):
            if key not in section:
                self.p.missing(join("extendedResource", key), form)
        if "name" not in section or "class" not in section:
            return None
        name = self.p.string(
            "extendedResource.name",
            section["name"],
            "an extended resource name such as example.com/gpu",
            _EXTENDED_RESOURCE_RE,
        )
        cls = self.p.string(
            "extendedResource.class", section["class"], _CLASS_FORM, DNS_SUBDOMAIN_RE
        )
        return ExtendedResource(name, cls) if name and cls else None

    def faults(self, value: Any) -> FaultsConfig:
        return parse_faults(self.p, value)

    def timeouts(self, value: Any) -> Timeouts:
        if value is None:
            return Timeouts()
        section = self.p.mapping("timeouts", value, tuple(DEFAULT_TIMEOUTS))
        values = dict(DEFAULT_TIMEOUTS)
        for key, raw in (section or {}).items():
            if key not in DEFAULT_TIMEOUTS:
                continue
            seconds = parse_duration(raw)
            if seconds is None or seconds <= 0:
                self.p.wrong(
                    join("timeouts", key),
                    "a positive duration in seconds (90) or with units (90s, 5m, 1m30s)",
                    raw,
                )
            else:
                values[key] = seconds
        return Timeouts(FrozenMap(values))
