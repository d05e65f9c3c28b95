"""`dra-conformance bundle save|load FILE`: everything a run builds, in one file, for machines
that cannot build it (air-gapped labs, CI fleets)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from conformance.progress import Progress


def _names(text: str) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()]


def add_bundle_command(sub: argparse._SubParsersAction) -> None:
    bundle = sub.add_parser(
        "bundle",
        help="save what a run builds into one file, or load such a file (air-gapped labs)",
        description="`save` writes the node image(s), the fake driver, workload and python "
        "base images, kind, helm, the selector helper and the Allure generator, keyed as this "
        "checkout looks them up, with a manifest of keys and sha256s; `load` checks every "
        "sha256 first, then installs what this machine lacks. After a load, `make conformance` "
        "starts at cluster creation.",
    )
    bsub = bundle.add_subparsers(dest="action", required=True, metavar="ACTION")
    save = bsub.add_parser("save", help="write the bundle (fails naming what is not built)")
    save.add_argument("file", type=Path, metavar="FILE")
    save.add_argument(
        "--k8s",
        action="append",
        metavar="V",
        help="a node image's Kubernetes version, repeatable (default v1.37.2)",
    )
    save.add_argument(
        "--only",
        type=_names,
        default=[],
        metavar="NAMES",
        help="only these entries, comma-separated (e.g. kind,workload)",
    )
    save.add_argument("--build", action="store_true", help="build missing entries first")
    save.set_defaults(func=_save)
    load = bsub.add_parser("load", help="verify a bundle and install what is missing here")
    load.add_argument("file", type=Path, metavar="FILE")
    load.set_defaults(func=_load)


def _save(args: argparse.Namespace) -> int:
    from conformance.bundle import entries, transfer

    kubernetes = args.k8s or list(entries.DEFAULT_KUBERNETES)
    saved, size = transfer.save(args.file, kubernetes, args.only, args.build, Progress())
    for entry in saved:
        print(f"saved {entry.name} {entry.key} ({entry.location})")
    print(f"{args.file}: {len(saved)} entries, {size / 1e9:.2f} GB")
    return 0


def _load(args: argparse.Namespace) -> int:
    from conformance.bundle import transfer

    result = transfer.load(args.file, Progress())
    for name in result.installed:
        print(f"installed {name}")
    for name in result.skipped:
        print(f"skipped {name} (present)")
    for line in result.not_found:
        print(f"warning: {line}; a run here builds it again", file=sys.stderr)
    return 0
