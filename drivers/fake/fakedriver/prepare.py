"""NodePrepareResources / NodeUnprepareResources, independent of the gRPC layer.

Prepare reads the claim, checks that every allocated device exists and is
still offered, applies injected faults, writes the claim's CDI spec and
checkpoints the result. Claims already in the checkpoint are answered from it
without another API read, which makes repeated calls (kubelet retries, a
restarted kubelet or driver) idempotent. At start the driver writes again the
CDI specs of checkpointed claims that are gone (a reboot emptied /run). With a
metadata store, each request of a prepared claim also gets its device metadata
file (fakedriver.metadata).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from fakedriver.catalog import DeviceSpec, NodeInventory
from fakedriver.cdi import CdiSpecStore, DeviceEnv, SpecNaming, build_spec
from fakedriver.checkpoint import Checkpoint, PreparedClaim, PreparedDevice
from fakedriver.claims import (
    AllocatedDevice,
    ClaimAllocation,
    ClaimError,
    ClaimNotFound,
    ClaimReader,
    allocation_for_driver,
    group_devices,
    unprepare_from_api_errors,
)
from fakedriver.controls import FaultState
from fakedriver.metadata import ClaimIdentity, MetadataStore, requests_metadata
from fakedriver.release import ReleaseBook
from fakedriver.slices import device_attributes
from fakedriver.stats import LatencyStats

log = logging.getLogger(__name__)

# Misbehaviour unstable-cdi-spec: how long after prepare the claim's CDI spec changes.
UNSTABLE_CDI_DELAY_S = 1.0
# Long enough for the kubelet to prepare the next claim of a device meanwhile (~1-3 s).
SLOW_UNPREPARE_SECONDS = 15.0
# How long a prepare waits for another claim to let go of a device (kubelet timeout: 45 s).
HELD_DEVICE_WAIT_SECONDS = 25.0
# Misbehaviour background-release: how long a device's release runs on after the unprepare
# answered; well past the ~1-5 s a graceful delete takes to hand the device to a waiting pod.
BACKGROUND_RELEASE_SECONDS = 15.0


@dataclass(frozen=True)
class ClaimRef:
    uid: str
    namespace: str
    name: str


@dataclass(frozen=True)
class PrepareOutcome:
    devices: tuple[PreparedDevice, ...] = ()
    error: str = ""


class DevicePreparer:
    def __init__(
        self,
        *,
        driver: str,
        node_name: str,
        inventory: Callable[[], NodeInventory],
        claims: ClaimReader,
        cdi: CdiSpecStore,
        checkpoint: Checkpoint,
        faults: FaultState,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        on_change: Callable[[], None] = lambda: None,
        on_prepared: Callable[[PreparedClaim], None] = lambda claim: None,
        metadata: MetadataStore | None = None,
    ) -> None:
        self._driver = driver
        self._pool = node_name
        self._inventory = inventory
        self._claims = claims
        self._cdi = cdi
        self._checkpoint = checkpoint
        self._faults = faults
        self._sleep = sleep
        self._clock = clock
        self._on_change = on_change
        self._on_prepared = on_prepared  # after a fresh prepare, outside the lock
        self._metadata = metadata  # None: no device metadata files
        self._lock = threading.Lock()
        self._unprepared = threading.Condition(self._lock)  # notified after each unprepare
        self._prepared: dict[str, PreparedClaim] = {}
        # misbehaviours keep-released-devices, restored-claims-stay-busy: device name -> (the
        # claim that last let go of it, the misbehaviour that keeps it busy)
        self._kept_busy: dict[str, tuple[str, str]] = {}
        self._restored: frozenset[str] = frozenset()  # claims the checkpoint held at start
        self._releasing = ReleaseBook()  # misbehaviour background-release
        self.prepare_stats = LatencyStats()
        self.unprepare_stats = LatencyStats()
        self.recovered_claims = 0
        self.removed_orphan_specs: list[str] = []
        self.rewritten_specs: list[str] = []  # claims whose lost CDI spec the start wrote

    # -- state ---------------------------------------------------------------

    def load_checkpoint(self, discard: bool = False) -> int:
        """Restore prepared claims at start; ``discard`` is the lose-checkpoint misbehaviour."""
        with self._lock:
            if discard:
                log.warning(
                    "misbehaviour lose-checkpoint-on-restart: discarding %s", self._checkpoint.path
                )
                self._checkpoint.discard()
                self._prepared = {}
            else:
                self._prepared = self._checkpoint.load()
            self.recovered_claims = len(self._prepared)
            self._restored = frozenset(self._prepared)
            # CDI specs of claims the checkpoint does not know are garbage (a crash between
            # spec write and checkpoint save): remove them, as real drivers do at start. With
            # a lost checkpoint this removes the specs of running containers too, so they
            # cannot start again - what a checkpoint is for.
            self.removed_orphan_specs = [
                uid for uid in self._cdi.claim_uids() if uid not in self._prepared
            ]
            for uid in self.removed_orphan_specs:
                self._cdi.remove(uid)
            known = {Path(c.cdi_spec) for c in self._prepared.values()}
            for path in self._cdi.device_named():
                if path not in known:
                    path.unlink(missing_ok=True)
                    self.removed_orphan_specs.append(path.name)
            for uid, paths in (self._metadata.spec_uids() if self._metadata else {}).items():
                if uid not in self._prepared:
                    for path in paths:
                        path.unlink(missing_ok=True)
                        self.removed_orphan_specs.append(path.name)
            self.rewritten_specs = self._rewrite_lost_specs()
        log.info("checkpoint: %d prepared claim(s) recovered", self.recovered_claims)
        if self.removed_orphan_specs:
            log.info(
                "removed %d CDI spec(s) of unknown claims: %s",
                len(self.removed_orphan_specs),
                ", ".join(self.removed_orphan_specs),
            )
        return self.recovered_claims

    def _rewrite_lost_specs(self) -> list[str]:
        """Write again the CDI specs of restored claims whose file is gone (a reboot emptied
        /run, the checkpoint survived; call with the lock held). A container of a running pod
        that restarts gets no new prepare: the runtime resolves the claim's CDI devices from
        these files alone. Misbehaviour cdi-not-recreated leaves them gone."""
        lost = [c for c in self._prepared.values() if not Path(c.cdi_spec).exists()]
        lost_metadata = {
            path: spec
            for claim in self._prepared.values()
            for path, spec in claim.metadata_specs.items()
            if not Path(path).exists()
        }
        if (lost or lost_metadata) and self._faults.misbehaving("cdi-not-recreated"):
            log.warning(
                "misbehaviour cdi-not-recreated: not writing the lost CDI specs of %s",
                ", ".join(c.uid for c in lost),
            )
            return []
        rewritten = []
        for claim in lost:
            if claim.cdi_document is None:  # a checkpoint older than the stored spec
                log.warning("cannot write the lost CDI spec of %s: not checkpointed", claim.uid)
                continue
            self._cdi.write_to(Path(claim.cdi_spec), claim.cdi_document)
            rewritten.append(claim.uid)
        for path, spec in lost_metadata.items():
            self._cdi.write_to(Path(path), spec)
            rewritten.append(Path(path).name)
        if rewritten:
            log.info("wrote the lost CDI spec(s) of %s again", ", ".join(rewritten))
        return rewritten

    def prepared(self) -> dict[str, PreparedClaim]:
        with self._lock:
            return dict(self._prepared)

    # -- prepare -------------------------------------------------------------

    def prepare(self, claims: Sequence[ClaimRef]) -> dict[str, PrepareOutcome]:
        started = time.monotonic()
        delay = self._faults.controls.prepare_delay_seconds
        if delay > 0:
            log.info("injected prepare delay of %.3fs", delay)
            self._sleep(delay)
        results: dict[str, PrepareOutcome] = {}
        for ref in claims:
            results[ref.uid] = self._prepare_claim(ref)
        if len(claims) > 1 and self._faults.misbehaving("first-claim-only"):
            for ref in claims[1:]:
                if not results[ref.uid].error:
                    results[ref.uid] = PrepareOutcome()  # success, but no CDI device
            log.warning("misbehaviour first-claim-only: devices only for claim %s", claims[0].uid)
        if claims and self._faults.misbehaving("skip-claim-in-prepare"):
            skipped = claims[-1].uid
            results.pop(skipped, None)
            log.warning("misbehaviour skip-claim-in-prepare: omitting claim %s", skipped)
        failures = sum(1 for r in results.values() if r.error)
        self.prepare_stats.record(time.monotonic() - started, len(claims), failures)
        self._on_change()
        return results

    def _prepare_claim(self, ref: ClaimRef) -> PrepareOutcome:
        with self._lock:
            done = self._prepared.get(ref.uid)
            # A prepare of a claim prepared before (a restarted kubelet asks again) must bring
            # back its CDI spec if a reboot emptied /run; the misbehaviour answers from the
            # checkpoint alone, and the container runtime cannot resolve the CDI device.
            if done is not None and self._faults.misbehaving("prepare-not-idempotent"):
                log.warning("misbehaviour prepare-not-idempotent: refusing claim %s", ref.uid)
                return PrepareOutcome(
                    error=f"claim {ref.namespace}/{ref.name} ({ref.uid}) is already prepared "
                    "(misbehaviour prepare-not-idempotent)"
                )
            if done is not None and (
                Path(done.cdi_spec).exists() or self._faults.misbehaving("cdi-not-recreated")
            ):
                return PrepareOutcome(devices=done.devices)
        # The API read happens outside the lock: it is the slow part.
        try:
            claim = self._claims.get_claim(ref.namespace, ref.name)
            allocation = allocation_for_driver(claim, self._driver, self._pool, uid=ref.uid)
        except ClaimError as exc:
            log.warning("prepare %s/%s (%s) failed: %s", ref.namespace, ref.name, ref.uid, exc)
            return PrepareOutcome(error=str(exc))
        with self._lock:
            try:
                prepared = self._prepare_allocation(allocation)
            except ClaimError as exc:
                log.warning("prepare %s/%s (%s) failed: %s", ref.namespace, ref.name, ref.uid, exc)
                return PrepareOutcome(error=str(exc))
        log.info(
            "prepared claim %s/%s (%s): %s",
            ref.namespace,
            ref.name,
            ref.uid,
            ",".join(d.device_name for d in prepared.devices),
        )
        self._on_prepared(prepared)
        return PrepareOutcome(devices=prepared.devices)

    def _wait_for_held_devices(self, allocation: ClaimAllocation) -> None:
        """A device still prepared for another claim is not handed out again (call with the
        lock held).

        After a force delete the scheduler may allocate a device before the kubelet has
        stopped the old pod and unprepared its claim. The kubelet does not hold up other
        prepares meanwhile, so this one waits for that unprepare (up to
        HELD_DEVICE_WAIT_SECONDS, well within the kubelet's call timeout) and fails after
        that: the kubelet retries, though only after its pod-sync back-off. Shared (consumable
        capacity: a shareID) and admin-access devices are meant to be prepared for several
        claims, each with its own CDI spec, so unpreparing one leaves the others. A
        holder whose claim is gone from the API is a leftover, not a user: it does not block."""
        deadline = time.monotonic() + HELD_DEVICE_WAIT_SECONDS
        while (holder := self._holder_of_any(allocation)) is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                device, claim = holder
                raise ClaimError(
                    f"device {device} is still prepared for claim {claim.namespace}/"
                    f"{claim.name} ({claim.uid}); it is given to {allocation.namespace}/"
                    f"{allocation.name} once that claim is unprepared"
                )
            log.info(
                "prepare %s/%s waits for claim %s to let go of device %s",
                allocation.namespace,
                allocation.name,
                holder[1].uid,
                holder[0],
            )
            self._unprepared.wait(remaining)

    def _holder_of_any(self, allocation: ClaimAllocation) -> tuple[str, PreparedClaim] | None:
        # Misbehaviour exclusive-shared-devices: a driver that cannot share a device it
        # publishes with allowMultipleAllocations (admin access is still let through).
        exclusive = self._faults.misbehaving("exclusive-shared-devices")

        def shareable(device: AllocatedDevice | PreparedDevice) -> bool:
            return device.admin_access or (bool(device.share_id) and not exclusive)

        for device in allocation.devices:
            if shareable(device):
                continue
            for holder in self._prepared.values():
                if holder.uid == allocation.uid or not any(
                    held.device_name == device.device and not shareable(held)
                    for held in holder.devices
                ):
                    continue
                if not self._claim_gone(holder):
                    return device.device, holder
        return None

    def _refuse_kept_busy(self, allocation: ClaimAllocation) -> None:
        """Misbehaviours keep-released-devices, restored-claims-stay-busy: a device some claim
        was unprepared from is refused to every other claim while the misbehaviour is on, as by
        a driver that never marks it free again."""
        for device in allocation.devices:
            released_by, why = self._kept_busy.get(device.device, ("", ""))
            shareable = device.admin_access or device.share_id
            if why and self._faults.misbehaving(why) and not shareable:
                raise ClaimError(
                    f"device {device.device} is still busy although claim {released_by} "
                    f"was unprepared (misbehaviour {why})"
                )

    def _claim_gone(self, holder: PreparedClaim) -> bool:
        try:
            claim = self._claims.get_claim(holder.namespace, holder.name)
        except ClaimNotFound:
            return True
        except ClaimError:
            return False  # unknown: keep refusing, the kubelet retries
        return (claim.get("metadata") or {}).get("uid") != holder.uid

    def _prepare_allocation(self, allocation: ClaimAllocation) -> PreparedClaim:
        inventory = self._inventory()
        by_name = inventory.by_name()
        controls = self._faults.controls
        for device in allocation.devices:
            if device.device not in by_name:
                raise ClaimError(f"device {device.device} is not a device of pool {self._pool}")
            if controls.device(device.device).withdrawn:
                raise ClaimError(f"device {device.device} was withdrawn from pool {self._pool}")
        if not self._faults.misbehaving("prepare-held-devices"):
            self._wait_for_held_devices(allocation)
        self._refuse_kept_busy(allocation)
        injected = self._faults.take_prepare_failure(d.device for d in allocation.devices)
        if injected:
            raise ClaimError(injected)

        # Legal: specs named by device; nothing in them names the claim (fakedriver.cdi).
        by_device = self._faults.misbehaving("cdi-specs-by-device")
        naming = SpecNaming.by_device(allocation.uid) if by_device else SpecNaming(allocation.uid)
        half_released = self._half_released(allocation)
        entries: list[tuple[str, DeviceEnv]] = []
        devices: list[PreparedDevice] = []
        for device, requests in group_devices(allocation.devices):
            described = by_name[device.device]
            if self._faults.misbehaving("cdi-wrong-device"):
                described = _another_device(inventory, device.device) or described
            config: dict[str, str] = {}
            for request in requests:
                config.update(allocation.config_for(request))
            entries.append(
                (
                    device.device,
                    DeviceEnv(
                        device=described.name,
                        pool=self._pool,
                        model=described.model,
                        memory=described.memory,
                        claim_uid=allocation.uid,
                        claim_name=allocation.name,
                        claim_namespace=allocation.namespace,
                        requests=requests,
                        admin_access=device.admin_access,
                        config=config,
                        show_claim_uid=not by_device,
                        releasing_from=half_released.get(device.device, ""),
                    ),
                )
            )
            base_requests = tuple(dict.fromkeys(r.split("/", 1)[0] for r in requests))
            devices.append(
                PreparedDevice(
                    request_names=base_requests,
                    pool_name=self._pool,
                    device_name=device.device,
                    cdi_device_ids=(naming.device_id(device.device),),
                    share_id=device.share_id,
                    admin_access=device.admin_access,
                )
            )
        if self._faults.misbehaving("cdi-first-device-only"):
            entries, devices = entries[:1], devices[:1]
        first = entries[0][0] if entries else ""
        document = build_spec(naming, entries)
        path = self._cdi.write(naming, document, first)
        if self._faults.misbehaving("unstable-cdi-spec"):
            self._rewrite_later(naming, path, inventory, entries)
        devices, metadata_specs = self._write_metadata(allocation, inventory, devices)
        prepared = PreparedClaim(
            uid=allocation.uid,
            namespace=allocation.namespace,
            name=allocation.name,
            devices=tuple(devices),
            cdi_spec=str(path),
            cdi_document=document,
            metadata_specs=metadata_specs,
        )
        self._prepared[allocation.uid] = prepared
        try:
            self._checkpoint.save(self._prepared)
        except OSError as exc:
            del self._prepared[allocation.uid]
            self._cdi.remove(allocation.uid, path)
            if self._metadata:
                self._metadata.remove(allocation.namespace, allocation.name, allocation.uid)
            raise ClaimError(f"checkpoint write failed: {exc}") from exc
        return prepared

    def _write_metadata(
        self, allocation: ClaimAllocation, inventory: NodeInventory, devices: list[PreparedDevice]
    ) -> tuple[list[PreparedDevice], dict[str, dict]]:
        """Write the device metadata of each request and add its CDI device id to the request's
        first device, so the kubelet passes it to the containers that use the request (the
        devices, with those ids, and the metadata CDI specs by path)."""
        if self._metadata is None:
            return devices, {}
        by_name = inventory.by_name()
        controls = self._faults.published
        wrong = self._faults.misbehaving("metadata-wrong-device")

        def listed(device: str) -> str:  # misbehaviour metadata-wrong-device: another device
            other = _another_device(inventory, device) if wrong else None
            return other.name if other else device

        requests = requests_metadata(
            [(d.request, d.pool, listed(d.device)) for d in allocation.devices],
            lambda name: device_attributes(self._driver, by_name[name], controls),
            all_requests=self._faults.misbehaving("metadata-all-requests"),
        )
        claim = ClaimIdentity(
            allocation.uid, allocation.namespace, allocation.name, allocation.pod_claim_name
        )
        written = self._metadata.write(claim, requests)
        with_ids = list(devices)
        for request, device_id in written.device_ids.items():
            for i, device in enumerate(with_ids):
                if request in device.request_names:
                    ids = (*device.cdi_device_ids, device_id)
                    with_ids[i] = replace(device, cdi_device_ids=ids)
                    break
        return with_ids, dict(written.specs)

    def _half_released(self, allocation: ClaimAllocation) -> dict[str, str]:
        """Misbehaviour background-release: the allocated devices whose release from another
        claim still runs, with that claim. Not waited for: the prepare goes on and answers
        success, but the device is not set up for this claim."""
        if not self._faults.misbehaving("background-release"):
            return {}
        names = [d.device for d in allocation.devices if not (d.admin_access or d.share_id)]
        half = self._releasing.half_released(names, self._clock())
        for device, claim in half.items():
            log.warning(
                "misbehaviour background-release: preparing %s for %s/%s while its release "
                "from claim %s still runs",
                device,
                allocation.namespace,
                allocation.name,
                claim,
            )
        return half

    def _rewrite_later(
        self,
        naming: SpecNaming,
        path: Path,
        inventory: NodeInventory,
        entries: list[tuple[str, DeviceEnv]],
    ) -> None:
        """Misbehaviour unstable-cdi-spec: a few seconds after prepare, the spec of a claim
        still prepared names another device of the pool; containers started later see it."""
        drifted = []
        for allocated, env in entries:
            other = _another_device(inventory, env.device)
            drifted.append(
                (
                    allocated,
                    replace(env, device=other.name, model=other.model, memory=other.memory)
                    if other
                    else env,
                )
            )
        spec = build_spec(naming, drifted)
        uid = naming.claim_uid

        def rewrite() -> None:
            with self._lock:
                if uid in self._prepared:
                    log.warning("misbehaviour unstable-cdi-spec: rewriting CDI spec of %s", uid)
                    self._cdi.write_to(path, spec)

        timer = threading.Timer(UNSTABLE_CDI_DELAY_S, rewrite)
        timer.daemon = True
        timer.start()

    # -- unprepare -----------------------------------------------------------

    def _keeps_busy(self, uid: str) -> str:
        """The misbehaviour that keeps the devices of claim `uid` busy after its unprepare: any
        claim's (keep-released-devices), or one the checkpoint held when this process started
        (restored-claims-stay-busy: unprepare only frees what this process prepared)."""
        if self._faults.misbehaving("keep-released-devices"):
            return "keep-released-devices"
        if uid in self._restored and self._faults.misbehaving("restored-claims-stay-busy"):
            return "restored-claims-stay-busy"
        return ""

    def _release_in_background(self, ref: ClaimRef, known: PreparedClaim) -> None:
        """Misbehaviour background-release: the unprepare answers now, the devices of `known`
        stay half-released for BACKGROUND_RELEASE_SECONDS (call with the lock held)."""
        devices = [d.device_name for d in known.devices if not (d.admin_access or d.share_id)]
        log.warning(
            "misbehaviour background-release: unprepare of %s answers before %s is released",
            ref.uid,
            ",".join(devices),
        )
        until = self._clock() + BACKGROUND_RELEASE_SECONDS
        self._releasing.start(devices, f"{ref.namespace}/{ref.name}", until)

    def unprepare_all(self) -> list[str]:
        """Unprepare every prepared claim (the unprepare-on-shutdown misbehaviour: a plugin
        that cleans up after itself when it stops, as if it were uninstalled)."""
        refs = [ClaimRef(c.uid, c.namespace, c.name) for c in self.prepared().values()]
        log.warning(
            "misbehaviour unprepare-on-shutdown: unpreparing %d claim(s) on shutdown", len(refs)
        )
        self.unprepare(refs)
        return [r.uid for r in refs]

    def unprepare(self, claims: Sequence[ClaimRef]) -> dict[str, str]:
        started = time.monotonic()
        if claims and self._faults.misbehaving("slow-unprepare"):
            log.warning("misbehaviour slow-unprepare: waiting %ss", SLOW_UNPREPARE_SECONDS)
            self._sleep(SLOW_UNPREPARE_SECONDS)  # outside the lock: prepares go on meanwhile
        results: dict[str, str] = {}
        if self._faults.misbehaving("unprepare-needs-claim"):  # read outside the lock
            results = unprepare_from_api_errors(self._claims, claims)
        noop = self._faults.misbehaving("noop-unprepare")
        refuse = self._faults.misbehaving("fail-unprepare")
        leak = self._faults.misbehaving("leak-cdi-spec")
        with self._lock:
            for ref in claims:
                if ref.uid in results:  # misbehaviour unprepare-needs-claim
                    continue
                if refuse:
                    log.warning("misbehaviour fail-unprepare: refusing claim %s", ref.uid)
                    results[ref.uid] = "misbehaviour fail-unprepare: device still busy"
                    continue
                if noop:
                    log.warning("misbehaviour noop-unprepare: keeping claim %s", ref.uid)
                    results[ref.uid] = ""
                    continue
                # Unknown claims are success; the spec file is removed anyway in
                # case an older instance wrote it and lost its checkpoint.
                known = self._prepared.pop(ref.uid, None)
                if known is not None and self._faults.misbehaving("background-release"):
                    self._release_in_background(ref, known)
                if known is not None and (busy := self._keeps_busy(ref.uid)):
                    for device in known.devices:
                        self._kept_busy[device.device_name] = (f"{ref.namespace}/{ref.name}", busy)
                if leak:
                    log.warning("misbehaviour leak-cdi-spec: keeping the spec of %s", ref.uid)
                else:
                    self._cdi.remove(ref.uid, known.cdi_spec if known else None)
                    if self._metadata:
                        self._metadata.remove(ref.namespace, ref.name, ref.uid)
                results[ref.uid] = ""
                log.info(
                    "unprepared claim %s/%s (%s)%s",
                    ref.namespace,
                    ref.name,
                    ref.uid,
                    "" if known else " (was not prepared)",
                )
            if not (noop or refuse):
                try:
                    self._checkpoint.save(self._prepared)
                except OSError as exc:
                    for ref in claims:
                        results[ref.uid] = f"checkpoint write failed: {exc}"
            self._unprepared.notify_all()
        failures = sum(1 for e in results.values() if e)
        self.unprepare_stats.record(time.monotonic() - started, len(claims), failures)
        self._on_change()
        return results


def _another_device(inventory: NodeInventory, name: str) -> DeviceSpec | None:
    names = [d.name for d in inventory.devices]
    if len(names) < 2:
        return None
    return inventory.devices[(names.index(name) + 1) % len(names)]
