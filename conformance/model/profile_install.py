"""The profile's `install` section: manifests, helm or preinstalled, and the driver image
(built by the suite, built from a Dockerfile, or loaded), with paths resolved."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conformance.model.frozen import FrozenMap
from conformance.model.profile import (
    IMAGE_BUILDERS,
    SUITE_ROOT,
    HelmInstall,
    ImageSpec,
    Install,
    ManifestsInstall,
    PreinstalledInstall,
)
from conformance.model.schema import (
    DNS_LABEL_RE,
    Problems,
    join,
)


class InstallSection:
    """Validate `install` (and `install.image`); problems go to the shared Problems."""

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
