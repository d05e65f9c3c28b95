"""Assemble the kind node image offline: bookworm rootfs + Go-built binaries + preloaded images.

This is what `kind build node-image` does, minus its registry fetches: start a container from
the base rootfs, copy files in, import the control-plane images into the node's containerd, and
commit the container with kind's entrypoint.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from conformance import docker_client, gobuild
from conformance.cache import build_lock, cache_root
from conformance.errors import BuildError
from conformance.gobuild import GoComponent
from conformance.images import build_graph, rootfs
from conformance.images.build_graph import Task
from conformance.images.cached_image import build_once
from conformance.images.components import CONTAINERD_COMMANDS, components
from conformance.images.tarbuild import TarBuilder
from conformance.images.versions import NodeVersions, node_image_key
from conformance.progress import Progress

NODE_REPOSITORY = "localhost/dra-conformance/node"
ASSETS = ("node-setup.sh", "dra-cni.sh", "dra-cni.service")
KIND_SCRIPT_DIRS = ("usr/local/bin/", "kind/bin/")


def _assets_digest() -> str:
    h = hashlib.sha256()
    for name in ASSETS:
        h.update(resources.files("conformance.images.assets").joinpath(name).read_bytes())
    return h.hexdigest()[:12]


def node_image_ref(v: NodeVersions) -> str:
    return f"{NODE_REPOSITORY}:{v.kubernetes}-{node_image_key(v, _assets_digest())}"


def kubeadm_images(kubeadm: Path, v: NodeVersions) -> list[str]:
    """The exact image names kubeadm will ask the kubelet for."""
    out = subprocess.run(
        [str(kubeadm), "config", "images", "list", "--kubernetes-version", v.kubernetes],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise BuildError(f"kubeadm config images list failed: {out.stderr[-1000:]}")
    return [line.strip() for line in out.stdout.splitlines() if line.strip().count("/")]


def _commit(container, ref: str, changes: list[str]) -> None:
    repo, tag = ref.rsplit(":", 1)
    container.commit(repository=repo, tag=tag, changes=changes)


def build_pause_image(k8s_module: Path, ref_names: list[str], progress: Progress) -> None:
    """Compile kubernetes' own pause.c statically and wrap it in a one-file image."""
    if all(docker_client.image_exists(r) for r in ref_names):
        return
    gcc = shutil.which("gcc")
    if gcc is None:
        raise BuildError("gcc is needed to build the pause image", "apt-get install gcc libc6-dev")
    with progress.stage("build pause image"), tempfile.TemporaryDirectory() as tmp:
        source = k8s_module / "build/pause/linux/pause.c"
        binary = Path(tmp) / "pause"
        result = subprocess.run(
            [gcc, "-Os", "-static", "-o", str(binary), str(source), "-DVERSION=dra-conformance"],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            raise BuildError(f"compiling pause.c failed:\n{result.stderr[-1500:]}")
        tar = TarBuilder()
        tar.add_file("pause", binary, 0o755)
        data = tar.close()
        client = docker_client.client()
        repo, tag = ref_names[0].rsplit(":", 1)
        client.api.import_image_from_data(
            data.read(), repository=repo, tag=tag, changes=['ENTRYPOINT ["/pause"]']
        )
        image = client.images.get(ref_names[0])
        for other in ref_names[1:]:
            image.tag(*other.rsplit(":", 1))


def build_components_image(
    base_ref: str, bins: dict[str, Path], tags: list[str], progress: Progress
) -> None:
    """One image holding apiserver, controller-manager, scheduler, proxy and etcd, tagged with
    every name kubeadm uses: their manifests all give an explicit command, so one image serves."""
    if all(docker_client.image_exists(t) for t in tags):
        return
    # The node-image build and the test API server's fixture may both build it at once.
    lock = "components-" + hashlib.sha256(" ".join(sorted(tags)).encode()).hexdigest()[:12]
    with build_lock(lock, f"the control-plane components image {tags[0]}", progress.note):
        if all(docker_client.image_exists(t) for t in tags):
            return
        _build_components_image(base_ref, bins, tags, progress)


def _build_components_image(
    base_ref: str, bins: dict[str, Path], tags: list[str], progress: Progress
) -> None:
    client = docker_client.client()
    with progress.stage("build control-plane component image"):
        container = client.containers.create(base_ref, command=["true"])
        try:
            tar = TarBuilder()
            for name in (
                "kube-apiserver",
                "kube-controller-manager",
                "kube-scheduler",
                "kube-proxy",
            ):
                tar.add_file(f"usr/local/bin/{name}", bins["kubernetes"] / name, 0o755)
            tar.add_file("usr/local/bin/etcd", bins["etcd"] / "etcd", 0o755)
            container.put_archive("/", tar.close())
            _commit(container, tags[0], ["ENTRYPOINT []", "CMD []"])
        finally:
            container.remove(force=True)
        image = client.images.get(tags[0])
        for other in tags[1:]:
            image.tag(*other.rsplit(":", 1))


def save_images(refs: list[str], dest: Path) -> None:
    """`docker save a b c`: one archive that keeps every tag (the SDK's get_image takes one)."""
    api = docker_client.client().api
    response = api._get(api._url("/images/get"), params={"names": refs}, stream=True)
    api._raise_for_status(response)
    with open(dest, "wb") as out:
        for chunk in response.iter_content(chunk_size=4 << 20):
            out.write(chunk)


def _node_files(v: NodeVersions, bins: dict[str, Path], kind_dir: Path) -> TarBuilder:
    tar = TarBuilder(tempfile.TemporaryFile())  # noqa: SIM115 - the builder owns it
    files = kind_dir / "images/base/files"
    for path in sorted(files.rglob("*")):
        rel = str(path.relative_to(files))
        if path.is_file() and not rel.startswith("LICENSES"):
            script = rel.startswith(KIND_SCRIPT_DIRS)
            tar.add_file(rel, path, 0o755 if script else 0o644)
    for name in ("kubelet", "kubeadm", "kubectl"):
        tar.add_file(f"usr/bin/{name}", bins["kubernetes"] / name, 0o755)
    for name in CONTAINERD_COMMANDS:
        tar.add_file(f"usr/local/bin/{name}", bins["containerd"] / name, 0o755)
    assets = resources.files("conformance.images.assets")
    tar.add_bytes("kind/bin/node-setup.sh", assets.joinpath("node-setup.sh").read_bytes(), 0o755)
    tar.add_bytes("kind/bin/dra-cni.sh", assets.joinpath("dra-cni.sh").read_bytes(), 0o755)
    tar.add_bytes(
        "etc/systemd/system/dra-cni.service", assets.joinpath("dra-cni.service").read_bytes()
    )
    tar.add_bytes("kind/version", f"{v.kubernetes}\n".encode())
    return tar


def build_node_image(v: NodeVersions, progress: Progress) -> str:
    """Return the node image reference, building whatever is missing. Two processes (the two
    tiers of `make test` on a cold machine) share one work directory: the second waits."""
    ref = node_image_ref(v)
    return build_once(ref, f"node-image-{ref.rsplit(':', 1)[1]}", lambda: _build(v, ref, progress))


GO_COMPONENTS = ("kubernetes", "containerd", "etcd", "kind")


def _go_tasks(progress: Progress) -> list[Task]:
    """Per component: its module downloads (io), then its compile (cpu). The fetch hands the
    component on, the compile its output directory."""
    tasks = []
    for name in GO_COMPONENTS:

        def fetch(r: Mapping[str, Any], name: str = name) -> GoComponent:
            component = r["resolve Go components"][name]
            gobuild.fetch(component, progress)
            return component

        tasks.append(Task(f"fetch {name}", fetch, ("resolve Go components",), "io"))
    for name in GO_COMPONENTS:

        def compile_(r: Mapping[str, Any], name: str = name) -> Path:
            return gobuild.build(r[f"fetch {name}"], progress)

        tasks.append(Task(f"compile {name}", compile_, (f"fetch {name}",), "cpu"))
    return tasks


def _image_tasks(v: NodeVersions, progress: Progress) -> list[Task]:
    """The rootfs, the Go components and the images kubeadm runs, as a build graph (the order
    is the priority among ready tasks: the Kubernetes compile, the longest, first)."""

    def resolve(_: Mapping[str, Any]) -> dict[str, GoComponent]:
        return {c.name: c for c in components(v, cache_root() / "gobuild")}

    def image_list(r: Mapping[str, Any]) -> tuple[list[str], list[str]]:
        images = kubeadm_images(r["compile kubernetes"] / "kubeadm", v)
        pause = [i for i in images if "/pause:" in i]
        if not pause:
            raise BuildError(f"kubeadm listed no pause image: {images}")
        return [i for i in images if "/coredns" not in i and "/pause:" not in i], pause

    def pause(r: Mapping[str, Any]) -> None:
        k8s: GoComponent = r["fetch kubernetes"]
        module = gobuild.module_dir(k8s.module, k8s.version, k8s.toolchain)
        build_pause_image(module, r["kubeadm image list"][1], progress)

    def control_plane(r: Mapping[str, Any]) -> None:
        bins = {"kubernetes": r["compile kubernetes"], "etcd": r["compile etcd"]}
        build_components_image(r["node rootfs"], bins, r["kubeadm image list"][0], progress)

    return [
        Task("resolve Go components", resolve),
        Task("node rootfs", lambda _: rootfs.ensure_base_image(v, progress)),
        *_go_tasks(progress),
        Task("kubeadm image list", image_list, ("compile kubernetes",)),
        # gcc on one small file: a second, too short to hold the compile slot for
        Task("pause image", pause, ("kubeadm image list", "fetch kubernetes")),
        Task(
            "control-plane image",
            control_plane,
            ("node rootfs", "compile kubernetes", "compile etcd", "kubeadm image list"),
        ),
    ]


def component_images(v: NodeVersions, progress: Progress) -> list[str]:
    """The images kubeadm of `v` runs (control plane, kube-proxy, etcd, then pause; CoreDNS is
    not installed offline), built into the local Docker where missing."""
    results, _ = build_graph.run(_image_tasks(v, progress), progress)
    control_plane, pause = results["kubeadm image list"]
    return control_plane + pause


def node_image_tasks(v: NodeVersions, ref: str, progress: Progress) -> list[Task]:
    """Every task of the node image's build; the last one, "node image", assembles it."""

    def assemble(r: Mapping[str, Any]) -> str:
        bins = {n: r[f"compile {n}"] for n in ("kubernetes", "containerd")}
        kind: GoComponent = r["fetch kind"]
        kind_dir = gobuild.module_dir(kind.module, kind.version, kind.toolchain)
        control_plane, pause = r["kubeadm image list"]
        return _assemble(v, ref, r["node rootfs"], bins, kind_dir, control_plane, pause, progress)

    deps = ("node rootfs", "compile kubernetes", "compile containerd", "compile kind")
    needs = (*deps, "fetch kind", "kubeadm image list", "pause image", "control-plane image")
    return [*_image_tasks(v, progress), Task("node image", assemble, needs)]


def _build(v: NodeVersions, ref: str, progress: Progress) -> str:
    return build_graph.run(node_image_tasks(v, ref, progress), progress)[0]["node image"]


def _assemble(
    v: NodeVersions,
    ref: str,
    base: str,
    bins: dict[str, Path],
    kind_dir: Path,
    control_plane: list[str],
    pause: list[str],
    progress: Progress,
) -> str:
    client = docker_client.client()
    work = cache_root() / "node-build"
    work.mkdir(parents=True, exist_ok=True)
    with progress.stage(f"assemble node image {ref}"):
        archive = work / "images.tar"
        save_images(control_plane + pause, archive)
        container = client.containers.run(
            base,
            entrypoint=["sleep", "infinity"],
            detach=True,
            privileged=True,
            tmpfs={"/tmp": "", "/run": ""},
            environment={"PAUSE_IMAGE": pause[0]},
        )
        try:
            container.put_archive("/", _node_files(v, bins, kind_dir).close())
            img_tar = TarBuilder(tempfile.TemporaryFile())  # noqa: SIM115
            img_tar.add_file("kind/images.tar", archive, 0o644)
            container.put_archive("/", img_tar.close())
            archive.unlink()
            code, output = container.exec_run(
                ["/kind/bin/node-setup.sh"], environment={"PAUSE_IMAGE": pause[0]}
            )
            (work / "node-setup.log").write_bytes(output)
            if code != 0:
                excerpt = "\n".join(output.decode(errors="replace").splitlines()[-25:])
                raise BuildError(
                    f"stage 'node setup' failed (exit {code}):\n{excerpt}",
                    f"full log: {work / 'node-setup.log'}",
                )
            container.stop(timeout=5)
            staged = ref + "-staged"
            _commit(
                container,
                staged,
                [
                    'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]',
                    "ENV container=docker",
                ],
            )
        finally:
            container.remove(force=True)
        _set_stop_signal(staged, ref)
    return ref


def _set_stop_signal(source: str, ref: str) -> None:
    """systemd as PID 1 stops cleanly on SIGRTMIN+3. `commit --change` cannot set STOPSIGNAL
    on every engine version, a one-line local build (no registry involved) can."""
    client = docker_client.client()
    dockerfile = f"FROM {source}\nSTOPSIGNAL SIGRTMIN+3\n".encode()
    tar = TarBuilder()
    tar.add_bytes("Dockerfile", dockerfile)
    client.images.build(fileobj=tar.close(), custom_context=True, tag=ref, pull=False, rm=True)
    client.images.remove(source, noprune=True)
