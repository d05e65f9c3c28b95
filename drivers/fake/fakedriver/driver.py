"""The driver: wires catalog, faults, slices, prepare, health and the servers.

Start order matters: controls are read first (a misbehaviour may say to lose
the checkpoint), then the checkpoint, then slices are published, then the DRA
socket is served, and only then the registration socket appears, so the
kubelet never connects to a plugin that cannot answer yet.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fakedriver import DRIVER_NAME
from fakedriver.catalog import Catalog
from fakedriver.cdi import CdiSpecStore
from fakedriver.checkpoint import Checkpoint
from fakedriver.claims import ClaimReader
from fakedriver.control_watch import ControlWatcher
from fakedriver.controls import FaultState, NodeControls, parse_controls
from fakedriver.device_status import ClaimStatusWriter, DeviceStatusReporter
from fakedriver.grpcapi import (
    DRA_SERVICES,
    HEALTH_SERVICES,
    dra_v1_pb2_grpc,
    dra_v1beta1_pb2_grpc,
    drahealth_v1_pb2_grpc,
    drahealth_v1alpha1_pb2_grpc,
    pluginregistration_v1_pb2_grpc,
)
from fakedriver.health import HealthMonitor
from fakedriver.metadata import MetadataStore
from fakedriver.prepare import DevicePreparer
from fakedriver.publisher import (
    PartitionableUnsupported,
    PublishResult,
    SliceClient,
    SlicePublisher,
)
from fakedriver.ready import DEFAULT_READY_FILE, clear_marker, write_marker
from fakedriver.server import Registrar, UnixSocketServer
from fakedriver.services import (
    DraV1beta1Service,
    DraV1Service,
    HealthV1alpha1Service,
    HealthV1Service,
    RegistrationService,
)
from fakedriver.slices import PoolPlan, instance_named, render_pool
from fakedriver.status import StatusReporter, StatusSink

log = logging.getLogger(__name__)

REREGISTRATION_REPUBLISH_DELAY = 5.0  # seconds; see on_registration_status


@dataclass
class DriverOptions:
    node_name: str
    driver_name: str = DRIVER_NAME
    catalog: Path = Path("/etc/fake-dra/catalog.yaml")
    registration_dir: Path = Path("/var/lib/kubelet/plugins_registry")
    plugin_dir: Path | None = None  # default /var/lib/kubelet/plugins/<driver>
    registration_socket: Path | None = None  # default <registration_dir>/<driver>-reg.sock
    dra_socket: Path | None = None  # default <plugin_dir>/dra.sock
    cdi_dir: Path = Path("/var/run/cdi")
    state_dir: Path | None = None  # default <plugin_dir>
    ready_file: Path = Path(DEFAULT_READY_FILE)
    control_namespace: str = "dra-fake-driver"
    control_configmap: str = "fake-dra-control"
    status_configmap_prefix: str = "fake-dra-status-"
    dra_versions: tuple[str, ...] = ("v1", "v1beta1")
    health_versions: tuple[str, ...] = ("v1", "v1alpha1")
    health_interval: float = 10.0
    health_timeout: int = 30
    # Short: a kubelet deletes a node's slices 30 s after the plugin deregisters and when it
    # starts; upstream's slice controller re-creates them on the delete event, this polls.
    resync_interval: float = 5.0
    grpc_workers: int = 16
    # Device metadata files for the containers (KEP-5304; fakedriver.metadata).
    device_metadata: bool = True

    def resolved(self) -> DriverOptions:
        plugin_dir = self.plugin_dir or Path("/var/lib/kubelet/plugins") / self.driver_name
        unknown = [v for v in self.dra_versions if v not in DRA_SERVICES] + [
            v for v in self.health_versions if v not in HEALTH_SERVICES
        ]
        if unknown or not self.dra_versions:
            raise ValueError(f"unsupported or empty gRPC versions: {unknown or 'no DRA version'}")
        return DriverOptions(
            **{
                **self.__dict__,
                "plugin_dir": plugin_dir,
                "registration_socket": self.registration_socket
                or self.registration_dir / f"{self.driver_name}-reg.sock",
                "dra_socket": self.dra_socket or plugin_dir / "dra.sock",
                "state_dir": self.state_dir or plugin_dir,
            }
        )

    def supported_versions(self) -> list[str]:
        return [DRA_SERVICES[v] for v in self.dra_versions] + [
            HEALTH_SERVICES[v] for v in self.health_versions
        ]


class FakeDriver:
    def __init__(
        self,
        options: DriverOptions,
        catalog: Catalog,
        claims: ClaimReader,
        slices: SliceClient,
        status_sink: StatusSink,
        owner: dict[str, Any] | None = None,
        claim_status: ClaimStatusWriter | None = None,
    ) -> None:
        self.options = opts = options.resolved()
        assert opts.state_dir and opts.dra_socket and opts.registration_socket
        self.node = opts.node_name
        self.driver = opts.driver_name
        self.stopping = threading.Event()
        self.inventory = catalog.for_node(self.node)
        self.partitionable = catalog.partitionable
        opts.state_dir.mkdir(parents=True, exist_ok=True)
        self.faults = FaultState(counters_file=opts.state_dir / "fault-counters.json")
        self.cdi = CdiSpecStore(opts.cdi_dir, self.driver)
        self.checkpoint = Checkpoint(opts.state_dir / "checkpoint.json")
        self.status = StatusReporter(status_sink, self.status_document, self.stopping)
        self.device_status = (
            DeviceStatusReporter(
                claim_status, self.driver, self.node, lambda: self.inventory, self.faults
            )
            if claim_status is not None
            else None
        )
        self.preparer = DevicePreparer(
            driver=self.driver,
            node_name=self.node,
            inventory=lambda: self.inventory,
            claims=claims,
            cdi=self.cdi,
            checkpoint=self.checkpoint,
            faults=self.faults,
            on_change=self._prepared_changed,
            on_prepared=self.device_status.prepared if self.device_status else lambda c: None,
            metadata=MetadataStore(opts.plugin_dir, self.cdi, self.driver)
            if opts.device_metadata and opts.plugin_dir
            else None,
        )
        self.health = HealthMonitor(
            self.node,
            lambda: self.inventory,
            self.faults,
            opts.health_interval,
            opts.health_timeout,
        )
        self.health.on_streams_changed = self.status.mark_dirty
        self.publisher = SlicePublisher(slices, self.driver, self.node, owner)
        self.registered = False
        self.registered_once = False  # by any kubelet since this process started
        self.registration_error = ""
        self.published = False
        self.last_plan: PoolPlan | None = None
        self.last_publish_error = ""
        self._found_leftovers: bool | None = None  # slices from before at the first publish
        self._start_slices: frozenset[str] | None = None  # their names, with the misbehaviour
        self._instance = secrets.token_hex(3)  # misbehaviour stale-slice-after-restart
        self._publish_lock = threading.Lock()
        self._servers: list[UnixSocketServer] = []
        self._registration: UnixSocketServer | None = None
        self._registration_versions: list[str] = []  # what the served socket advertises
        self._registration_lock = threading.Lock()
        self._serving = False
        self.faults.add_listener(self._controls_changed)

    # -- controls and slices -------------------------------------------------

    def apply_controls(self, data: Mapping[str, str], resource_version: str = "") -> NodeControls:
        controls = parse_controls(data, self.node)
        for error in controls.errors:
            log.warning("control %s: %s", self.options.control_configmap, error)
        self.faults.update(controls, resource_version)
        return controls

    def _controls_changed(self, controls: NodeControls) -> None:
        log.info(
            "controls applied (resourceVersion %s): %s",
            self.faults.resource_version,
            controls.to_dict(),
        )
        self.republish()
        self.health.notify()
        self._sync_registration()
        self.status.mark_dirty()

    def republish(self) -> PublishResult | None:
        with self._publish_lock:
            if self._keeps_leftover_slices():
                return None
            try:
                plan = self._restart_naming(self._plan())
                try:
                    result = self.publisher.publish(plan)
                except PartitionableUnsupported as exc:
                    log.error(
                        "the API server dropped sharedCounters of %s (DRAPartitionableDevices "
                        "off?): publishing without partitionable devices",
                        exc,
                    )
                    self.partitionable = False
                    plan = self._restart_naming(self._plan())
                    result = self.publisher.publish(plan)
            except Exception as exc:
                log.error("publishing ResourceSlices failed: %s", exc)
                self.last_publish_error = str(exc)
                self.status.mark_dirty()
                return None
            self.last_plan, self.last_publish_error = plan, ""
            if not self.published:
                self.published = True
                self._write_ready()
            self.status.mark_dirty()
            return result

    def _keeps_leftover_slices(self) -> bool:
        """Misbehaviour `no-republish-after-restart`: a plugin that finds its node's slices
        from before at its first publish takes them as its own and, while the misbehaviour is
        on, never writes slices (a pool wiped after that stays empty)."""
        on = self.faults.misbehaving("no-republish-after-restart")
        if self._found_leftovers is None:  # the first publish of this process
            self._found_leftovers = on and bool(self.publisher.existing())
        if not (on and self._found_leftovers):
            return False
        if not self.published:
            log.warning("misbehaviour no-republish-after-restart: the slices from before count")
            self.published = True
            self._write_ready()
            self.status.mark_dirty()
        return True

    def _restart_naming(self, plan: PoolPlan) -> PoolPlan:
        """Misbehaviour `stale-slice-after-restart`: a plugin that found slices at its start
        (the misbehaviour on) names its own after its instance and leaves the first of the old
        ones alone, so that one stays at the old generation beside the pool it writes at a
        higher one. Switched on later, it starts with the next restart, as a new version
        would."""
        on = self.faults.misbehaving("stale-slice-after-restart")
        if self._start_slices is None:  # the first publish of this process
            found = self.publisher.existing() if on else []
            self._start_slices = frozenset(s["metadata"]["name"] for s in found)
        if not (on and self._start_slices):
            self.publisher.spared = frozenset()
            return plan
        self.publisher.spared = frozenset({min(self._start_slices)})
        return instance_named(plan, self._instance)

    def _prepared_changed(self) -> None:
        self.status.mark_dirty()
        if self.faults.misbehaving("taint-prepared-devices"):
            self.republish()  # the slices show which devices are prepared

    def _plan(self) -> PoolPlan:
        prepared = frozenset(
            d.device_name for claim in self.preparer.prepared().values() for d in claim.devices
        )
        return render_pool(
            self.driver,
            self.node,
            self.inventory,
            self.faults.published,
            self.faults.taint_time,
            self.partitionable,
            prepared,
        )

    # -- registration --------------------------------------------------------

    def on_registration_status(self, registered: bool, error: str) -> None:
        self.registered, self.registration_error = registered, error
        self.registered_once = self.registered_once or registered
        self._write_ready()
        self.status.mark_dirty()
        if registered and not self.stopping.is_set():
            # A kubelet that (re)starts deletes every ResourceSlice of its node (v1.37
            # DRAPluginManager.wipeResourceSlices), racing with this registration: publish
            # again now and once more a little later, not only at the next resync.
            threading.Thread(target=self._republish_after_registration, daemon=True).start()

    def _republish_after_registration(self) -> None:
        self.republish()
        if not self.stopping.wait(REREGISTRATION_REPUBLISH_DELAY):
            self.republish()

    def _refuse_registration(self) -> str:
        """Misbehaviour `register-once`: a plugin that treats registration as a one-time event
        (its registration server stays, but cannot answer again)."""
        if self.registered_once and self.faults.misbehaving("register-once"):
            return "misbehaviour register-once: this plugin was registered already"
        return ""

    def advertised_versions(self) -> list[str]:
        """The services GetInfo advertises. Misbehaviour `health-not-advertised` leaves the
        served health services out (a 1.37 kubelet then never calls them, a 1.36 one calls
        v1alpha1 anyway); `health-v1alpha1-only` (legal) advertises only the older one."""
        versions = self.options.supported_versions()
        health = set(HEALTH_SERVICES.values())
        if self.faults.misbehaving("health-not-advertised"):
            return [v for v in versions if v not in health]
        if self.faults.misbehaving("health-v1alpha1-only"):
            return [v for v in versions if v not in health or v == HEALTH_SERVICES["v1alpha1"]]
        return versions

    def _sync_registration(self) -> None:
        """Serve the registration socket unless misbehaviour `unregistered` is on: then the
        socket goes away and the kubelet deregisters the plugin, while the driver keeps
        claiming to be ready (the lie a broken vendor driver tells). When what it advertises
        changes, the socket is made anew: the kubelet reads the versions only when it
        registers a socket it sees appear."""
        with self._registration_lock:
            if not self._serving or self.stopping.is_set():
                return
            wanted = not self.faults.misbehaving("unregistered")
            versions = self.advertised_versions()
            if self._registration is not None and (
                not wanted or versions != self._registration_versions
            ):
                if not wanted:
                    log.warning("misbehaviour unregistered: removing the registration socket")
                else:
                    log.info("advertising %s: registering again", versions)
                self._registration.stop()
                self._registration = None
            if wanted and self._registration is None:
                self._registration = self._registration_server(versions)
                self._registration.start()
                self._registration_versions = versions

    def _registration_server(self, versions: list[str]) -> UnixSocketServer:
        opts = self.options
        registration = RegistrationService(
            self.driver,
            str(opts.dra_socket),
            versions,
            self.on_registration_status,
            self._refuse_registration,
        )
        return UnixSocketServer(
            "registration",
            opts.registration_socket,  # type: ignore[arg-type]
            [
                lambda s: pluginregistration_v1_pb2_grpc.add_RegistrationServicer_to_server(
                    registration, s
                )
            ],
            max_workers=4,
        )

    def _write_ready(self) -> None:
        write_marker(self.options.ready_file, self.registered, self.published)

    # -- status --------------------------------------------------------------

    def status_document(self) -> dict[str, Any]:
        controls = self.faults.controls
        last = self.publisher.last
        prepared = self.preparer.prepared()
        names = {d.name for d in self.inventory.devices}
        return {
            "node": self.node,
            "driver": self.driver,
            "updatedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "observedControlResourceVersion": self.faults.resource_version,
            "applied": controls.to_dict(),
            "controlErrors": list(controls.errors),
            "unknownDevices": sorted(set(controls.devices) - names),
            "failPrepareRemaining": self.faults.remaining_failures(),
            "registered": self.registered,
            "registrationError": self.registration_error,
            "ready": self.registered and self.published,
            "supportedVersions": self._registration_versions if self._registration else [],
            "healthStreams": self.health.open_streams(),
            "pool": {
                "name": self.node,
                "generation": last.generation if last else None,
                "resourceSliceCount": last.resource_slice_count if last else None,
                "slices": list(last.slice_names) if last else [],
                "publishedDevices": list(self.last_plan.published_devices)
                if self.last_plan
                else [],
                "partitionable": self.partitionable,
                "lastError": self.last_publish_error,
            },
            "health": {h.device: h.health for h in self.health.snapshot()},
            "healthReportsSent": self.health.reports_sent,
            "deviceStatusWrites": {
                "written": self.device_status.written if self.device_status else 0,
                "failed": self.device_status.failed if self.device_status else 0,
            },
            "preparedClaims": len(prepared),
            "preparedClaimUIDs": sorted(prepared),
            "prepare": self.preparer.prepare_stats.snapshot(),
            "unprepare": self.preparer.unprepare_stats.snapshot(),
            "checkpoint": {
                "path": str(self.checkpoint.path),
                "recoveredClaims": self.preparer.recovered_claims,
            },
        }

    # -- lifecycle -----------------------------------------------------------

    def _dra_registrars(self) -> list[Registrar]:
        regs: list[Registrar] = []
        if "v1" in self.options.dra_versions:
            service = DraV1Service(self.preparer)
            regs.append(lambda s: dra_v1_pb2_grpc.add_DRAPluginServicer_to_server(service, s))
        if "v1beta1" in self.options.dra_versions:
            beta = DraV1beta1Service(self.preparer)
            regs.append(lambda s: dra_v1beta1_pb2_grpc.add_DRAPluginServicer_to_server(beta, s))
        if "v1" in self.options.health_versions:
            health = HealthV1Service(self.health, self.stopping)
            regs.append(
                lambda s: drahealth_v1_pb2_grpc.add_DRAResourceHealthServicer_to_server(health, s)
            )
        if "v1alpha1" in self.options.health_versions:
            alpha = HealthV1alpha1Service(self.health, self.stopping)
            regs.append(
                lambda s: drahealth_v1alpha1_pb2_grpc.add_DRAResourceHealthServicer_to_server(
                    alpha, s
                )
            )
        return regs

    def start(self, control: ControlWatcher | None = None, background: bool = True) -> None:
        opts = self.options
        assert opts.dra_socket and opts.registration_socket
        clear_marker(opts.ready_file)
        resource_version = ""
        if control is not None:
            try:
                resource_version = control.initial_sync()
            except Exception as exc:  # the watch thread keeps trying
                log.warning("initial read of the control ConfigMap failed: %s", exc)
        self.preparer.load_checkpoint(discard=self.faults.misbehaving("lose-checkpoint-on-restart"))
        if not self.published:
            self.republish()
        dra = UnixSocketServer("dra", opts.dra_socket, self._dra_registrars(), opts.grpc_workers)
        dra.start()
        self._servers.append(dra)
        self._serving = True
        self._sync_registration()
        log.info("serving %s on %s", ",".join(opts.supported_versions()), opts.dra_socket)
        if background:
            if control is not None:
                control.start(resource_version)
            self.status.start()
            threading.Thread(target=self._resync_loop, name="resync", daemon=True).start()
        self.status.mark_dirty()

    def _resync_loop(self) -> None:
        # Repairs slices removed or edited behind our back (e.g. the kubelet
        # wipes a driver's slices when its plugin disappears for a while).
        while not self.stopping.wait(self.options.resync_interval):
            self.republish()

    def stop(self, grace: float = 2.0) -> None:
        self.stopping.set()
        # Registration first: the kubelet sees the plugin go before its socket does.
        with self._registration_lock:
            if self._registration is not None:
                self._registration.stop(grace)
                self._registration = None
        for server in reversed(self._servers):
            server.stop(grace)
        self._servers.clear()
        if self.faults.misbehaving("unprepare-on-shutdown"):
            self.preparer.unprepare_all()
        clear_marker(self.options.ready_file)
        self.registered = False
        self.status.flush()
