"""`dra-conformance driver|profile|run`: the commands that need a driver profile."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from conformance.errors import ConformanceError
from conformance.model.profile import SUITE_ROOT, Profile, ProfileError
from conformance.model.profile_parse import load_profile
from conformance.suite_root import bundled

DEFAULT_CLUSTER = "dra-conformance"
SCENARIOS = SUITE_ROOT / "scenarios"


def _load(path: str) -> Profile:
    try:
        return load_profile(path)
    except ProfileError as exc:
        raise ConformanceError(str(exc), "fix the profile (format: docs/profile.md)") from None


def _target(args: argparse.Namespace) -> tuple[str, str | None, str | None]:
    """(kubeconfig, context, kind cluster name or None) for --kubeconfig or the kind cluster."""
    if args.kubeconfig:
        if not Path(args.kubeconfig).is_file():
            raise ConformanceError(
                f"kubeconfig {args.kubeconfig} does not exist",
                "pass the path of an existing kubeconfig",
            )
        return args.kubeconfig, args.context, None
    from conformance.cluster import kind

    path = kind.kubeconfig_path(args.name)
    if not path.exists():
        raise ConformanceError(
            f"no kind cluster named {args.name!r} (and no --kubeconfig given)",
            f"create it with: dra-conformance cluster up --name {args.name}, "
            "or pass --kubeconfig PATH for an existing cluster",
        )
    return str(path), None, args.name


def _add_target_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--profile",
        required=True,
        type=bundled,
        metavar="FILE",
        help="driver profile, e.g. drivers/fake/profile.yaml",
    )
    parser.add_argument(
        "--name",
        default=DEFAULT_CLUSTER,
        help="kind cluster created by `cluster up` (default %(default)s)",
    )
    parser.add_argument("--kubeconfig", default=None, help="an existing cluster instead of kind")
    parser.add_argument("--context", default=None, help="kubeconfig context (with --kubeconfig)")


def add_driver_commands(sub: argparse._SubParsersAction) -> None:
    driver = sub.add_parser("driver", help="install or remove a driver described by a profile")
    dsub = driver.add_subparsers(dest="action", required=True, metavar="ACTION")
    install = dsub.add_parser(
        "install",
        help="build/load its image (and, on a kind cluster, the workload image), apply it, "
        "wait until ready (DaemonSet ready, slices on every node)",
    )
    _add_target_args(install)
    install.set_defaults(func=_driver_install)
    uninstall = dsub.add_parser("uninstall", help="delete what `driver install` applied")
    _add_target_args(uninstall)
    uninstall.set_defaults(func=_driver_uninstall)


def _driver_install(args: argparse.Namespace) -> int:
    from conformance.install import installer
    from conformance.progress import Progress

    profile = _load(args.profile)
    kubeconfig, context, kind_name = _target(args)
    installer.ensure_reachable(kubeconfig, context)
    progress = Progress()
    installer.install(profile, kubeconfig, context, installer.KindTarget(kind_name), progress)
    if kind_name:  # a later `run --cluster existing` runs its workload pods on these nodes
        from conformance.cluster.kind_images import workload_image

        workload_image(kind_name, progress)
    state = installer.wait_ready(profile, kubeconfig, context, progress=progress)
    print(f"{profile.driver} ready: {state}")
    return 0


def _driver_uninstall(args: argparse.Namespace) -> int:
    from conformance.install import installer

    profile = _load(args.profile)
    kubeconfig, context, _ = _target(args)
    installer.ensure_reachable(kubeconfig, context)
    installer.uninstall(profile, kubeconfig, context)
    return 0


def add_profile_commands(sub: argparse._SubParsersAction) -> None:
    profile = sub.add_parser("profile", help="validate a driver profile")
    psub = profile.add_subparsers(dest="action", required=True, metavar="ACTION")
    check = psub.add_parser(
        "check",
        help="validate FILE; with a reachable cluster also check it against the "
        "driver's slices, classes and selectors",
        description="Validate a driver profile (docs/profile.md), then, unless --offline, "
        "check it against the driver's ResourceSlices, DeviceClasses and selectors on a "
        "cluster where the driver is installed, or with --slices against a dump of them. "
        "Selectors are compiled and matched by the scheduler's own CEL code (a helper built "
        "with Go on first use).",
        epilog="exit codes: 0 the profile is valid (warnings and notes may be printed); "
        "1 problems were found, each printed with the field it concerns; 2 the check could "
        "not be made (the cluster cannot be reached, a bad option)",
    )
    check.add_argument("file", type=bundled, metavar="FILE", help="the driver profile (YAML)")
    check.add_argument("--name", default=DEFAULT_CLUSTER, help="kind cluster to check against")
    check.add_argument("--kubeconfig", default=None, help="an existing cluster instead of kind")
    check.add_argument("--context", default=None, help="kubeconfig context (default: current)")
    check.add_argument(
        "--offline", action="store_true", help="only validate the file, do not contact a cluster"
    )
    check.add_argument(
        "--slices",
        default=None,
        metavar="SLICES.yaml",
        help="check the selectors, matchAttributes and capacity against the devices in this "
        "file (kubectl get resourceslices -o yaml), without a cluster",
    )
    check.set_defaults(func=_profile_check)
    schema = psub.add_parser(
        "schema",
        help="print the profile's JSON Schema (docs/profile.schema.json) for editors",
        description="Print the JSON Schema of a driver profile, generated from the suite's "
        "own validation; an editor with the YAML language server validates a profile against "
        "it (docs/profile.md).",
    )
    schema.set_defaults(func=_profile_schema)


def _profile_schema(args: argparse.Namespace) -> int:
    from conformance.model.profile_jsonschema import render

    print(render(), end="")
    return 0


def _profile_check(args: argparse.Namespace) -> int:
    if not Path(args.file).is_file():  # nothing to check: bad input, not a finding
        raise ConformanceError(
            f"profile {args.file}: no such file", "give the path of a driver profile (YAML)"
        )
    try:
        profile = load_profile(args.file)
    except ProfileError as exc:
        print(str(exc), file=sys.stderr)
        print("(format: docs/profile.md)", file=sys.stderr)
        return 1
    print(
        f"profile {args.file}: valid ({profile.driver}, "
        f"{len(profile.device_kinds)} device kinds, {len(profile.capabilities)} capabilities)"
    )
    from conformance.faults.check import fault_method_problems

    fault_problems = fault_method_problems(profile.faults)  # what this host can run
    for problem in fault_problems:
        print(f"  error: {problem}")
    from conformance.cel import cel_evaluator
    from conformance.install.profile_check import check_profile_offline
    from conformance.progress import Progress

    offline = check_profile_offline(profile, cel_evaluator(Progress()), args.slices)
    for problem in offline:
        print(f"  {problem}")
    offline_errors = [p for p in offline if p.severity == "error"]
    if args.offline or args.slices:
        return 1 if fault_problems or offline_errors else 0
    from conformance.install import installer
    from conformance.install.profile_check import check_profile_live

    kubeconfig, context, _ = _target(args)
    k8s = installer.ensure_reachable(kubeconfig, context)
    from conformance.cluster import block_check

    # what the cluster lacks is not the profile's fault: one line, exit 2 (ClusterError)
    from conformance.node_access.commands import ProfileNodeCommands

    nodes = ProfileNodeCommands(profile.node_commands, kubeconfig)
    run_on_node = nodes.run if profile.node_commands.exec else None
    for warning in block_check.require(k8s, profile.cluster, profile.node_selector, run_on_node):
        print(f"  {warning}")
    problems = check_profile_live(profile, k8s.api_client)
    for problem in problems:
        print(f"  {problem}")
    errors = [p for p in problems if p.severity == "error"]
    print(
        f"live check against {kubeconfig}: {len(errors)} error(s), "
        f"{len(problems) - len(errors)} warning(s)/note(s)"
    )
    return 1 if errors or fault_problems or offline_errors else 0


def add_run_command(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser(
        "run",
        # No abbreviations: pytest's `--co` must reach pytest, not become `--context`.
        allow_abbrev=False,
        help="provision, install the driver, run the suites, write the report",
        description="Provision (kind) or use (existing) a cluster, install the driver if the "
        "profile says how, run the scenario suites with pytest, write "
        "reports/<run>/. Exit codes: 0 CONFORMANT (every MUST that applies to the cluster's "
        "version was selected, and passed or is not applicable) or PASSED (partial: N of M "
        "MUST selected) — not a certification (a run scoped with --dra-verdict-scope or "
        "--dra-requirement passed what it selected; the MUSTs it left out are listed), "
        "1 NON-CONFORMANT (a MUST failed or errored), 3 INCOMPLETE (a MUST did not run, e.g. "
        "a run narrowed by path or -k; the summary says what would make it run), 2 usage "
        "error or NO VERDICT (the run could not be set up, was interrupted or broke; the "
        "report directory's summary says so and why, never an older run's verdict). "
        "Every other argument goes to pytest, wherever it stands (e.g. -k EXPR, "
        "--dra-requirement ID, --dra-verdict-scope, scenarios/core); after `--`, all do.",
    )
    run.add_argument("--profile", required=True, type=bundled, metavar="FILE")
    run.add_argument(
        "--cluster",
        choices=("kind", "existing", "in-cluster"),
        default="kind",
        help="kind: create or reuse a kind cluster; existing: use --kubeconfig; in-cluster: "
        "the pod's service account, the driver already installed (deploy/rbac/)",
    )
    run.add_argument("--name", default=DEFAULT_CLUSTER, help="kind cluster name")
    run.add_argument(
        "--k8s",
        default="v1.37.2",
        metavar="VERSION",
        help="Kubernetes version of the kind cluster, if one is created (default %(default)s)",
    )
    run.add_argument("--kubeconfig", default=None)
    run.add_argument("--context", default=None)
    run.add_argument(
        "-n",
        "--workers",
        default="0",
        metavar="N",
        help="parallel pytest-xdist workers (0: serial; default %(default)s)",
    )
    run.add_argument(
        "--report-dir",
        default=None,
        metavar="DIR",
        help="where to write the report (default reports/<run-id>)",
    )
    run.add_argument("--run-id", default=None, help="run id (default <UTC time>-<random>)")
    run.add_argument(
        "--allow-disruptive",
        action="store_true",
        help="run disruptive requirements against an existing cluster",
    )
    run.add_argument(
        "--keep-cluster",
        choices=("yes", "no"),
        default="yes",
        help="keep the kind cluster afterwards (default yes)",
    )
    run.add_argument("--timeout-scale", type=float, default=1.0)
    run.add_argument(
        "--sign-key",
        default=None,
        metavar="KEY",
        help="sign the report with this private key (PEM: ed25519 or ECDSA P-256, as `openssl "
        "genpkey` writes them; default $DRA_SIGN_KEY, PEM text or a file): an in-toto "
        "statement of every report file in a DSSE envelope, attestation.dsse.json",
    )
    # No positional: what `run` does not know is left over by parse_known_args, in its order,
    # and cli.main hands it to pytest (paths select suites; default: all of scenarios/).
    run.set_defaults(func=_run, pytest_args=[])


def pytest_arguments(args: argparse.Namespace, run_id: str, report_dir: Path) -> list[str]:
    from conformance.cli.sealed_run import check_run_arguments
    from conformance.report.seal import sealed_plugin_args

    extra = [a for a in args.pytest_args if a != "--"]
    selects_path = bool(check_run_arguments(extra, SCENARIOS))
    argv = [
        "-c",
        str(SUITE_ROOT / "pyproject.toml"),
        "--rootdir",
        str(SUITE_ROOT),
        *sealed_plugin_args(),
        "-p",
        "no:cacheprovider",
        "-q",
        "--dra-profile",
        args.profile,
        "--dra-cluster",
        args.cluster,
        "--dra-cluster-name",
        args.name,
        "--dra-k8s",
        args.k8s,
        "--dra-run-id",
        run_id,
        "--dra-report-dir",
        str(report_dir),
        "--dra-keep-cluster",
        args.keep_cluster,
        "--dra-timeout-scale",
        str(args.timeout_scale),
    ]
    if args.kubeconfig:
        argv += ["--dra-kubeconfig", args.kubeconfig]
    if args.context:
        argv += ["--dra-context", args.context]
    if args.allow_disruptive:
        argv.append("--dra-allow-disruptive")
    if str(args.workers) not in ("0", ""):
        argv += ["-n", str(args.workers)]
    argv += extra
    if not selects_path:
        argv.append(str(SCENARIOS))
    return argv


def _check_catalog_files() -> None:
    """A broken catalog or known-issues list fails here with its one-line error (exit 2)."""
    from conformance.model.known_issues import load_known_issues
    from conformance.model.requirements import load_catalog
    from conformance.report.catalog import catalog_path, known_issues_path

    path = catalog_path()
    if path.is_file():
        catalog = load_catalog(path)
        load_known_issues(known_issues_path(), [r.id for r in catalog.requirements])


def _installs_on_kind(args: argparse.Namespace) -> bool:
    """Whether the run will make or reuse a kind cluster and install the driver into it."""
    return args.cluster == "kind" and "--dra-skip-install" not in args.pytest_args


def _run(args: argparse.Namespace) -> int:
    import pytest

    from conformance.cli.sealed_run import check_environment
    from conformance.model.naming import is_label_value
    from conformance.plugin.run_progress import RunProgress
    from conformance.report.facts import new_run_id
    from conformance.report.no_verdict import no_verdict_on_error
    from conformance.report.seal import sealed_environment
    from conformance.report.signing import signing_key

    run_id = args.run_id or new_run_id()
    if not is_label_value(run_id):
        raise ConformanceError(
            f"--run-id {run_id!r} is not a Kubernetes label value",
            "use at most 63 characters of A-Z a-z 0-9 - _ .",
        )
    report_dir = Path(args.report_dir or Path("reports") / run_id).resolve()
    with no_verdict_on_error(report_dir, run_id):
        check_environment(os.environ)
        argv = pytest_arguments(args, run_id, report_dir)  # refuses foreign code
        key = signing_key(args.sign_key)  # a bad key fails here, before any cluster work
        profile = _load(args.profile)  # a broken profile fails here, before any cluster work
        _check_catalog_files()
        if _installs_on_kind(args):  # a missing image fails here, not after a 5-minute cluster
            from conformance.install.image import check_image_obtainable

            check_image_obtainable(getattr(profile.install, "image", None), args.name)
        if args.cluster == "existing" and not (args.kubeconfig or os.environ.get("KUBECONFIG")):
            raise ConformanceError(
                "--cluster existing needs a kubeconfig",
                "pass --kubeconfig PATH (and --context NAME)",
            )
    os.environ.update(sealed_environment({}))  # pytest.main runs here, xdist workers inherit it
    progress = RunProgress()
    if any(a in ("--co", "--collect-only") for a in args.pytest_args):
        return int(pytest.main(argv, plugins=[progress]))  # a listing: no run, no verdict
    from conformance.cli.run_verdict import finish
    from conformance.report.no_verdict import fence

    started = time.time()
    fence(report_dir, run_id)  # from here on, D's summary is this run's or says it has none
    code = pytest.main(argv, plugins=[progress])
    return finish(report_dir, run_id, int(code), started, sign_key=key)
