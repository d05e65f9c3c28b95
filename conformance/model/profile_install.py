"""The profile's `install` section: manifests, helm or preinstalled, and the driver image
(built by the suite, built from a Dockerfile, or loaded), with paths resolved.

Paths resolve against the profile's directory, given as the validation context `base_dir`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, ValidationInfo, model_validator

from conformance.model.frozen import FrozenMap
from conformance.model.profile import (
    GO_MODULE_CHART_PREFIX,
    IMAGE_BUILDERS,
    SUITE_ROOT,
    HelmInstall,
    ImageSpec,
    Install,
    ManifestsInstall,
    PreinstalledInstall,
)
from conformance.model.profile_gomodule import GoModuleSection
from conformance.model.schema import DNS_LABEL_RE
from conformance.model.typed import (
    Boolean,
    Strict,
    checked,
    choice,
    fail,
    listed,
    mapping_of,
    missing,
    text,
    wrong,
)

_PATH_FORM = "a file or directory path"


def _resolve(value: Any, info: ValidationInfo, *, want_dir: bool = False) -> Path:
    """Profile-relative first, then relative to the dra-conformance checkout, so the bundled
    profile can say `deploy/` and a vendor profile can say `drivers/fake/...`."""
    if not isinstance(value, str) or not value.strip():
        wrong(_PATH_FORM, value)
    base_dir: Path = (info.context or {}).get("base_dir", Path.cwd())
    raw = Path(value).expanduser()
    candidates = [raw] if raw.is_absolute() else [base_dir / raw, SUITE_ROOT / raw]
    for candidate in candidates:
        if candidate.exists():
            if want_dir and not candidate.is_dir():
                fail(f"{candidate} is not a directory")
            return candidate.resolve()
    tried = " and ".join(str(c) for c in dict.fromkeys(candidates))
    fail(f"no such file or directory (tried {tried})")


def _directory(value: Any, info: ValidationInfo) -> Path:
    return _resolve(value, info, want_dir=True)


_PATH_SCHEMA = {"type": "string", "minLength": 1}
LocalPath = Annotated[Path, BeforeValidator(_resolve), Field(json_schema_extra=_PATH_SCHEMA)]
LocalDir = Annotated[Path, BeforeValidator(_directory), Field(json_schema_extra=_PATH_SCHEMA)]


def _build_arg(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        wrong("a string", value)
    return str(value)


BuildArg = checked(str, _build_arg, {"type": ["string", "number"]})
DockerfileName = text("a Dockerfile path")
BuildArgs = mapping_of(str, BuildArg)


class BuildSection(Strict):
    context: LocalDir = Field(description="the build context directory")
    dockerfile: DockerfileName = Field("Dockerfile", description="within the context")
    args: BuildArgs = Field(default_factory=dict, description="build arguments")

    @model_validator(mode="after")
    def _dockerfile_exists(self) -> BuildSection:
        if not self.dockerfile_path.is_file():
            fail(f"no such file: {self.dockerfile_path}", "dockerfile")
        return self

    @property
    def dockerfile_path(self) -> Path:
        return (self.context / self.dockerfile).resolve()


ImageRef = text("an image reference")

ImageBuilder = choice(IMAGE_BUILDERS)


class ImageSection(Strict):
    """`install.image`: the image substituted for the manifests' placeholder."""

    ref: ImageRef | None = Field(None, description="an image reference such as 'localhost/x:dev'")
    builder: ImageBuilder | None = Field(None, description="a builder the suite ships")
    build: BuildSection | None = Field(None, description="{context, dockerfile, args}")
    go_module: GoModuleSection | None = Field(
        None, description="{module, version, packages, binaryDir}: built from the Go module"
    )
    load: Boolean = Field(True, description="load the image into the kind nodes")

    @model_validator(mode="after")
    def _one_source(self) -> ImageSection:
        if self.builder is not None and self.build is not None:
            fail("not used with builder; remove one of them", "build")
        if self.go_module is not None:
            for key, value in (("builder", self.builder), ("build", self.build)):
                if value is not None:
                    fail("not used with goModule; remove one of them", key)
            if self.ref is not None:
                fail("not used with goModule, which names its own image; remove it", "ref")
        elif self.builder is None and self.ref is None:
            missing("an image reference such as 'localhost/x:dev'", "ref")
        return self

    def domain(self) -> ImageSpec:
        build = self.build if self.builder is None else None
        context = build.context if build else None
        dockerfile = build.dockerfile_path if build else None
        args = FrozenMap(build.args if build else {})
        go_module = self.go_module.domain() if self.go_module else None
        return ImageSpec(self.ref, self.builder, context, dockerfile, args, self.load, go_module)


Manifests = listed(LocalPath, "paths", nonempty=True)
Chart = text("a chart directory, reference or 'goModule:<path>'")
Release = text("a release name (DNS label)", DNS_LABEL_RE)
Namespace = text("a namespace name (DNS label)", DNS_LABEL_RE)
Values = mapping_of(str, Any)
ValuesFiles = listed(LocalPath, "paths")
ChartVersion = text("a chart version")


class ManifestsSection(Strict):
    method: Literal["manifests"]
    manifests: Manifests = Field(description="a list of manifest files or directories")
    image: ImageSection | None = Field(None, description="the driver image")

    def domain(self, base_dir: Path) -> Install:
        return ManifestsInstall(self.manifests, self.image.domain() if self.image else None)


class HelmSection(Strict):
    method: Literal["helm"]
    chart: Chart = Field(description="a chart directory or reference")
    release: Release = Field(description="a release name")
    namespace: Namespace = Field(description="a namespace")
    values: Values = Field(default_factory=dict, description="chart values")
    values_files: ValuesFiles = Field((), description="values files")
    version: ChartVersion | None = Field(None, description="a chart version")
    image: ImageSection | None = Field(None, description="built/loaded before the chart")

    @model_validator(mode="after")
    def _module_chart(self) -> HelmSection:
        if self.chart.startswith(GO_MODULE_CHART_PREFIX):
            if self.image is None or self.image.go_module is None:
                fail(f"a '{GO_MODULE_CHART_PREFIX}<path>' chart needs image.goModule", "chart")
            if not self.chart[len(GO_MODULE_CHART_PREFIX) :].strip("/"):
                wrong(f"'{GO_MODULE_CHART_PREFIX}<path inside the module>'", self.chart, "chart")
        return self

    def domain(self, base_dir: Path) -> Install:
        chart = self.chart
        if not chart.startswith("oci://"):
            local = Path(chart).expanduser()
            candidate = local if local.is_absolute() else base_dir / local
            if candidate.is_dir():
                chart = str(candidate.resolve())
        image = self.image.domain() if self.image else None
        values, files = FrozenMap(self.values), self.values_files
        return HelmInstall(chart, self.release, self.namespace, values, files, self.version, image)


class PreinstalledSection(Strict):
    method: Literal["preinstalled"]

    def domain(self, base_dir: Path) -> Install:
        return PreinstalledInstall()


InstallSection = Annotated[
    ManifestsSection | HelmSection | PreinstalledSection, Field(discriminator="method")
]
