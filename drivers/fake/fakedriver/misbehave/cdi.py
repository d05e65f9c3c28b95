"""CDI and device-metadata misbehaviours: specs that name the wrong device, only the first
device, change after prepare, are not written again after a reboot, or are named by device
(legal); metadata files that list too much or the wrong device."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from fakedriver.catalog import DeviceSpec, NodeInventory
from fakedriver.cdi import CdiSpecStore, DeviceEnv, SpecNaming, build_spec

if TYPE_CHECKING:
    from fakedriver.controls import FaultState

log = logging.getLogger(__name__)

NAMES = frozenset(
    {
        "cdi-wrong-device",  # CDI env names another device than allocated
        "cdi-first-device-only",  # a claim's container sees only its first device
        "unstable-cdi-spec",  # a claim's CDI spec is rewritten to another device after prepare
        # a claim prepared before gets no new CDI spec after a reboot: neither at start (a
        # restarted container of a running pod fails) nor when the kubelet prepares it again
        "cdi-not-recreated",
        "cdi-specs-by-device",  # (legal) specs named by device: no claim UID in name or contents
        # device metadata (KEP-5304) of each request lists all of the claim's devices
        "metadata-all-requests",
        "metadata-wrong-device",  # device metadata lists another device of the node
    }
)

# unstable-cdi-spec: how long after prepare the claim's CDI spec changes.
UNSTABLE_CDI_DELAY_S = 1.0

T = TypeVar("T")


class CdiHooks:
    def __init__(
        self,
        faults: FaultState,
        cdi: CdiSpecStore,
        lock: threading.Lock,
        is_prepared: Callable[[str], bool],
    ) -> None:
        self._faults = faults
        self._cdi = cdi
        self._lock = lock  # the preparer's
        self._is_prepared = is_prepared  # call with the lock held

    def naming(self, claim_uid: str) -> SpecNaming:
        # Legal: specs named by device; nothing in them names the claim (fakedriver.cdi).
        if self._faults.misbehaving("cdi-specs-by-device"):
            return SpecNaming.by_device(claim_uid)
        return SpecNaming(claim_uid)

    def described(self, inventory: NodeInventory, device: str) -> DeviceSpec:
        """The device a container is told about for allocated `device`."""
        if self._faults.misbehaving("cdi-wrong-device"):
            return another_device(inventory, device) or inventory.by_name()[device]
        return inventory.by_name()[device]

    def kept(self, entries: list[T]) -> list[T]:
        """Of a claim's per-device entries, those that get into its CDI spec."""
        return entries[:1] if self._faults.misbehaving("cdi-first-device-only") else entries

    def recreates_lost_specs(self, lost: Sequence[str] | None = None) -> bool:
        """Whether the specs of claims prepared before that a reboot removed are written again
        (at start, for the `lost` claims, and when the kubelet prepares such a claim again)."""
        if not self._faults.misbehaving("cdi-not-recreated"):
            return True
        if lost is not None:
            log.warning(
                "misbehaviour cdi-not-recreated: not writing the lost CDI specs of %s",
                ", ".join(lost),
            )
        return False

    def written(
        self,
        naming: SpecNaming,
        path: Path,
        inventory: NodeInventory,
        entries: list[tuple[str, DeviceEnv]],
    ) -> None:
        """unstable-cdi-spec: a few seconds after prepare, the spec of a claim still prepared
        names another device of the pool; containers started later see it."""
        if not self._faults.misbehaving("unstable-cdi-spec"):
            return
        drifted = []
        for allocated, env in entries:
            other = another_device(inventory, env.device)
            if other:
                env = replace(env, device=other.name, model=other.model, memory=other.memory)
            drifted.append((allocated, env))
        spec = build_spec(naming, drifted)
        uid = naming.claim_uid

        def rewrite() -> None:
            with self._lock:
                if self._is_prepared(uid):
                    log.warning("misbehaviour unstable-cdi-spec: rewriting CDI spec of %s", uid)
                    self._cdi.write_to(path, spec)

        timer = threading.Timer(UNSTABLE_CDI_DELAY_S, rewrite)
        timer.daemon = True
        timer.start()

    def metadata_device(self, inventory: NodeInventory) -> Callable[[str], str]:
        """The device the metadata of allocated device `name` lists."""
        if not self._faults.misbehaving("metadata-wrong-device"):
            return lambda name: name

        def listed(name: str) -> str:
            other = another_device(inventory, name)
            return other.name if other else name

        return listed

    def metadata_all_requests(self) -> bool:
        return self._faults.misbehaving("metadata-all-requests")


def another_device(inventory: NodeInventory, name: str) -> DeviceSpec | None:
    names = [d.name for d in inventory.devices]
    if len(names) < 2:
        return None
    return inventory.devices[(names.index(name) + 1) % len(names)]
