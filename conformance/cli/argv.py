"""The command line's two shared steps, apart from the commands themselves: parsing (the
arguments `run` and `gate` do not know go to pytest) and dispatching (a ConformanceError is
one line and exit code 2). The full command line (app) and the Sonobuoy plugin, which runs
`run` inside the cluster, both use them."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from conformance.errors import ConformanceError

PYTEST_PASS_THROUGH = ("run", "gate", "sonobuoy-plugin")


def parse_args(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None = None
) -> argparse.Namespace:
    """Parse `argv`; for `run` and `gate`, whatever they do not know, wherever it stands,
    goes to pytest in the order given (`args.pytest_args`)."""
    args, unknown = parser.parse_known_args(argv)
    if unknown and getattr(args, "command", None) not in PYTEST_PASS_THROUGH:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if unknown:
        args.pytest_args = [*args.pytest_args, *unknown]
    return args


def dispatch(args: argparse.Namespace) -> int:
    """Run the parsed command; its exit code."""
    try:
        return args.func(args)
    except ConformanceError as exc:
        print(f"dra-conformance: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dra-conformance: interrupted", file=sys.stderr)
        return 130
