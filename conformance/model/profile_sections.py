"""The smaller sections of the profile (docs/profile.md): nodes, device classes, selectors,
readiness, capabilities, the extended resource and the timeouts, as typed schemas."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, Field, create_model

from conformance.model.capabilities import CAPABILITIES, FAULT_ABILITIES
from conformance.model.profile import (
    DEFAULT_KIND,
    DEFAULT_TIMEOUTS,
    EXTENDED_RESOURCE_KIND,
    ExtendedResource,
    Readiness,
)
from conformance.model.profile_types import (
    CLASS_FORM,
    IMAGE_REF_RE,
    DeviceClassName,
    qualified_name,
)
from conformance.model.schema import DNS_LABEL_RE, DNS_SUBDOMAIN_RE, suggest
from conformance.model.typed import (
    Strict,
    checked,
    duration,
    fail,
    integer,
    listed,
    mapping_of,
    missing,
    text,
    wrong,
)

_SELECTOR_FORM = "a label selector such as 'pool=gpu'"

LabelSelector = text(_SELECTOR_FORM)


class NodesSection(Strict):
    selector: LabelSelector = Field(description=_SELECTOR_FORM)


def _class_key(key: Any) -> str:
    if not isinstance(key, str) or not DNS_LABEL_RE.match(key):
        fail("expected a lower-case key such as 'default' or 'fpga'")
    return key


def _has_default(classes: dict[str, str]) -> dict[str, str]:
    if DEFAULT_KIND not in classes:
        missing(CLASS_FORM, DEFAULT_KIND)
    return classes


ClassKey = checked(str, _class_key, {"type": "string", "pattern": DNS_LABEL_RE.pattern})
DeviceClasses = Annotated[mapping_of(ClassKey, DeviceClassName), AfterValidator(_has_default)]


def _selector_name(name: Any) -> str:
    if not isinstance(name, str) or not DNS_LABEL_RE.match(name):
        fail("expected a selector name that is a DNS label (e.g. 'large')")
    if name in (DEFAULT_KIND, EXTENDED_RESOURCE_KIND):
        fail(f"'{name}' is reserved; choose another selector name")
    return name


SelectorName = checked(str, _selector_name, {"type": "string", "pattern": DNS_LABEL_RE.pattern})
_CEL_FORM = "a non-empty CEL string"

CelExpression = text(_CEL_FORM)


class SelectorSection(Strict):
    expression: CelExpression = Field(description=_CEL_FORM)
    class_: DeviceClassName | None = Field(
        None, alias="class", description="the DeviceClass (default: deviceClasses.default)"
    )


Selectors = mapping_of(SelectorName, SelectorSection)


ImageRef = text("an image reference", IMAGE_REF_RE)
ContainerName = text("a container name", DNS_LABEL_RE)
DaemonSetName = text("a DaemonSet name", DNS_SUBDOMAIN_RE)
NamespaceName = text("a namespace name", DNS_LABEL_RE)
Count = integer(0)


class UpdateSection(Strict):
    """The second image DRA-UPD-001 rolls out, and the container to set it on."""

    image: ImageRef = Field(description="an image reference")
    container: ContainerName | None = Field(
        None, description="the container to update (default: the first)"
    )


class DaemonSetSection(Strict):
    name: DaemonSetName = Field(description="a DNS label")
    namespace: NamespaceName = Field(description="a DNS label")
    update: UpdateSection | None = Field(None, description="{image, container}")


class ReadinessSection(Strict):
    daemon_set: DaemonSetSection | None = Field(None, description="{namespace, name}")
    slices_per_node: Count = Field(1, description="minimum ResourceSlices per node")

    def domain(self) -> Readiness:
        ds = self.daemon_set
        if ds is None:
            return Readiness(None, None, self.slices_per_node)
        image = ds.update.image if ds.update else None
        container = ds.update.container if ds.update else None
        return Readiness(ds.name, ds.namespace, self.slices_per_node, image, container)


def _capability(item: Any) -> str:
    if not isinstance(item, str):
        wrong("a capability name", item)
    if item in FAULT_ABILITIES:
        fail(
            f"'{item}' is a fault ability now, not a driver feature: remove it and "
            f"configure faults.{FAULT_ABILITIES[item]} (docs/profile.md, Faults)"
        )
    if item not in CAPABILITIES:
        best = suggest(item, sorted(CAPABILITIES))
        hint = f"did you mean '{best}'?" if best else "known: " + ", ".join(sorted(CAPABILITIES))
        fail(f"unknown capability '{item}'; {hint}")
    return item


def _once_each(items: tuple[str, ...]) -> tuple[str, ...]:
    for i, item in enumerate(items):
        if item in items[:i]:
            fail(f"'{item}' is listed twice", i)
    return items


Capability = checked(str, _capability, {"enum": sorted(CAPABILITIES)})
Capabilities = Annotated[listed(Capability, "capability names"), AfterValidator(_once_each)]

ATTRIBUTE_FORM = (
    "an attribute name <domain>/<identifier> or <identifier>, e.g. gpu.example.com/model"
)
AttributeName = qualified_name(ATTRIBUTE_FORM)
MatchAttributes = listed(AttributeName, "attribute names")

_EXTENDED_FORM = "an extended resource name such as example.com/gpu"
_EXTENDED_RESOURCE_RE = re.compile(
    r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)

ExtendedResourceName = text(_EXTENDED_FORM, _EXTENDED_RESOURCE_RE)


class ExtendedResourceSection(Strict):
    name: ExtendedResourceName = Field(description=_EXTENDED_FORM)
    class_: DeviceClassName = Field(alias="class", description=CLASS_FORM)

    def domain(self) -> ExtendedResource:
        return ExtendedResource(self.name, self.class_)


_TIMEOUT = duration("a positive duration in seconds (90) or with units (90s, 5m, 1m30s)")
TimeoutsSection = create_model(
    "TimeoutsSection",
    __base__=Strict,
    __doc__="`timeouts`: seconds, or a duration with units, per wait the suite makes.",
    **{
        name: (_TIMEOUT, Field(seconds, alias=name, description=f"default {seconds:g}s"))
        for name, seconds in DEFAULT_TIMEOUTS.items()
    },
)
