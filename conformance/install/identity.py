"""What a profile's install creates, by (kind, namespace, name): how the security suite tells
the driver's workloads from the rest of the cluster (conformance.model.driver_workloads).

Manifests say it themselves; a Helm release is found on the cluster by its annotations, and a
preinstalled driver only by its namespaces and readiness DaemonSet.
"""

from __future__ import annotations

from conformance.install.manifests import manifest_files, render_documents
from conformance.kube.apply import DEFAULT_NAMESPACE
from conformance.model.profile import ManifestsInstall, Profile

# Rendering substitutes the image; which image does not change what is created.
_ANY_IMAGE = "identity.invalid/driver:any"


def install_objects(profile: Profile) -> list[tuple[str, str, str]]:
    """(kind, namespace, name) of every object of the profile's manifests ("" as the
    namespace of a Namespace); none for Helm and preinstalled drivers."""
    install = profile.install
    if not isinstance(install, ManifestsInstall):
        return []
    found = []
    for document in render_documents(manifest_files(install.paths), _ANY_IMAGE):
        kind, meta = str(document["kind"]), document.get("metadata") or {}
        namespace = "" if kind == "Namespace" else meta.get("namespace") or DEFAULT_NAMESPACE
        found.append((kind, str(namespace), str(meta.get("name", ""))))
    return found
