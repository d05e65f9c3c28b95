"""What a run of this checkout looks up before it creates a cluster, each with the key, the
"is it built?" check and the builder the run itself uses: the bundle never computes a key of
its own, so it holds exactly what this checkout would find, never an older build."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from conformance import docker_client, gobuild
from conformance.bundle.manifest import BundleError, Entry
from conformance.cache import cache_root
from conformance.cel import build as cel_build
from conformance.images import components, harness, nodeimage
from conformance.images.versions import NodeVersions
from conformance.progress import Progress
from conformance.report import allure_html

DEFAULT_KUBERNETES = ("v1.37.2",)
# What `make conformance` needs on top of the node images; python-base and helm let a changed
# fake driver or a Helm profile build offline as well.
NAMES = ("kind", "workload", "fake-driver", "python-base", "dra-cel", "helm", "allure")


@dataclass(frozen=True)
class Needed:
    entry: Entry
    present: Callable[[], bool]
    build: Callable[[Progress], object]
    how: str = ""  # the command that builds it alone, when there is one


def _image(name: str, ref: str, build: Callable[[Progress], object], how: str = "") -> Needed:
    key = ref.rsplit(":", 1)[1]
    entry = Entry(name=name, kind="image", key=key, location=ref)
    return Needed(entry, lambda: docker_client.image_exists(ref), build, how)


def _go(name: str, component: gobuild.GoComponent, how: str = "") -> Needed:
    location = gobuild.output_dir(component).relative_to(cache_root()).as_posix()
    entry = Entry(name=name, kind="dir", key=component.key, location=location)
    return Needed(
        entry,
        lambda: gobuild.is_built(component),
        lambda progress: gobuild.build(component, progress),
        how,
    )


def _allure_present() -> bool:
    try:
        allure_html.find_allure_cli()
    except allure_html.ReportToolMissing:
        return False
    return True


def _allure() -> Needed:
    entry = Entry(
        name="allure",
        kind="dir",
        key=f"{allure_html.ALLURE_NPM_PACKAGE}@{allure_html.ALLURE_NPM_VERSION}",
        location=".",
        root="npm",
    )
    return Needed(
        entry,
        _allure_present,
        lambda _progress: allure_html.install_allure(),
        "python -m conformance.report.allure_html install",
    )


def _kind(v: NodeVersions) -> gobuild.GoComponent:
    """The kind the cluster provider runs (conformance/cluster/kind.py kind_binary)."""
    return next(c for c in components.components(v, cache_root() / "gobuild") if c.name == "kind")


def _node(kubernetes: str) -> Needed:
    v = NodeVersions.for_kubernetes(kubernetes)
    return _image(
        f"node:{kubernetes}",
        nodeimage.node_image_ref(v),
        lambda progress: nodeimage.build_node_image(v, progress),
        f"dra-conformance cluster image --k8s {kubernetes}",
    )


def _by_name(first: NodeVersions) -> dict[str, Callable[[], Needed]]:
    return {
        "kind": lambda: _go("kind", _kind(first), "dra-conformance cluster up"),
        "workload": lambda: _image(
            "workload", harness.workload_image_ref(), harness.build_workload_image
        ),
        "fake-driver": lambda: _image(
            "fake-driver", harness.fake_driver_image_ref(), harness.build_driver_image
        ),
        "python-base": lambda: _image(
            "python-base", harness.python_base_ref(), harness.build_python_base
        ),
        "dra-cel": lambda: _go("dra-cel", cel_build.helper_component()),
        "helm": lambda: _go("helm", components.helm_component()),
        "allure": _allure,
    }


def needed(
    kubernetes: Sequence[str] = DEFAULT_KUBERNETES, only: Sequence[str] = ()
) -> list[Needed]:
    """The entries for `kubernetes` (node images first), or the `only` ones by name."""
    if not kubernetes:
        raise BundleError("no Kubernetes version given", "pass --k8s v1.37.2 (or omit it)")
    builders = _by_name(NodeVersions.for_kubernetes(kubernetes[0]))
    names = [*(f"node:{k}" for k in kubernetes), *NAMES]
    unknown = [n for n in only if n not in names]
    if unknown:
        raise BundleError(
            f"--only {','.join(unknown)}: no such bundle entry", f"choose from {', '.join(names)}"
        )
    selected = [n for n in names if not only or n in only]
    return [_node(n.split(":", 1)[1]) if n.startswith("node:") else builders[n]() for n in selected]


def install_root(entry: Entry) -> Path:
    """Where a directory entry is installed: what the run's lookup reads."""
    base = allure_html.npm_prefix() if entry.root == "npm" else cache_root()
    return (base / entry.location).resolve() if entry.location != "." else base
