"""The driver profile: everything driver-specific the suite needs, and nothing else.

A scenario never names a driver; it asks the profile for the class, the selectors, the
attributes to constrain on and how a container proves it got its devices. The format is
documented in docs/profile.md; `load_profile` validates it and names the field of every
problem, so a vendor can write one without reading this file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from conformance import suite_root
from conformance.model.binding_conditions import BindingConditions
from conformance.model.capabilities import PROFILE_FIELDS
from conformance.model.cdi_paths import CdiPaths
from conformance.model.cluster_block import ClusterRequirements
from conformance.model.consumable_capacity import ConsumableCapacity
from conformance.model.fault_config import FaultsConfig
from conformance.model.frozen import FrozenMap
from conformance.model.node_commands import NodeCommands
from conformance.model.opaque_config import OpaqueConfig
from conformance.model.partitionable import PARTITIONABLE_KINDS, PartitionableDevices
from conformance.model.schema import (
    DocumentError,
)

API_VERSION = "dra-conformance.io/v1alpha1"
KIND = "DriverProfile"

# "All workers": kind and kubeadm label control-plane nodes, and nothing labels workers.
DEFAULT_NODE_SELECTOR = "!node-role.kubernetes.io/control-plane"

# Seconds. Generous for a 2-core CI machine; --dra-timeout-scale multiplies them all.
DEFAULT_TIMEOUTS: Mapping[str, float] = FrozenMap(
    {
        "default": 60.0,
        "claimAllocated": 60.0,
        "podRunning": 120.0,
        "podDeleted": 120.0,
        "namespaceDeleted": 180.0,
        "eviction": 120.0,
        "driverReady": 300.0,
        "slicesPublished": 180.0,
        # How long "stays Pending" / "keeps running" is watched. Every window starts once the
        # scheduler has decided (PodScheduled=False seen) or the disruption is in place, and
        # what a broken driver does shows within a second or two of that on this cluster
        # (bench/suite.md), so the window is a margin, not a wait for a decision.
        "settle": 5.0,
        # How long a just-written state may take to become whole: a driver between two writes
        # of a republish, a just-started container still printing what it sees.
        "converge": 15.0,
        "lease": 1800.0,  # how long a test may wait for devices other tests hold
    }
)

DEFAULT_KIND = "default"
EXTENDED_RESOURCE_KIND = "extended-resource"
CLASS_KIND_PREFIX = "class:"
# Scenario-side names of the profile's first and second selector (the catalog's
# <selector:kind-a> / <selector:kind-b>), so a suite can lease "the first kind" without
# naming a driver's selector. Always defined; without such a selector they match nothing.
SELECTOR_ALIASES = ("selector:kind-a", "selector:kind-b")
# The shareable devices (allowMultipleAllocations) of the profile's consumableCapacity class.
# Always defined, so a suite may name it; without that section it matches nothing.
CONSUMABLE_KIND = "consumable-capacity"
# The devices of the profile's bindingConditions class published with bindingConditions.
# Always defined, so a suite may name it; without that section it matches nothing.
BINDING_KIND = "binding-conditions"

SUITE_ROOT = suite_root.SUITE_ROOT  # the checkout, or conformance/_suite of a wheel

# Builders the suite ships (conformance.images.harness): they work with no registry at all.
IMAGE_BUILDERS = ("fake-driver", "k8s-test-driver")  # conformance/images/harness.py BUILDERS

# `install.chart: goModule:<path>`: a chart inside install.image.goModule's module version.
GO_MODULE_CHART_PREFIX = "goModule:"

VerificationMethod = Literal["env", "file", "command"]


class ProfileError(DocumentError):
    """The profile cannot be used; `problems` lists `field.path: message` lines."""

    kind = "profile"


@dataclass(frozen=True)
class Selector:
    """A named CEL selector picking one kind of device; kinds must not overlap."""

    name: str
    expression: str
    device_class: str


@dataclass(frozen=True)
class GoModuleSpec:
    """A driver built from a public Go module at a pinned version (conformance/images/gomodule)."""

    module: str  # a module path, e.g. sigs.k8s.io/dra-example-driver
    version: str  # a semantic version or pseudo-version, never a branch or `latest`
    packages: tuple[str, ...]  # main packages: `./cmd/x` (module-relative) or full import paths
    binary_dir: str = "/usr/bin"  # where the binaries go in the image


@dataclass(frozen=True)
class ImageSpec:
    """The image the installer substitutes for IMAGE_PLACEHOLDER in the manifests."""

    ref: str | None  # None only with a builder or a Go module, which name their own image
    builder: str | None = None  # a suite-provided builder (IMAGE_BUILDERS) instead of docker build
    build_context: Path | None = None  # None: the image exists already (pulled or prebuilt)
    dockerfile: Path | None = None
    build_args: Mapping[str, str] = field(default_factory=FrozenMap)
    load: bool = True  # load into the kind nodes (ignored on an existing cluster)
    go_module: GoModuleSpec | None = None  # build from a Go module instead (ref is derived)


@dataclass(frozen=True)
class ManifestsInstall:
    paths: tuple[Path, ...]
    image: ImageSpec | None
    method: Literal["manifests"] = "manifests"


@dataclass(frozen=True)
class HelmInstall:
    chart: str  # a local chart directory (absolute after loading) or a chart reference
    release: str
    namespace: str
    values: Mapping[str, Any] = field(default_factory=FrozenMap)
    values_files: tuple[Path, ...] = ()
    version: str | None = None
    image: ImageSpec | None = None  # built/loaded before the chart is installed
    method: Literal["helm"] = "helm"


@dataclass(frozen=True)
class PreinstalledInstall:
    method: Literal["preinstalled"] = "preinstalled"


Install = ManifestsInstall | HelmInstall | PreinstalledInstall


@dataclass(frozen=True)
class Readiness:
    daemonset_name: str | None
    daemonset_namespace: str | None
    slices_per_node: int  # minimum ResourceSlices of the driver on every selected node
    # DRA-UPD-001 also sets this image (daemonSet.update.image) on this container (None: the
    # first) of the DaemonSet's pod template, besides changing a template annotation.
    update_image: str | None = None
    update_container: str | None = None


@dataclass(frozen=True)
class Verification:
    """How a container proves which devices it received.

    `value` says what one identifier is: `pool/device`, `device`, or `attribute:<name>` (the
    value of that attribute in the slice, e.g. a UUID). `separator` splits one variable,
    file or output into several identifiers (e.g. NVIDIA_VISIBLE_DEVICES=uuid1,uuid2).
    """

    method: VerificationMethod
    value: str
    separator: str | None = None
    name_regex: str | None = None  # env
    path: str | None = None  # file
    command: tuple[str, ...] = ()  # command

    @property
    def attribute(self) -> str | None:
        return self.value.partition(":")[2] if self.value.startswith("attribute:") else None


@dataclass(frozen=True)
class ExtendedResource:
    name: str
    device_class: str


@dataclass(frozen=True)
class Timeouts:
    values: Mapping[str, float] = field(default_factory=lambda: DEFAULT_TIMEOUTS)

    def get(self, name: str, scale: float = 1.0) -> float:
        if name not in self.values:
            raise KeyError(f"unknown timeout {name!r}; known: {', '.join(sorted(self.values))}")
        return self.values[name] * scale


@dataclass(frozen=True)
class Profile:
    source: Path
    driver: str
    node_selector: str
    device_classes: Mapping[str, str]  # always has "default"
    selectors: Mapping[str, Selector]
    install: Install
    readiness: Readiness
    match_attributes: tuple[str, ...]
    capacity: str | None
    verification: Verification
    capabilities: frozenset[str]
    extended_resource: ExtendedResource | None
    faults: FaultsConfig  # how each fault kind is injected (conformance.model.fault_config)
    timeouts: Timeouts
    opaque_config: OpaqueConfig | None = None  # DRA-ALLOC-014 (conformance.model.opaque_config)
    # How to restart a node's kubelet on an existing cluster (conformance.model.node_commands)
    node_commands: NodeCommands = field(default_factory=NodeCommands)
    # Whole partitionable devices and their partitions (DRA-ALLOC-016)
    partitionable: PartitionableDevices | None = None
    # DRA-ALLOC-017: the class of shareable devices (conformance.model.consumable_capacity)
    consumable_capacity: ConsumableCapacity | None = None
    # DRA-ALLOC-018: the class of devices with bindingConditions (model.binding_conditions)
    binding_conditions: BindingConditions | None = None
    # Where the runtime reads CDI specs and the kubelet its DRA checkpoint (DRA-CORE-008)
    cdi: CdiPaths = field(default_factory=CdiPaths)
    # What the cluster must provide (conformance.model.cluster_block)
    cluster: ClusterRequirements = field(default_factory=ClusterRequirements)

    @property
    def default_class(self) -> str:
        return self.device_classes[DEFAULT_KIND]

    @property
    def shown_source(self) -> str:
        """The profile's path as reports and remedies show it: relative to the directory the
        run was started in when it lies below it (never the runner's home), else as given."""
        try:
            return str(self.source.relative_to(Path.cwd()))
        except ValueError:
            return str(self.source)

    @property
    def gating_fields(self) -> frozenset[str]:
        """The profile fields requirements are gated on (capabilities.PROFILE_FIELDS) that
        this profile sets."""
        return frozenset(name for name, attr in PROFILE_FIELDS.items() if getattr(self, attr))

    @property
    def device_kinds(self) -> tuple[str, ...]:
        """Names a test may lease: `default`, each selector, `selector:kind-a|b` (the first and
        second selector), `partitionable:whole|partition`, `consumable-capacity`,
        `binding-conditions`, `class:<key>`, `extended-resource`."""
        kinds = [DEFAULT_KIND, *self.selectors, *SELECTOR_ALIASES, *PARTITIONABLE_KINDS]
        kinds += [CONSUMABLE_KIND, BINDING_KIND]
        kinds += [CLASS_KIND_PREFIX + k for k in self.device_classes if k != DEFAULT_KIND]
        if self.extended_resource:
            kinds.append(EXTENDED_RESOURCE_KIND)
        return tuple(kinds)

    def kind_class_and_expression(self, kind: str) -> tuple[str, str | None]:
        """The DeviceClass a device kind draws from, and the extra selector expression."""
        if kind == DEFAULT_KIND:
            return self.default_class, None
        if kind in self.selectors:
            sel = self.selectors[kind]
            return sel.device_class, sel.expression
        if kind in SELECTOR_ALIASES:
            aliased = self.aliased_selector(kind)
            if aliased is None:
                raise KeyError(
                    f"device kind {kind!r} is the profile's selector number "
                    f"{SELECTOR_ALIASES.index(kind) + 1}, but it defines {len(self.selectors)}"
                )
            return aliased.device_class, aliased.expression
        if kind in PARTITIONABLE_KINDS:
            if self.partitionable is None:
                raise KeyError(f"device kind {kind!r}: the profile has no partitionableDevices")
            choice = self.partitionable.for_kind(kind)
            return choice.device_class, choice.expression
        if kind == EXTENDED_RESOURCE_KIND and self.extended_resource:
            return self.extended_resource.device_class, None
        if kind == CONSUMABLE_KIND and self.consumable_capacity:
            return self.consumable_capacity.device_class, None
        if kind == BINDING_KIND and self.binding_conditions:
            return self.binding_conditions.device_class, None
        if kind.startswith(CLASS_KIND_PREFIX) and kind[len(CLASS_KIND_PREFIX) :] in (
            self.device_classes
        ):
            return self.device_classes[kind[len(CLASS_KIND_PREFIX) :]], None
        raise KeyError(
            f"unknown device kind {kind!r}; the profile names: {', '.join(self.device_kinds)}"
        )

    def aliased_selector(self, alias: str) -> Selector | None:
        """The selector `selector:kind-a` (first) or `selector:kind-b` (second) stands for."""
        position = SELECTOR_ALIASES.index(alias)
        selectors = list(self.selectors.values())
        return selectors[position] if position < len(selectors) else None

    def all_class_names(self) -> tuple[str, ...]:
        names = list(self.device_classes.values())
        names += [s.device_class for s in self.selectors.values()]
        if self.extended_resource:
            names.append(self.extended_resource.device_class)
        if self.partitionable:
            names += [self.partitionable.whole.device_class]
            names += [self.partitionable.partition.device_class]
        if self.consumable_capacity:
            names.append(self.consumable_capacity.device_class)
        if self.binding_conditions:
            names.append(self.binding_conditions.device_class)
        return tuple(dict.fromkeys(names))


# --- loading -------------------------------------------------------------------------------
