"""The driver: wires catalog, faults, slices, prepare, health and the servers.

Start order matters: controls are read first (a misbehaviour may say to lose
the checkpoint), then the checkpoint, then slices are published, then the DRA
socket is served, and only then the registration socket appears, so the
kubelet never connects to a plugin that cannot answer yet.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from fakedriver.catalog import Catalog
from fakedriver.cdi import CdiSpecStore
from fakedriver.checkpoint import Checkpoint
from fakedriver.claims import ClaimReader
from fakedriver.control_watch import ControlWatcher
from fakedriver.controls import FaultState, NodeControls, parse_controls
from fakedriver.device_status import ClaimStatusWriter, DeviceStatusReporter
from fakedriver.grpcapi import (
    dra_v1_pb2_grpc,
    dra_v1beta1_pb2_grpc,
    drahealth_v1_pb2_grpc,
    drahealth_v1alpha1_pb2_grpc,
    pluginregistration_v1_pb2_grpc,
)
from fakedriver.health import HealthMonitor
from fakedriver.metadata import MetadataStore
from fakedriver.misbehave import registration, restart
from fakedriver.misbehave import slices as slice_hooks
from fakedriver.options import DriverOptions
from fakedriver.prepare import DevicePreparer
from fakedriver.publisher import (
    PartitionableUnsupported,
    PublishResult,
    SliceClient,
    SlicePublisher,
)
from fakedriver.ready import clear_marker, write_marker
from fakedriver.server import Registrar, UnixSocketServer
from fakedriver.services import (
    DraV1beta1Service,
    DraV1Service,
    HealthV1alpha1Service,
    HealthV1Service,
    RegistrationService,
)
from fakedriver.slices import PoolPlan, render_pool
from fakedriver.status import StatusReporter, StatusSink

log = logging.getLogger(__name__)

REREGISTRATION_REPUBLISH_DELAY = 5.0  # seconds; see on_registration_status


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
        self._restart_slices = restart.RestartSlices(self.faults, self.publisher)
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
            if self._restart_slices.keeps_leftovers(self.published):
                if not self.published:
                    self._mark_published()
                return None
            try:
                plan = self._restart_slices.named(self._plan())
                try:
                    result = self.publisher.publish(plan)
                except PartitionableUnsupported as exc:
                    log.error(
                        "the API server dropped sharedCounters of %s (DRAPartitionableDevices "
                        "off?): publishing without partitionable devices",
                        exc,
                    )
                    self.partitionable = False
                    plan = self._restart_slices.named(self._plan())
                    result = self.publisher.publish(plan)
            except Exception as exc:
                log.error("publishing ResourceSlices failed: %s", exc)
                self.last_publish_error = str(exc)
                self.status.mark_dirty()
                return None
            self.last_plan, self.last_publish_error = plan, ""
            self._mark_published()
            return result

    def _mark_published(self) -> None:
        if not self.published:
            self.published = True
            self._write_ready()
        self.status.mark_dirty()

    def _prepared_changed(self) -> None:
        self.status.mark_dirty()
        if slice_hooks.republish_on_prepare(self.faults.controls):
            self.republish()

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
        return registration.refuse_registration(self.faults, self.registered_once)

    def registration_excuse(self) -> str:
        """Why the registration socket may be missing or refuse GetInfo on purpose ("" if it
        must answer): the liveness check does not count that as a dead plugin."""
        return registration.withheld(self.faults) or self._refuse_registration()

    def advertised_versions(self) -> list[str]:
        """The services GetInfo advertises."""
        return registration.advertised(self.faults, self.options.supported_versions())

    def _sync_registration(self) -> None:
        """Serve the registration socket (unless a misbehaviour says otherwise). When what it
        advertises changes, the socket is made anew: the kubelet reads the versions only when
        it registers a socket it sees appear."""
        with self._registration_lock:
            if not self._serving or self.stopping.is_set():
                return
            unwanted = registration.withheld(self.faults)
            versions = self.advertised_versions()
            if self._registration is not None and (
                unwanted or versions != self._registration_versions
            ):
                if unwanted:
                    log.warning("%s: removing the registration socket", unwanted)
                else:
                    log.info("advertising %s: registering again", versions)
                self._registration.stop()
                self._registration = None
            if not unwanted and self._registration is None:
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
        self.preparer.load_checkpoint(discard=restart.loses_checkpoint(self.faults))
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
        restart.on_stop(self.faults, self.preparer.unprepare_all)
        clear_marker(self.options.ready_file)
        self.registered = False
        self.status.flush()
