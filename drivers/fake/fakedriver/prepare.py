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

from fakedriver.catalog import NodeInventory
from fakedriver.cdi import CdiSpecStore, DeviceEnv, SpecNaming, build_spec
from fakedriver.checkpoint import Checkpoint, PreparedClaim, PreparedDevice
from fakedriver.claims import (
    ClaimAllocation,
    ClaimError,
    ClaimNotFound,
    ClaimReader,
    allocation_for_driver,
    group_devices,
)
from fakedriver.controls import FaultState
from fakedriver.metadata import ClaimIdentity, MetadataStore, requests_metadata
from fakedriver.misbehave.cdi import CdiHooks
from fakedriver.misbehave.prepare import PrepareHooks
from fakedriver.misbehave.unprepare import UnprepareHooks
from fakedriver.recovery import lost_specs, remove_orphan_specs, rewrite_specs
from fakedriver.slices import device_attributes
from fakedriver.stats import LatencyStats

log = logging.getLogger(__name__)

# How long a prepare waits for another claim to let go of a device (kubelet timeout: 45 s).
HELD_DEVICE_WAIT_SECONDS = 25.0


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
        self._on_change = on_change
        self._on_prepared = on_prepared  # after a fresh prepare, outside the lock
        self._metadata = metadata  # None: no device metadata files
        self._lock = threading.Lock()
        self._unprepared = threading.Condition(self._lock)  # notified after each unprepare
        self._prepared: dict[str, PreparedClaim] = {}
        # The misbehaviours and injected faults switched on through the control channel.
        self._unprepare_hooks = UnprepareHooks(faults, claims, sleep, clock)
        self._prepare_hooks = PrepareHooks(faults, self._unprepare_hooks, sleep)
        self._cdi_hooks = CdiHooks(faults, cdi, self._lock, lambda uid: uid in self._prepared)
        self.prepare_stats = LatencyStats()
        self.unprepare_stats = LatencyStats()
        self.recovered_claims = 0
        self.removed_orphan_specs: list[str] = []
        self.rewritten_specs: list[str] = []  # claims whose lost CDI spec the start wrote

    # -- state ---------------------------------------------------------------

    def load_checkpoint(self, discard: bool = False) -> int:
        """Restore prepared claims at start, or start afresh when told to ``discard`` them."""
        with self._lock:
            if discard:
                log.warning("discarding the checkpoint %s", self._checkpoint.path)
                self._checkpoint.discard()
                self._prepared = {}
            else:
                self._prepared = self._checkpoint.load()
            self.recovered_claims = len(self._prepared)
            self._unprepare_hooks.restored = frozenset(self._prepared)
            self.removed_orphan_specs = remove_orphan_specs(
                self._cdi, self._metadata, self._prepared
            )
            lost, lost_metadata = lost_specs(self._prepared)
            recreate = bool(lost or lost_metadata) and self._cdi_hooks.recreates_lost_specs(
                [c.uid for c in lost]
            )
            self.rewritten_specs = rewrite_specs(self._cdi, lost, lost_metadata) if recreate else []
        log.info("checkpoint: %d prepared claim(s) recovered", self.recovered_claims)
        if self.removed_orphan_specs:
            log.info(
                "removed %d CDI spec(s) of unknown claims: %s",
                len(self.removed_orphan_specs),
                ", ".join(self.removed_orphan_specs),
            )
        return self.recovered_claims

    def prepared(self) -> dict[str, PreparedClaim]:
        with self._lock:
            return dict(self._prepared)

    # -- prepare -------------------------------------------------------------

    def prepare(self, claims: Sequence[ClaimRef]) -> dict[str, PrepareOutcome]:
        if not claims:
            # The kubelet never asks with no claims; the liveness probe does. Nothing to
            # prepare: answered before the injected delay, the statistics and the status write,
            # so a slow driver still looks alive and the figures stay the kubelet's.
            return {}
        started = time.monotonic()
        self._prepare_hooks.before_prepare()
        results = {ref.uid: self._prepare_claim(ref) for ref in claims}
        results = self._prepare_hooks.answer(claims, results)
        failures = sum(1 for r in results.values() if r.error)
        self.prepare_stats.record(time.monotonic() - started, len(claims), failures)
        self._on_change()
        return results

    def _prepare_claim(self, ref: ClaimRef) -> PrepareOutcome:
        with self._lock:
            done = self._prepared.get(ref.uid)
            if done is not None:
                if error := self._prepare_hooks.refuse_prepared(ref):
                    return PrepareOutcome(error=error)
                # A prepare of a claim prepared before (a restarted kubelet asks again) brings
                # back its CDI spec if a reboot emptied /run.
                if Path(done.cdi_spec).exists() or not self._cdi_hooks.recreates_lost_specs():
                    return PrepareOutcome(devices=done.devices)
        # The API read happens outside the lock: it is the slow part.
        try:
            claim = self._claims.get_claim(ref.namespace, ref.name)
            allocation = allocation_for_driver(claim, self._driver, self._pool, uid=ref.uid)
            with self._lock:
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

    def _prepare_allocation(self, allocation: ClaimAllocation) -> PreparedClaim:
        """Check the devices, compute the claim's CDI spec and devices, write the spec, then
        checkpoint (call with the lock held)."""
        inventory = self._inventory()
        self._check_offered(allocation, inventory)
        if self._prepare_hooks.waits_for_held_devices():
            self._wait_for_held_devices(allocation)
        self._prepare_hooks.refuse(allocation)

        naming = self._cdi_hooks.naming(allocation.uid)
        entries, devices = self._cdi_entries(allocation, inventory, naming)
        first = entries[0][0] if entries else ""
        document = build_spec(naming, entries)
        path = self._cdi.write(naming, document, first)
        self._cdi_hooks.written(naming, path, inventory, entries)
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

    def _check_offered(self, allocation: ClaimAllocation, inventory: NodeInventory) -> None:
        by_name = inventory.by_name()
        controls = self._faults.controls
        for device in allocation.devices:
            if device.device not in by_name:
                raise ClaimError(f"device {device.device} is not a device of pool {self._pool}")
            if controls.device(device.device).withdrawn:
                raise ClaimError(f"device {device.device} was withdrawn from pool {self._pool}")

    def _cdi_entries(
        self, allocation: ClaimAllocation, inventory: NodeInventory, naming: SpecNaming
    ) -> tuple[list[tuple[str, DeviceEnv]], list[PreparedDevice]]:
        """Per allocated device: what its containers learn (CDI spec entry) and what the
        kubelet is answered (with the device's CDI device id)."""
        releasing = self._prepare_hooks.half_released(allocation)
        entries: list[tuple[str, DeviceEnv]] = []
        devices: list[PreparedDevice] = []
        for device, requests in group_devices(allocation.devices):
            described = self._cdi_hooks.described(inventory, device.device)
            config: dict[str, str] = {}
            for request in requests:
                config.update(allocation.config_for(request))
            env = DeviceEnv(
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
                show_claim_uid=naming.token is None,
                releasing_from=releasing.get(device.device, ""),
            )
            entries.append((device.device, env))
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
        return self._cdi_hooks.kept(entries), self._cdi_hooks.kept(devices)

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
        shareable = self._prepare_hooks.shareable
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

    def _claim_gone(self, holder: PreparedClaim) -> bool:
        try:
            claim = self._claims.get_claim(holder.namespace, holder.name)
        except ClaimNotFound:
            return True
        except ClaimError:
            return False  # unknown: keep refusing, the kubelet retries
        return (claim.get("metadata") or {}).get("uid") != holder.uid

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
        listed = self._cdi_hooks.metadata_device(inventory)
        requests = requests_metadata(
            [(d.request, d.pool, listed(d.device)) for d in allocation.devices],
            lambda name: device_attributes(self._driver, by_name[name], controls),
            all_requests=self._cdi_hooks.metadata_all_requests(),
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

    # -- unprepare -----------------------------------------------------------

    def unprepare_all(self) -> list[str]:
        """Unprepare every prepared claim (a plugin that cleans up after itself when it stops,
        as if it were uninstalled)."""
        refs = [ClaimRef(c.uid, c.namespace, c.name) for c in self.prepared().values()]
        log.info("unpreparing %d claim(s)", len(refs))
        self.unprepare(refs)
        return [r.uid for r in refs]

    def unprepare(self, claims: Sequence[ClaimRef]) -> dict[str, str]:
        started = time.monotonic()
        results, keep_state = self._unprepare_hooks.before_unprepare(claims)
        with self._lock:
            for ref in claims:
                if ref.uid not in results:
                    results[ref.uid] = ""
                    self._unprepare_claim(ref)
            if not keep_state:
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

    def _unprepare_claim(self, ref: ClaimRef) -> None:
        """Forget the claim and remove its CDI spec (call with the lock held). Unknown claims
        are success; the spec file is removed anyway in case an older instance wrote it and
        lost its checkpoint."""
        known = self._prepared.pop(ref.uid, None)
        if known is not None:
            self._unprepare_hooks.released(ref, known)
        if not self._unprepare_hooks.keeps_cdi_spec(ref.uid):
            self._cdi.remove(ref.uid, known.cdi_spec if known else None)
            if self._metadata:
                self._metadata.remove(ref.namespace, ref.name, ref.uid)
        log.info(
            "unprepared claim %s/%s (%s)%s",
            ref.namespace,
            ref.name,
            ref.uid,
            "" if known else " (was not prepared)",
        )
