"""A driver installed with helm: the `helm upgrade --install` / `helm uninstall` command lines
built from the profile (values with the image placeholders replaced), and running helm, whose
last error line is what the user sees."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from conformance.errors import HostError
from conformance.install.errors import InstallError
from conformance.install.image import IMAGE_PLACEHOLDER
from conformance.model.profile import GO_MODULE_CHART_PREFIX, HelmInstall
from conformance.progress import Progress

# In install.values, replaced by the image the profile builds (install.image): the full
# reference, or its repository and tag for charts that take them apart (image.repository/tag).
IMAGE_REPOSITORY_PLACEHOLDER = "IMAGE_REPOSITORY_PLACEHOLDER"
IMAGE_TAG_PLACEHOLDER = "IMAGE_TAG_PLACEHOLDER"
HELM_TIMEOUT_S = 300.0
# helm refuses to adopt objects it did not create: the driver is installed some other way.
HELM_NOT_OWNER_REMEDY = (
    "the driver is already installed by other means (e.g. from manifests); remove that "
    "install first (dra-conformance driver uninstall --profile <the profile that installed it>)"
)

# Server-side apply (helm 4) refuses to take fields another manager set. The harness gives back
# what it changes on the driver's objects, so only a run stopped mid-change (or someone's
# kubectl edit) leaves such a manager; the harness never forces past it.
HELM_CONFLICT_REMEDY = (
    "another field manager (named in the error) changed fields of the release's objects; "
    "if it is dra-conformance, a run was stopped while it changed the driver: put the "
    "chart's version back with `helm upgrade --force-conflicts` (same release, chart and "
    "values) once, then run again"
)


@dataclass(frozen=True)
class HelmCommand:
    """One helm invocation: its argv and what goes to its stdin (the profile's values)."""

    argv: tuple[str, ...]
    stdin: str | None = None

    def __str__(self) -> str:
        return " ".join(self.argv)


def split_image_ref(ref: str) -> tuple[str, str]:
    """(repository, tag) of an image reference; a digest counts as the tag's place
    (`repo@sha256:..` -> ('repo', '@sha256:..') would not template, so it is refused)."""
    if "@" in ref:
        raise InstallError(
            f"image {ref} is pinned by digest; {IMAGE_TAG_PLACEHOLDER} needs a tag",
            f"use {IMAGE_PLACEHOLDER} (the full reference) in install.values",
        )
    name, sep, tag = ref.rpartition(":")
    if not sep or "/" in tag:  # no tag, or the colon was a registry port
        return ref, "latest"
    return name, tag


def helm_values(values: Any, image: str | None) -> Any:
    """The profile's install.values with the image placeholders replaced, recursively."""
    if isinstance(values, Mapping):
        return {key: helm_values(value, image) for key, value in values.items()}
    if isinstance(values, (list, tuple)):
        return [helm_values(value, image) for value in values]
    if not isinstance(values, str):
        return values
    placeholders = (IMAGE_REPOSITORY_PLACEHOLDER, IMAGE_TAG_PLACEHOLDER, IMAGE_PLACEHOLDER)
    if not any(p in values for p in placeholders):
        return values
    if image is None:
        raise InstallError(
            f"install.values uses an image placeholder ({values}) but the profile has no "
            "install.image",
            "add install.image (ref, builder or goModule)",
        )
    repository, tag = split_image_ref(image) if IMAGE_PLACEHOLDER not in values else (image, "")
    return (
        values.replace(IMAGE_REPOSITORY_PLACEHOLDER, repository)
        .replace(IMAGE_TAG_PLACEHOLDER, tag)
        .replace(IMAGE_PLACEHOLDER, image)
    )


def local_chart(method: HelmInstall) -> str:
    """The chart helm is given: a `goModule:<path>` chart as its directory in the module cache
    (the module version install.image.goModule builds), any other chart as the profile says."""
    spec = method.image.go_module if method.image is not None else None
    if spec is None or not method.chart.startswith(GO_MODULE_CHART_PREFIX):
        return method.chart
    from conformance.images import gomodule

    return gomodule.resolve_chart(method.chart, spec)


def _helm_target(kubeconfig: str, context: str | None, namespace: str) -> list[str]:
    args = ["--namespace", namespace, "--kubeconfig", kubeconfig]
    return args + (["--kube-context", context] if context else [])


def helm_install_command(
    helm: str, method: HelmInstall, kubeconfig: str, context: str | None, image: str | None
) -> HelmCommand:
    """`helm upgrade --install`: idempotent, so a second install changes nothing. No --wait:
    wait_ready checks readiness and says what is missing. Values files first, then the
    profile's values (from stdin), which win."""
    argv = [helm, "upgrade", "--install", method.release, local_chart(method)]
    argv += _helm_target(kubeconfig, context, method.namespace)
    argv += ["--create-namespace", "--timeout", f"{HELM_TIMEOUT_S:.0f}s"]
    if method.version:
        argv += ["--version", method.version]
    for values_file in method.values_files:
        argv += ["--values", str(values_file)]
    stdin = None
    if method.values:
        argv += ["--values", "-"]
        stdin = yaml.safe_dump(helm_values(method.values, image), sort_keys=False)
    return HelmCommand(tuple(argv), stdin)


def helm_uninstall_command(
    helm: str, method: HelmInstall, kubeconfig: str, context: str | None
) -> HelmCommand:
    """`helm uninstall --wait --cascade foreground`: returns once the release's objects *and
    their pods* are gone, so a reinstall (by helm or from manifests) never runs beside a
    terminating plugin pod that removes the registration socket on its way out."""
    argv = [helm, "uninstall", method.release, *_helm_target(kubeconfig, context, method.namespace)]
    argv += ["--wait", "--cascade", "foreground", "--timeout", f"{HELM_TIMEOUT_S:.0f}s"]
    argv += ["--ignore-not-found"]
    return HelmCommand(tuple(argv))


def helm_tool(progress: Progress) -> str:
    """A helm on PATH (the user's choice), else the one built from the Go module proxy."""
    found = shutil.which("helm")
    if found:
        return found
    from conformance.images import components

    try:
        return str(components.helm_binary(progress))
    except HostError as exc:
        raise HostError(
            "helm is not on PATH and cannot be built here (no Go toolchain)",
            "put helm (v3 or v4) on PATH, or install Go >= 1.26 so dra-conformance builds it",
        ) from exc


def run_helm(command: HelmCommand, what: str, remedy: str) -> None:
    """Run helm; on failure, one line: what failed, helm's last stderr line, the command."""
    try:
        result = subprocess.run(
            command.argv,
            input=command.stdin,
            capture_output=True,
            text=True,
            timeout=HELM_TIMEOUT_S + 60,
        )
    except subprocess.TimeoutExpired:
        raise InstallError(
            f"{what} did not finish in {HELM_TIMEOUT_S + 60:.0f}s: {command}", remedy
        ) from None
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines() or ["(no output)"]
        if "invalid ownership metadata" in lines[-1]:
            remedy = HELM_NOT_OWNER_REMEDY
        elif "Apply failed with" in lines[-1] and "conflict" in lines[-1]:
            remedy = HELM_CONFLICT_REMEDY
        raise InstallError(f"{what} failed: {lines[-1]} (command: {command})", remedy)


def helm_install(
    method: HelmInstall,
    image: str | None,
    kubeconfig: str,
    context: str | None,
    progress: Progress,
) -> None:
    command = helm_install_command(helm_tool(progress), method, kubeconfig, context, image)
    with progress.stage(f"helm upgrade --install {method.release} {method.chart}"):
        run_helm(
            command,
            f"helm install of {method.chart}",
            "fix install.chart/values in the profile, or run the command by hand to see all",
        )


def helm_uninstall(
    method: HelmInstall, kubeconfig: str, context: str | None, progress: Progress
) -> None:
    command = helm_uninstall_command(helm_tool(progress), method, kubeconfig, context)
    with progress.stage(f"helm uninstall {method.release}"):
        run_helm(command, f"helm uninstall of release {method.release}", "see helm's error")


def _chart_yaml(chart: str) -> Mapping[str, Any] | None:
    """The Chart.yaml of a local chart (a directory, or a packaged `.tgz`); None for a chart
    reference (`repo/name`, `oci://...`), which only helm resolves."""
    path = Path(chart)
    text = None
    if path.is_dir() and (path / "Chart.yaml").is_file():
        text = (path / "Chart.yaml").read_text(encoding="utf-8")
    elif path.is_file() and tarfile.is_tarfile(path):
        with tarfile.open(path) as archive:
            top_level = (m for m in archive.getmembers() if m.name.count("/") == 1)
            member = next((m for m in top_level if m.name.endswith("/Chart.yaml")), None)
            extracted = archive.extractfile(member) if member is not None else None
            text = extracted.read().decode("utf-8") if extracted is not None else None
    if text is None:
        return None
    loaded = yaml.safe_load(text)
    return loaded if isinstance(loaded, Mapping) else None


def chart_identity(method: HelmInstall) -> dict[str, str | None]:
    """`{"chart": name, "version": version}` of the chart the profile installs: from a local
    chart's Chart.yaml; for a chart reference, its last path segment and the profile's version
    (None when the profile pins none: helm took the newest)."""
    meta = _chart_yaml(local_chart(method))
    if meta is not None:
        return {"chart": str(meta.get("name") or ""), "version": str(meta.get("version") or "")}
    name = method.chart.rstrip("/").rsplit("/", 1)[-1].split(":", 1)[0]
    return {"chart": name, "version": method.version}
