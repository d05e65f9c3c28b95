"""A driver installed from manifests: the profile's files rendered into one list of objects
(images substituted, dependencies first) and server-side applied, or deleted in reverse.

Besides IMAGE_PLACEHOLDER (the driver's image), WORKLOAD_PLACEHOLDER names the suite's
workload image (busybox: `sh`, `ip`, `nsenter`, ...), which the suite builds and loads into
kind nodes itself: a manifest's helper container (a node set-up step, an init container)
then needs no image from a registry."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

from conformance.install.errors import InstallError
from conformance.install.image import IMAGE_PLACEHOLDER
from conformance.kube import apply
from conformance.kube.client import K8sClients

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
# Not containing IMAGE_PLACEHOLDER, so neither substitution touches the other.
WORKLOAD_PLACEHOLDER = "WORKLOAD_PLACEHOLDER"
UNINSTALL_TIMEOUT_S = 300.0


def manifest_files(paths: Iterable[Path]) -> list[Path]:
    """Files in the order given; a directory contributes its manifests sorted by name."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.iterdir() if p.suffix in MANIFEST_SUFFIXES)
        elif path.is_file():
            files.append(path)
        else:
            raise InstallError(f"manifest path {path} does not exist", "fix install.manifests")
    if not files:
        raise InstallError(
            "install.manifests names no manifest files",
            f"put {', '.join(MANIFEST_SUFFIXES)} files there",
        )
    return files


def uses_workload_image(files: Sequence[Path]) -> bool:
    """Whether any file names WORKLOAD_PLACEHOLDER (the installer then provides the image)."""
    return any(WORKLOAD_PLACEHOLDER in f.read_text() for f in files)


def render_files(
    files: Sequence[Path], image: str | None, workload_image: str | None = None
) -> list[tuple[Path, str]]:
    """Each file's text as it is applied: IMAGE_PLACEHOLDER replaced by `image`,
    WORKLOAD_PLACEHOLDER by `workload_image` (left as it is when None: nothing is applied)."""
    rendered = []
    for f in files:
        text = f.read_text()
        if workload_image is not None:
            text = text.replace(WORKLOAD_PLACEHOLDER, workload_image)
        if IMAGE_PLACEHOLDER in text:
            if image is None:
                raise InstallError(
                    f"{f} uses {IMAGE_PLACEHOLDER} but the profile has no install.image",
                    "add install.image (ref, builder or goModule)",
                )
            text = text.replace(IMAGE_PLACEHOLDER, image)
        rendered.append((f, text))
    return rendered


def text_digest(text: str) -> str:
    """`sha256:<hex>` of `text` as UTF-8, the encoding the file was read in."""
    return f"sha256:{hashlib.sha256(text.encode()).hexdigest()}"


def applied_manifests(rendered: Sequence[tuple[Path, str]]) -> list[dict[str, str]]:
    """`[{"path", "sha256"}]` of the rendered files: what the report names as applied."""
    return [{"path": str(f), "sha256": text_digest(text)} for f, text in rendered]


def parse_documents(rendered: Sequence[tuple[Path, str]]) -> list[dict[str, Any]]:
    """The objects of the rendered files, dependencies first."""
    documents: list[dict[str, Any]] = []
    for f, text in rendered:
        try:
            loaded = [d for d in yaml.safe_load_all(text) if d]
        except yaml.YAMLError as exc:
            raise InstallError(f"{f} is not valid YAML: {exc}", "fix the manifest") from None
        for document in loaded:
            if not isinstance(document, dict) or not document.get("kind"):
                raise InstallError(
                    f"{f} holds a document that is not a Kubernetes object (no kind)",
                    "fix the manifest",
                )
        documents += loaded
    return apply.install_order(documents)


def render_documents(files: Sequence[Path], image: str | None) -> list[dict[str, Any]]:
    """The objects of `files` with IMAGE_PLACEHOLDER substituted, dependencies first."""
    return parse_documents(render_files(files, image))


def render_manifests(files: Sequence[Path], image: str | None) -> str:
    """render_documents as one multi-document YAML stream (what would be applied)."""
    return yaml.safe_dump_all(render_documents(files, image), sort_keys=False)


def apply_manifests(k8s: K8sClients, documents: Sequence[dict[str, Any]]) -> list[str]:
    """Server-side apply; InstallError names the object and what the API server said."""
    try:
        return apply.apply_all(k8s.api_client, documents)
    except apply.ApplyError as exc:
        raise InstallError(str(exc), "check the manifests named in install.manifests") from None


def delete_manifests(
    k8s: K8sClients, documents: Sequence[dict[str, Any]], timeout: float = UNINSTALL_TIMEOUT_S
) -> list[str]:
    """Delete in reverse order, each object gone before the next."""
    try:
        return apply.delete_all(k8s.api_client, documents, timeout=timeout)
    except apply.ApplyError as exc:
        raise InstallError(str(exc), "see what the cluster said about the object") from None
