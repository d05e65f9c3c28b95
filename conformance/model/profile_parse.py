"""Reading a profile document: the typed schema of the whole profile (`ProfileDocument`, one
model per section), every problem named by its field path (docs/profile.md). The typed
result is conformance.model.profile's `Profile`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from conformance.model.binding_conditions import CAPABILITY as BINDING
from conformance.model.binding_conditions import BindingConditionsSection
from conformance.model.binding_conditions import missing_section as missing_binding_section
from conformance.model.cdi_paths import CdiPaths, CdiSection
from conformance.model.cel import resolve_name
from conformance.model.cluster_block import ClusterRequirements, ClusterSection
from conformance.model.consumable_capacity import ConsumableSection
from conformance.model.fault_config import FaultsSection
from conformance.model.frozen import FrozenMap
from conformance.model.node_commands import NodeCommandsSection
from conformance.model.opaque_config import OpaqueSection
from conformance.model.partitionable import CAPABILITY as PARTITIONABLE
from conformance.model.partitionable import PartitionableSection, missing_section
from conformance.model.profile import (
    API_VERSION,
    DEFAULT_KIND,
    DEFAULT_NODE_SELECTOR,
    KIND,
    Profile,
    ProfileError,
    Selector,
    Timeouts,
)
from conformance.model.profile_install import InstallSection
from conformance.model.profile_sections import AttributeName as CapacityName
from conformance.model.profile_sections import (
    Capabilities,
    DeviceClasses,
    ExtendedResourceSection,
    MatchAttributes,
    NodesSection,
    ReadinessSection,
    Selectors,
    TimeoutsSection,
)
from conformance.model.profile_verification import VerificationSection
from conformance.model.schema import DNS_SUBDOMAIN_RE, describe, read_document
from conformance.model.typed import Strict, checked, wrong
from conformance.model.typed_errors import problems_of

_DRIVER_FORM = "a driver name (a DNS subdomain of at most 63 characters)"


def _constant(expected: str) -> Any:
    def check(value: Any) -> str:
        if value != expected:
            wrong(f"'{expected}'", value)
        return value

    return checked(Literal[expected], check)  # type: ignore[valid-type]


def _driver(value: Any) -> str:
    if not isinstance(value, str) or not DNS_SUBDOMAIN_RE.match(value) or len(value) > 63:
        wrong(_DRIVER_FORM, value)
    return value


ApiVersion = _constant(API_VERSION)
Kind = _constant(KIND)
DriverName = checked(
    str, _driver, {"type": "string", "maxLength": 63, "pattern": DNS_SUBDOMAIN_RE.pattern}
)


class ProfileDocument(Strict):
    """A driver profile (docs/profile.md): what the suite needs to know about one DRA driver."""

    model_config = {"title": "DriverProfile"}

    api_version: ApiVersion = Field(description=f"'{API_VERSION}'")
    kind: Kind = Field(description=f"'{KIND}'")
    driver: DriverName = Field(description=_DRIVER_FORM)
    nodes: NodesSection | None = Field(None, description="which nodes run the driver")
    device_classes: DeviceClasses = Field(
        description="a mapping with at least {default: <DeviceClass name>}"
    )
    selectors: Selectors | None = Field(None, description="disjoint kinds of device, by CEL")
    install: InstallSection = Field(description="{method: manifests|helm|preinstalled, ...}")
    readiness: ReadinessSection | None = Field(None, description="when the driver is ready")
    match_attributes: MatchAttributes | None = Field(None, description="attributes to match on")
    capacity: CapacityName | None = Field(None, description="a capacity the devices publish")
    verification: VerificationSection = Field(
        description="{method: env|file|command, value: ..., ...}"
    )
    capabilities: Capabilities | None = Field(None, description="the driver's optional features")
    extended_resource: ExtendedResourceSection | None = Field(
        None, description="{name: <resource name>, class: <device class>}"
    )
    faults: FaultsSection | None = Field(None, description="how each fault kind is injected")
    timeouts: TimeoutsSection | None = Field(None, description="seconds per wait")  # type: ignore[valid-type]
    opaque_config: OpaqueSection | None = Field(None, description="DRA-ALLOC-014's parameters")
    node_commands: NodeCommandsSection | None = Field(None, description="restarts on a cluster")
    partitionable_devices: PartitionableSection | None = Field(
        None, description="whole devices and their partitions"
    )
    consumable_capacity: ConsumableSection | None = Field(
        None, description="the class of shareable devices"
    )
    binding_conditions: BindingConditionsSection | None = Field(
        None, description="the class of devices published with bindingConditions"
    )
    cdi: CdiSection | None = Field(None, description="CDI spec directories, kubelet root")
    cluster: ClusterSection | None = Field(
        None, description="what the cluster must provide: gates, kubelet, containerd, ..."
    )


def load_profile(path: str | Path) -> Profile:
    """Read and validate a profile; raises ProfileError naming every bad field."""
    document = read_document(path, ProfileError)
    return parse_profile(document, source=Path(path), shown=str(path))


def parse_profile(document: Any, *, source: Path, shown: str | None = None) -> Profile:
    """Validate an already parsed document (relative paths resolve against `source`)."""
    shown = shown or str(source)
    if not isinstance(document, Mapping):
        raise ProfileError(
            shown, [f"expected a mapping at the top level, got {describe(document)}"]
        )
    base_dir = source.resolve().parent
    try:
        model = ProfileDocument.model_validate(document, context={"base_dir": base_dir})
    except ValidationError as exc:
        raise ProfileError(shown, problems_of(exc, ProfileDocument)) from None
    problems = _across_sections(model)
    if problems:
        raise ProfileError(shown, problems)
    return _profile(model, source.resolve())


def _across_sections(model: ProfileDocument) -> list[str]:
    """What one section demands of another (a capability and the section it needs)."""
    capabilities = set(model.capabilities or ())
    problems = []
    if "opaque-config" in capabilities and model.opaque_config is None:
        problems.append(
            "opaqueConfig: required when capabilities lists opaque-config (expected {class: "
            "<object>, claim: <object>, expect: {method: env|file|command, shows: [regex, ...]}})"
        )
    if PARTITIONABLE in capabilities and model.partitionable_devices is None:
        problems.append(f"partitionableDevices: {missing_section()}")
    if BINDING in capabilities and model.binding_conditions is None:
        problems.append(f"bindingConditions: {missing_binding_section()}")
    if "extended-resource" in capabilities and model.extended_resource is None:
        problems.append(
            "extendedResource: required when capabilities lists extended-resource "
            "(expected {name: <resource name>, class: <device class>})"
        )
    if model.extended_resource is not None and "extended-resource" not in capabilities:
        problems.append(
            "capabilities: must list extended-resource when extendedResource is set "
            "(or remove extendedResource)"
        )
    return problems


def _profile(model: ProfileDocument, source: Path) -> Profile:
    driver = model.driver
    classes = dict(model.device_classes)
    selectors = {
        name: Selector(name, s.expression, s.class_ or classes[DEFAULT_KIND])
        for name, s in (model.selectors or {}).items()
    }
    timeouts = model.timeouts.model_dump(by_alias=True) if model.timeouts else None
    cluster = model.cluster.domain() if model.cluster else ClusterRequirements()
    return Profile(
        source=source,
        driver=driver,
        node_selector=model.nodes.selector if model.nodes else DEFAULT_NODE_SELECTOR,
        device_classes=FrozenMap(classes),
        selectors=FrozenMap(selectors),
        install=model.install.domain(source.parent),
        readiness=(model.readiness or ReadinessSection()).domain(),
        match_attributes=tuple(resolve_name(a, driver) for a in model.match_attributes or ()),
        capacity=resolve_name(model.capacity, driver) if model.capacity else None,
        verification=model.verification.domain(driver),
        capabilities=frozenset(model.capabilities or ()),
        extended_resource=model.extended_resource.domain() if model.extended_resource else None,
        faults=(model.faults or FaultsSection()).domain(),
        timeouts=Timeouts(FrozenMap(timeouts)) if timeouts else Timeouts(),
        opaque_config=model.opaque_config.domain() if model.opaque_config else None,
        node_commands=(model.node_commands or NodeCommandsSection()).domain(),
        partitionable=(
            model.partitionable_devices.domain() if model.partitionable_devices else None
        ),
        consumable_capacity=(
            model.consumable_capacity.domain(driver) if model.consumable_capacity else None
        ),
        binding_conditions=(
            model.binding_conditions.domain() if model.binding_conditions else None
        ),
        cdi=_cdi(model.cdi or CdiSection(), cluster),
        cluster=cluster,
    )


def _cdi(section: CdiSection, cluster: ClusterRequirements) -> CdiPaths:
    """The runtime reads specs from the directories the cluster block configures as well."""
    paths = section.domain()
    extra = tuple(dict.fromkeys(paths.extra_spec_dirs + cluster.containerd.cdi_spec_dirs))
    return CdiPaths(extra, paths.kubelet_root_dir)
