"""`dra-conformance image`: build the suite's own image (run inside a cluster, Sonobuoy)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from conformance.progress import Progress


def add_image_command(sub: argparse._SubParsersAction) -> None:
    image = sub.add_parser(
        "image",
        help="build localhost/dra-conformance/suite:<version> offline (no-op when unchanged)",
        description="Build the suite's image from the Debian python base and the suite's "
        "wheel (scenarios, catalog, the fake driver's manifests), with the selector helper "
        "and the Allure generator; no registry needed. It runs `dra-conformance run "
        "--cluster in-cluster --profile /profile/profile.yaml --report-dir /tmp/results` "
        "(arguments given to the container replace the last four). Prints the image "
        "reference last.",
    )
    image.add_argument(
        "--rebuild", action="store_true", help="build even if an image of this content exists"
    )
    image.add_argument(
        "--load",
        metavar="NAME",
        default=None,
        help="also load it into the worker nodes of the kind cluster NAME",
    )
    image.set_defaults(func=_image)


def _report_tools(progress: Progress):
    from conformance.images.suite_image import ReportTools
    from conformance.report.allure_html import ReportToolMissing, find_allure_cli, npm_prefix

    try:
        cli = find_allure_cli()
    except ReportToolMissing as exc:
        progress.note(f"the image carries no Allure generator: {exc}")
        return ReportTools()
    return ReportTools(node=Path(os.path.realpath(cli.node)), npm_prefix=npm_prefix())


def _image(args: argparse.Namespace) -> int:
    from conformance.cel.build import helper_binary
    from conformance.images.suite_image import build_suite_image

    progress = Progress()
    image = build_suite_image(
        _report_tools(progress), helper_binary(progress), progress, rebuild=args.rebuild
    )
    if args.load:
        from conformance.cluster import kind, kind_images

        cluster = kind.cluster_for(args.load, 1, "v1.37.2", True, progress)
        workers = [n for n in cluster.nodes() if "control-plane" not in n]
        kind_images.load_into_cluster(
            cluster.kind, cluster.name, workers, image.content_ref, progress
        )
    print(f"{'built' if image.built else 'unchanged'}: {image.ref}")
    print(image.content_ref)  # the last line: scripts take the reference from it
    return 0
