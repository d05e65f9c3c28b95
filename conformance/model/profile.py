"""The driver profile: everything driver-specific the suite needs, and nothing else.

A scenario never names a driver; it asks the profile for the class, the selectors, the
attributes to constrain on and how a container proves it got its devices. The format is
documented in docs/profile.md; `load_profile` validates it and names the field of every
problem, so a vendor can write one without reading this file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from conformance.faults.spec import FaultsConfig, parse_faults
from conformance.model.capabilities import CAPABILITIES, FAULT_ABILITIES
from conformance.model.cel import attribute_name_problem, resolve_name
from conformance.model.frozen import FrozenMap
from conformance.model.opaque_config import OpaqueConfig, parse_opaque_config
from conformance.model.schema import (
    DNS_LABEL_RE,
    DNS_SUBDOMAIN_RE,
    DocumentError,
    Problems,
    describe,
    join,
    read_document,
    suggest,
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
        "settle": 15.0,  # how long "stays Pending" / "keeps running" is observed
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

SUITE_ROOT = Path(__file__).resolve().parents[2]  # conformance/model/profile.py -> the repo

# Builders the suite ships (conformance.cluster.images): they work with no registry at all.
IMAGE_BUILDERS = ("fake-driver", "k8s-test-driver")  # conformance/cluster/images.py BUILDERS

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
class ImageSpec:
    """The image the installer substitutes for IMAGE_PLACEHOLDER in the manifests."""

    ref: str | None  # None only with a builder, whose output is content-addressed
    builder: str | None = None  # a suite-provided builder (IMAGE_BUILDERS) instead of docker build
    build_context: Path | None = None  # None: the image exists already (pulled or prebuilt)
    dockerfile: Path | None = None
    build_args: Mapping[str, str] = field(default_factory=FrozenMap)
    load: bool = True  # load into the kind nodes (ignored on an existing cluster)


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
    faults: FaultsConfig  # how each fault kind is injected (conformance.faults.spec)
    timeouts: Timeouts
    opaque_config: OpaqueConfig | None = None  # DRA-ALLOC-014 (conformance.model.opaque_config)

    @property
    def default_class(self) -> str:
        return self.device_classes[DEFAULT_KIND]

    @property
    def device_kinds(self) -> tuple[str, ...]:
        """Names a test may lease: `default`, each selector, `selector:kind-a|b` (the first and
        second selector), `class:<key>`, `extended-resource`."""
        kinds = [DEFAULT_KIND, *self.selectors, *SELECTOR_ALIASES]
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
        if kind == EXTENDED_RESOURCE_KIND and self.extended_resource:
            return self.extended_resource.device_class, None
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
        return tuple(dict.fromkeys(names))


# --- loading -------------------------------------------------------------------------------

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
)
_REQUIRED_TOP = ("apiVersion", "kind", "driver", "deviceClasses", "install", "verification")

_DURATION_RE = re.compile(r"^(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m)?(?:(?P<s>\d+(?:\.\d+)?)s)?$")
_EXTENDED_RESOURCE_RE = re.compile(
    r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_VERIFICATION_VALUE_FORM = "pool/device, device, or attribute:<domain>/<name> (or attribute:<name>)"


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

    # Paths: profile-relative first, then relative to the dra-conformance checkout, so the
    # bundled profile can say `deploy/` and a vendor profile can say `drivers/fake/...`.
    def path(self, path: str, value: Any, *, want_dir: bool | None = None) -> Path | None:
        text = self.p.string(path, value, "a file or directory path")
        if text is None:
            return None
        raw = Path(text).expanduser()
        candidates = [raw] if raw.is_absolute() else [self.base_dir / raw, SUITE_ROOT / raw]
        for candidate in candidates:
            if candidate.exists():
                if want_dir is True and not candidate.is_dir():
                    self.p.add(path, f"{candidate} is not a directory")
                    return None
                return candidate.resolve()
        tried = " and ".join(str(c) for c in dict.fromkeys(candidates))
        self.p.add(path, f"no such file or directory (tried {tried})")
        return None

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

    def image(self, path: str, value: Any) -> ImageSpec | None:
        section = self.p.mapping(path, value, ("ref", "builder", "build", "load"))
        if section is None:
            return None
        ref = builder = None
        if "builder" in section:
            builder = self.p.choice(join(path, "builder"), section["builder"], IMAGE_BUILDERS)
            if "build" in section:
                self.p.add(join(path, "build"), "not used with builder; remove one of them")
        elif "ref" not in section:
            self.p.missing(join(path, "ref"), "an image reference such as 'localhost/x:dev'")
            return None
        if "ref" in section:
            ref = self.p.string(join(path, "ref"), section["ref"], "an image reference")
        context = dockerfile = None
        args: dict[str, str] = {}
        if "build" in section and builder is None:
            bpath = join(path, "build")
            build = self.p.mapping(bpath, section["build"], ("context", "dockerfile", "args"))
            if build is not None:
                if "context" not in build:
                    self.p.missing(join(bpath, "context"), "the build context directory")
                else:
                    context = self.path(join(bpath, "context"), build["context"], want_dir=True)
                if context is not None:
                    name = build.get("dockerfile", "Dockerfile")
                    df = self.p.string(join(bpath, "dockerfile"), name, "a Dockerfile path")
                    if df is not None:
                        dockerfile = (context / df).resolve()
                        if not dockerfile.is_file():
                            self.p.add(join(bpath, "dockerfile"), f"no such file: {dockerfile}")
                            dockerfile = None
                apath = join(bpath, "args")
                for k, v in (self.p.string_map(apath, build.get("args", {})) or {}).items():
                    if not isinstance(v, str | int | float) or isinstance(v, bool):
                        self.p.wrong(join(apath, str(k)), "a string", v)
                    else:
                        args[str(k)] = str(v)
        load = True
        if "load" in section:
            checked = self.p.boolean(join(path, "load"), section["load"])
            load = True if checked is None else checked
        if ref is None and builder is None:
            return None
        return ImageSpec(ref, builder, context, dockerfile, FrozenMap(args), load)

    def install(self, value: Any) -> Install | None:
        if value is None:
            return None
        keys = (
            "method",
            "manifests",
            "image",
            "chart",
            "release",
            "namespace",
            "values",
            "valuesFiles",
            "version",
        )
        section = self.p.mapping("install", value, keys)
        if section is None:
            return None
        if "method" not in section:
            self.p.missing("install.method", "one of manifests, helm, preinstalled")
            return None
        method = self.p.choice(
            "install.method", section["method"], ("manifests", "helm", "preinstalled")
        )
        allowed = {
            "manifests": {"method", "manifests", "image"},
            "helm": {
                "method",
                "chart",
                "release",
                "namespace",
                "values",
                "valuesFiles",
                "version",
                "image",
            },
            "preinstalled": {"method"},
        }
        if method is None:
            return None
        for key in section:
            if key in keys and key not in allowed[method]:
                self.p.add(join("install", key), f"not used by method {method}; remove it")
        if method == "preinstalled":
            return PreinstalledInstall()
        image = self.image("install.image", section["image"]) if "image" in section else None
        if method == "manifests":
            return self._manifests(section, image)
        return self._helm(section, image)

    def _manifests(self, section: Mapping[str, Any], image: ImageSpec | None) -> Install | None:
        if "manifests" not in section:
            self.p.missing("install.manifests", "a list of manifest files or directories")
            return None
        items = self.p.list_of("install.manifests", section["manifests"], "paths")
        if items is None:
            return None
        if not items:
            self.p.wrong("install.manifests", "a non-empty list of paths", items)
            return None
        paths = [self.path(join("install.manifests", i), item) for i, item in enumerate(items)]
        if any(p is None for p in paths):
            return None
        return ManifestsInstall(tuple(p for p in paths if p is not None), image)

    def _helm(self, section: Mapping[str, Any], image: ImageSpec | None) -> Install | None:
        for key, form in (
            ("chart", "a chart directory or reference"),
            ("release", "a release name"),
            ("namespace", "a namespace"),
        ):
            if key not in section:
                self.p.missing(join("install", key), form)
        if any(k not in section for k in ("chart", "release", "namespace")):
            return None
        chart = self.p.string("install.chart", section["chart"], "a chart directory or reference")
        release = self.p.string(
            "install.release", section["release"], "a release name (DNS label)", DNS_LABEL_RE
        )
        namespace = self.p.string(
            "install.namespace", section["namespace"], "a namespace name (DNS label)", DNS_LABEL_RE
        )
        if chart and not chart.startswith("oci://"):
            local = Path(chart).expanduser()
            for candidate in [local] if local.is_absolute() else [self.base_dir / local]:
                if candidate.is_dir():
                    chart = str(candidate.resolve())
        values = self.p.string_map("install.values", section.get("values", {}))
        files_raw = self.p.list_of("install.valuesFiles", section.get("valuesFiles", []), "paths")
        files = [
            self.path(join("install.valuesFiles", i), f) for i, f in enumerate(files_raw or [])
        ]
        version = None
        if "version" in section:
            version = self.p.string("install.version", section["version"], "a chart version")
        if not (chart and release and namespace) or values is None or any(f is None for f in files):
            return None
        return HelmInstall(
            chart,
            release,
            namespace,
            FrozenMap(values),
            tuple(f for f in files if f),
            version,
            image,
        )

    def readiness(self, value: Any) -> Readiness:
        if value is None:
            return Readiness(None, None, 1)
        section = self.p.mapping("readiness", value, ("daemonSet", "slicesPerNode"))
        if section is None:
            return Readiness(None, None, 1)
        name = namespace = None
        if "daemonSet" in section:
            ds = self.p.mapping("readiness.daemonSet", section["daemonSet"], ("name", "namespace"))
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
        slices = 1
        if "slicesPerNode" in section:
            slices = self.p.integer("readiness.slicesPerNode", section["slicesPerNode"]) or 0
        return Readiness(name, namespace, slices)

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
        if value is None:
            return None
        keys = ("method", "value", "separator", "nameRegex", "path", "command")
        section = self.p.mapping("verification", value, keys)
        if section is None:
            return None
        if "method" not in section:
            self.p.missing("verification.method", "one of env, file, command")
            return None
        method = self.p.choice("verification.method", section["method"], ("env", "file", "command"))
        if method is None:
            return None
        own = {"env": "nameRegex", "file": "path", "command": "command"}
        for other_method, key in own.items():
            if key in section and other_method != method:
                self.p.add(join("verification", key), f"not used by method {method}; remove it")
        if "value" not in section:
            self.p.missing("verification.value", _VERIFICATION_VALUE_FORM)
            ident = None
        else:
            ident = self._verification_value(section["value"], driver)
        separator = None
        if "separator" in section:
            raw = section["separator"]
            if not isinstance(raw, str) or raw == "":
                self.p.wrong("verification.separator", "a non-empty string such as ','", raw)
            else:
                separator = raw
        name_regex = path = None
        command: tuple[str, ...] = ()
        if method == "env":
            if "nameRegex" not in section:
                self.p.missing(
                    "verification.nameRegex", "a regular expression such as '^DRA_ASSIGNED_'"
                )
            else:
                name_regex = self.p.string(
                    "verification.nameRegex",
                    section["nameRegex"],
                    "a regular expression such as '^DRA_ASSIGNED_'",
                )
                if name_regex is not None:
                    try:
                        re.compile(name_regex)
                    except re.error as exc:
                        self.p.add(
                            "verification.nameRegex", f"not a valid regular expression: {exc}"
                        )
                        name_regex = None
        elif method == "file":
            if "path" not in section:
                self.p.missing("verification.path", "an absolute path inside the container")
            else:
                path = self.p.string(
                    "verification.path",
                    section["path"],
                    "an absolute path inside the container",
                    re.compile(r"^/"),
                )
        else:
            if "command" not in section:
                self.p.missing("verification.command", "an argv list such as [nvidia-smi, -L]")
            else:
                raw = section["command"]
                if (
                    not isinstance(raw, list)
                    or not raw
                    or not all(isinstance(a, str) and a for a in raw)
                ):
                    self.p.wrong(
                        "verification.command",
                        "a non-empty list of strings (argv), e.g. [nvidia-smi, -L]",
                        raw,
                    )
                else:
                    command = tuple(raw)
        if (
            ident is None
            or (method == "env" and name_regex is None)
            or (method == "file" and path is None)
            or (method == "command" and not command)
        ):
            return None
        return Verification(method, ident, separator, name_regex, path, command)

    def _verification_value(self, raw: Any, driver: str | None) -> str | None:
        if raw in ("pool/device", "device"):
            return raw
        if isinstance(raw, str) and raw.startswith("attribute:"):
            name = raw.partition(":")[2]
            if not attribute_name_problem(name):
                return "attribute:" + (resolve_name(name, driver) if driver else name)
        self.p.wrong("verification.value", _VERIFICATION_VALUE_FORM, raw)
        return None

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


def parse_duration(value: Any) -> float | None:
    """Seconds from `90`, `90.5`, `"90s"`, `"5m"`, `"1h30m"`; None if not a duration."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value:
        m = _DURATION_RE.match(value.strip())
        if m and any(m.groupdict().values()):
            return int(m["h"] or 0) * 3600 + int(m["m"] or 0) * 60 + float(m["s"] or 0)
    return None
