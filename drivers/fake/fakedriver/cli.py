"""Command line: ``python3 -m fakedriver --node-name $NODE_NAME [flags]``."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType

import urllib3

from fakedriver import DRIVER_NAME
from fakedriver.binding import ApiBindingStatusWriter, BindingReporter, ClaimWatcher
from fakedriver.catalog import Catalog, CatalogError
from fakedriver.claims import ApiClaimReader
from fakedriver.control_watch import ControlWatcher
from fakedriver.device_status import ApiClaimStatusWriter
from fakedriver.driver import DriverOptions, FakeDriver
from fakedriver.kubeapi import ApiError, KubeRest, load_api_client
from fakedriver.liveness import LivenessCheck
from fakedriver.publisher import ApiSliceClient, node_owner_reference
from fakedriver.ready import DEFAULT_READY_FILE, ReadinessServer
from fakedriver.status import ConfigMapStatusSink

log = logging.getLogger("fakedriver")


def _versions(text: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in text.split(",") if v.strip())


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python3 -m fakedriver",
        description="Fake DRA driver kubelet plugin for dra-conformance.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument(
        "--node-name",
        default=os.environ.get("NODE_NAME"),
        help="node this plugin runs on (env NODE_NAME)",
    )
    p.add_argument("--driver-name", default=DRIVER_NAME)
    _add_path_arguments(p)
    _add_service_arguments(p)
    _add_api_arguments(p)
    p.add_argument("--log-level", default="INFO")
    return p


def _add_api_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--node-uid",
        default=os.environ.get("NODE_UID"),
        help="Node UID for slice ownerReferences; read from the API when unset",
    )
    p.add_argument("--kubeconfig", default=None, help="default: in-cluster, then ~/.kube/config")
    p.add_argument("--grpc-workers", type=int, default=16)
    p.add_argument(
        "--device-metadata",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="write device metadata files (KEP-5304) for the containers of prepared claims",
    )


def _add_path_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--catalog",
        type=Path,
        default=Path("/etc/fake-dra/catalog.yaml"),
        help="device catalog YAML",
    )
    p.add_argument(
        "--plugin-registration-dir",
        type=Path,
        default=Path("/var/lib/kubelet/plugins_registry"),
        help="kubelet plugin watcher directory",
    )
    p.add_argument(
        "--plugin-data-dir",
        type=Path,
        default=None,
        help="default /var/lib/kubelet/plugins/<driver-name>",
    )
    p.add_argument(
        "--registration-socket",
        type=Path,
        default=None,
        help="default <plugin-registration-dir>/<driver-name>-reg.sock",
    )
    p.add_argument(
        "--dra-socket", type=Path, default=None, help="default <plugin-data-dir>/dra.sock"
    )
    p.add_argument("--cdi-dir", type=Path, default=Path("/var/run/cdi"))
    p.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="checkpoint.json and fault counters; default <plugin-data-dir>",
    )
    p.add_argument(
        "--ready-file",
        type=Path,
        default=Path(DEFAULT_READY_FILE),
        help="readiness marker (served by --ready-port, checked by `python3 -m fakedriver.ready`)",
    )


def _add_service_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ready-port",
        type=int,
        default=0,
        help="serve GET /readyz (200 once ready, from the marker) and GET /livez (200 while "
        "both sockets answer) on this port for HTTP probes; 0: no server",
    )
    p.add_argument(
        "--control-namespace",
        default=os.environ.get("POD_NAMESPACE", "dra-fake-driver"),
        help="namespace of the control and status ConfigMaps (env POD_NAMESPACE)",
    )
    p.add_argument("--control-configmap", default="fake-dra-control")
    p.add_argument("--status-configmap-prefix", default="fake-dra-status-")
    p.add_argument(
        "--dra-versions",
        type=_versions,
        default="v1,v1beta1",
        help="DRAPlugin API versions to serve and advertise, newest first",
    )
    p.add_argument(
        "--health-versions",
        type=_versions,
        default="v1,v1alpha1",
        help="DRAResourceHealth versions to serve and advertise; empty disables",
    )
    p.add_argument(
        "--health-interval",
        type=float,
        default=10.0,
        help="seconds between unchanged health reports",
    )
    p.add_argument(
        "--health-timeout",
        type=int,
        default=30,
        help="health_check_timeout_seconds sent to the kubelet",
    )
    p.add_argument(
        "--resync-interval",
        type=float,
        default=5.0,
        help="seconds between ResourceSlice reconciliations (slices deleted behind the "
        "driver's back, by a kubelet's wipe for one, come back within that)",
    )


def _setup_logging(level: str) -> None:
    logging.basicConfig(
        stream=sys.stdout,
        level=level.upper(),
        format="%(asctime)s.%(msecs)03dZ %(levelname)s %(name)s: %(message)s",
        datefmt="%Y-%m-%dT%H:%M:%S",
    )
    logging.Formatter.converter = time.gmtime


def _node_owner(rest: KubeRest, node: str, uid: str | None, stopping: threading.Event) -> dict:
    if uid:
        return node_owner_reference({"metadata": {"name": node, "uid": uid}})
    delay = 0.5
    while True:
        try:
            return node_owner_reference(rest.get(f"/api/v1/nodes/{node}"))
        except (ApiError, urllib3.exceptions.HTTPError) as exc:
            # Right after a node restart the API server's service address may not be routed
            # yet (kube-proxy rewrites its rules): retry rather than crash into a back-off.
            if getattr(exc, "status", None) in (401, 403) or stopping.wait(delay):
                raise
            log.warning("reading Node %s failed (%s), retrying", node, exc)
            delay = min(delay * 2, 4.0)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _setup_logging(args.log_level)
    if not args.node_name:
        log.error("--node-name (or env NODE_NAME) is required")
        return 2
    try:
        catalog = Catalog.load(args.catalog)
    except CatalogError as exc:
        log.error("%s", exc)
        return 2
    stopping = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("received %s, shutting down", signal.Signals(signum).name)
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    rest = KubeRest(load_api_client(args.kubeconfig))
    try:
        owner = _node_owner(rest, args.node_name, args.node_uid, stopping)
    except (ApiError, urllib3.exceptions.HTTPError) as exc:
        log.error("cannot read Node %s: %s", args.node_name, exc)
        return 1
    _run(args, _driver(args, catalog, rest, owner), rest, stopping)
    log.info("stopped")
    return 0


def _options(args: argparse.Namespace) -> DriverOptions:
    return DriverOptions(
        node_name=args.node_name,
        driver_name=args.driver_name,
        catalog=args.catalog,
        registration_dir=args.plugin_registration_dir,
        plugin_dir=args.plugin_data_dir,
        registration_socket=args.registration_socket,
        dra_socket=args.dra_socket,
        cdi_dir=args.cdi_dir,
        state_dir=args.state_dir,
        ready_file=args.ready_file,
        control_namespace=args.control_namespace,
        control_configmap=args.control_configmap,
        status_configmap_prefix=args.status_configmap_prefix,
        dra_versions=args.dra_versions,
        health_versions=args.health_versions,
        health_interval=args.health_interval,
        health_timeout=args.health_timeout,
        resync_interval=args.resync_interval,
        grpc_workers=args.grpc_workers,
        device_metadata=args.device_metadata,
    )


def _driver(args: argparse.Namespace, catalog: Catalog, rest: KubeRest, owner: dict) -> FakeDriver:
    return FakeDriver(
        _options(args),
        catalog,
        claims=ApiClaimReader(rest),
        slices=ApiSliceClient(rest),
        status_sink=ConfigMapStatusSink(
            rest,
            args.control_namespace,
            f"{args.status_configmap_prefix}{args.node_name}",
            args.node_name,
        ),
        owner=owner,
        claim_status=ApiClaimStatusWriter(rest, field_manager=args.driver_name),
    )


def _run(
    args: argparse.Namespace, driver: FakeDriver, rest: KubeRest, stopping: threading.Event
) -> None:
    """Serve until `stopping`: the driver, its readiness port and its binding reports."""
    control = ControlWatcher(
        rest, args.control_namespace, args.control_configmap, driver.apply_controls, driver.stopping
    )
    log.info(
        "starting %s on node %s with %d catalog device(s)",
        args.driver_name,
        args.node_name,
        len(driver.inventory.devices),
    )
    opts = driver.options
    liveness = LivenessCheck(
        opts.registration_socket,  # type: ignore[arg-type]
        opts.dra_socket,  # type: ignore[arg-type]
        dra_version=opts.dra_versions[0],
        excused=driver.registration_excuse,
    )
    readiness = (
        ReadinessServer(args.ready_port, args.ready_file, liveness=liveness.check).start()
        if args.ready_port
        else None
    )
    driver.start(control)
    # Binding conditions are reported before the pod binds, so before any prepare: from a
    # watch of the claims, under a field manager of their own (fakedriver.binding).
    binding = BindingReporter(
        ApiBindingStatusWriter(rest, field_manager=f"{args.driver_name}-binding"),
        args.driver_name,
        args.node_name,
        driver.faults,
    )
    ClaimWatcher(rest, binding, driver.stopping).start()
    while not stopping.wait(1.0):
        pass
    driver.stop()
    if readiness is not None:
        readiness.stop()
