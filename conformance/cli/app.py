"""`dra-conformance` command line: cluster, driver, profile, run, gate and cleanup subcommands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from conformance.cli.argv import dispatch, parse_args
from conformance.errors import ConformanceError

DEFAULT_CLUSTER = "dra-conformance"


def _worker_count(text: str) -> int:
    """argparse type: a DRA cluster needs at least one worker node."""
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of at least 1")
    return count


def _add_cluster_commands(sub: argparse._SubParsersAction) -> None:
    cluster = sub.add_parser("cluster", help="create, inspect and delete the kind cluster")
    csub = cluster.add_subparsers(dest="action", required=True, metavar="ACTION")

    up = csub.add_parser(
        "up",
        help="create a DRA-ready kind cluster (or reuse a healthy one) with the workload image "
        "loaded; prints its kubeconfig path last",
    )
    up.add_argument("--name", default=DEFAULT_CLUSTER, help="cluster name (default %(default)s)")
    up.add_argument(
        "--workers",
        type=_worker_count,
        help="worker nodes of a new cluster (default 2); an existing cluster is reused as it "
        "is, and one of another worker count is an error",
    )
    up.add_argument("--k8s", default="v1.37.2", help="Kubernetes version (default %(default)s)")
    mode = up.add_mutually_exclusive_group()
    mode.add_argument(
        "--offline",
        dest="offline",
        action="store_const",
        const=True,
        help="build the node image here from Go modules and Debian packages",
    )
    mode.add_argument(
        "--online",
        dest="offline",
        action="store_const",
        const=False,
        help="use the official kindest/node image from a registry",
    )
    up.add_argument("--retain", action="store_true", help="keep nodes of a failed create")
    up.add_argument(
        "--profile",
        metavar="FILE",
        help="make the cluster as the profile's cluster block asks (gates, kubelet, containerd, "
        "mounts, labels); an existing one made with another block is an error",
    )
    up.set_defaults(func=_cluster_up)

    image = csub.add_parser("image", help="build the offline node image (no-op when present)")
    image.add_argument("--k8s", default="v1.37.2")
    image.set_defaults(func=_cluster_image)

    upgrade = csub.add_parser(
        "upgrade",
        help="upgrade the kind cluster in place to another Kubernetes version",
        description="Offline, the way a platform team upgrades: the new version's images staged "
        "on every node, then the control plane (kubeadm upgrade apply, its kubelet), then each "
        "worker in turn: drain, kubeadm upgrade node, the new kubelet, uncordon. Builds the "
        "target version's binaries and images first when missing (25-60 minutes cold).",
    )
    upgrade.add_argument("--name", default=DEFAULT_CLUSTER)
    upgrade.add_argument("--to", required=True, metavar="VERSION", help="e.g. v1.37.2")
    upgrade.add_argument(
        "--logs", type=Path, default=Path("reports"), help="where command output goes"
    )
    upgrade.set_defaults(func=_cluster_upgrade)

    for action, helptext, func in (
        ("down", "delete the cluster", _cluster_down),
        ("status", "nodes, version, served DRA resources, enabled gates", _cluster_status),
        ("kubeconfig", "print the kubeconfig path", _cluster_kubeconfig),
    ):
        p = csub.add_parser(action, help=helptext)
        p.add_argument("--name", default=DEFAULT_CLUSTER)
        p.set_defaults(func=func)


def _cluster_up(args: argparse.Namespace) -> int:
    from conformance.cluster import kind, kind_images
    from conformance.progress import Progress

    progress = Progress()
    requirements = None
    if args.profile:
        from conformance.cli.driver_commands import _load
        from conformance.suite_root import bundled

        requirements = _load(bundled(args.profile)).cluster
    cluster = kind.up(
        name=args.name,
        workers=args.workers,
        kubernetes=args.k8s,
        offline=args.offline,
        retain=args.retain,
        progress=progress,
        requirements=requirements,
    )
    kind_images.load_workload_image(cluster, progress)  # what `run --cluster existing` runs
    print(cluster.kubeconfig)  # the last line: scripts take the kubeconfig from it
    return 0


def _cluster_image(args: argparse.Namespace) -> int:
    from conformance.cache import cache_root
    from conformance.host import prepare
    from conformance.images import nodeimage
    from conformance.images.versions import NodeVersions
    from conformance.progress import Progress

    progress = Progress()
    prepare.prepare_host(progress, cache_root() / "logs")
    print(nodeimage.build_node_image(NodeVersions.for_kubernetes(args.k8s), progress))
    return 0


def _existing_kind_cluster(name: str):
    from conformance.cluster import kind

    path = kind.kubeconfig_path(name)
    if not path.exists():
        raise ConformanceError(
            f"no cluster named {name!r} was created by dra-conformance",
            f"create it with: dra-conformance cluster up --name {name}",
        )
    return path


def _cluster_down(args: argparse.Namespace) -> int:
    from conformance.cluster import kind
    from conformance.progress import Progress

    progress = Progress()
    cluster = kind.cluster_for(args.name, 1, "v1.37.2", True, progress)
    with progress.stage(f"delete cluster {args.name}"):
        cluster.delete()
    return 0


def _cluster_upgrade(args: argparse.Namespace) -> int:
    from kubernetes import config as k8s_config

    from conformance.cluster.upgrade import KindUpgrade
    from conformance.kube.client import clients_for
    from conformance.progress import Progress

    kubeconfig = _existing_kind_cluster(args.name)
    k8s = clients_for(k8s_config.new_client_from_config(config_file=str(kubeconfig)))
    progress = Progress()
    upgrade = KindUpgrade(args.name, args.to, k8s, progress, args.logs)
    upgrade.stage()
    upgrade.upgrade_control_plane()
    upgrade.upgrade_all_workers()
    for stage, seconds in upgrade.timings.items():
        print(f"{seconds:7.0f} s  {stage}")
    return 0


def _cluster_kubeconfig(args: argparse.Namespace) -> int:
    print(_existing_kind_cluster(args.name))
    return 0


def _cluster_status(args: argparse.Namespace) -> int:
    from conformance.cluster import status

    print(status.describe(_existing_kind_cluster(args.name)))
    return 0


def build_parser(
    extra: Sequence[Callable[[argparse._SubParsersAction], None]] = (),
) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dra-conformance",
        description="Conformance suite for Kubernetes DRA drivers: provision a kind cluster, "
        "install a driver from its profile, run the scenario suites, write a verdict.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_cluster_commands(sub)
    for add in extra:
        add(sub)
    return parser


def _extra_commands() -> list[Callable[[argparse._SubParsersAction], None]]:
    from conformance.cli import (
        bundle_command,
        cleanup,
        driver_commands,
        gate_command,
        image_command,
        matrix_command,
        sonobuoy_command,
        verify_command,
    )

    return [
        bundle_command.add_bundle_command,
        cleanup.add_cleanup_command,
        gate_command.add_gate_command,
        driver_commands.add_driver_commands,
        driver_commands.add_profile_commands,
        driver_commands.add_run_command,
        image_command.add_image_command,
        matrix_command.add_matrix_command,
        sonobuoy_command.add_sonobuoy_command,
        verify_command.add_verify_command,
    ]


def main(argv: Sequence[str] | None = None) -> int:
    # A subcommand module that fails to import is an error here, never a missing command.
    args = parse_args(build_parser(_extra_commands()), argv)
    return dispatch(args)


if __name__ == "__main__":
    sys.exit(main())
