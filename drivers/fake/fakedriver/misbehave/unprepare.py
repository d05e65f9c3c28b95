"""Unprepare misbehaviours: an unprepare that does nothing, fails, lags, leaks its CDI spec, needs
the claim from the API, or answers before the devices are free again."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from fakedriver.checkpoint import PreparedClaim
from fakedriver.claims import ClaimError, ClaimKey, ClaimReader
from fakedriver.misbehave.release import ReleaseBook

if TYPE_CHECKING:
    from fakedriver.controls import FaultState

log = logging.getLogger(__name__)

NAMES = frozenset(
    {
        "noop-unprepare",  # unprepare succeeds but keeps CDI spec and checkpoint
        "fail-unprepare",  # unprepare answers an error for every claim
        "slow-unprepare",  # unprepare takes SLOW_UNPREPARE_SECONDS before it lets go
        "leak-cdi-spec",  # unprepare releases the claim but leaves its CDI spec on the node
        "unprepare-needs-claim",  # unprepare reads the claim from the API, fails once it is gone
        "keep-released-devices",  # unprepare succeeds, yet the device is never prepared again
        "restored-claims-stay-busy",  # unprepare of a claim restored at start keeps its devices
        "background-release",  # unprepare answers before the device is free; a prepare meanwhile
        # sets the half-released device up without it (its container does not see the device)
    }
)

# Long enough for the kubelet to prepare the next claim of a device meanwhile (~1-3 s).
SLOW_UNPREPARE_SECONDS = 15.0
# background-release: how long a device's release runs on after the unprepare answered; well
# past the ~1-5 s a graceful delete takes to hand the device to a waiting pod.
BACKGROUND_RELEASE_SECONDS = 15.0


class UnprepareHooks:
    """The unprepare misbehaviours, and what they leave behind for later prepares: devices
    kept busy and devices still half-released."""

    def __init__(
        self,
        faults: FaultState,
        claims: ClaimReader,
        sleep: Callable[[float], None],
        clock: Callable[[], float],
    ) -> None:
        self._faults = faults
        self._claims = claims
        self._sleep = sleep
        self._clock = clock
        # keep-released-devices, restored-claims-stay-busy: device name -> (the claim that last
        # let go of it, the misbehaviour that keeps it busy)
        self.kept_busy: dict[str, tuple[str, str]] = {}
        self.restored: frozenset[str] = frozenset()  # claims the checkpoint held at start
        self.releasing = ReleaseBook()  # background-release

    def before_unprepare(self, claims: Sequence[ClaimKey]) -> tuple[dict[str, str], bool]:
        """The claims answered without an unprepare (UID -> error, "" for success), and
        whether the driver's state must stay as it is (no checkpoint write). Called without
        the preparer's lock: it sleeps and reads the API."""
        faults = self._faults
        if claims and faults.misbehaving("slow-unprepare"):
            log.warning("misbehaviour slow-unprepare: waiting %ss", SLOW_UNPREPARE_SECONDS)
            self._sleep(SLOW_UNPREPARE_SECONDS)  # prepares go on meanwhile
        answered: dict[str, str] = {}
        if faults.misbehaving("unprepare-needs-claim"):
            answered = unprepare_from_api_errors(self._claims, claims)
        refuse = faults.misbehaving("fail-unprepare")
        noop = faults.misbehaving("noop-unprepare")
        for ref in claims:
            if ref.uid in answered:
                continue
            if refuse:
                log.warning("misbehaviour fail-unprepare: refusing claim %s", ref.uid)
                answered[ref.uid] = "misbehaviour fail-unprepare: device still busy"
            elif noop:
                log.warning("misbehaviour noop-unprepare: keeping claim %s", ref.uid)
                answered[ref.uid] = ""
        return answered, refuse or noop

    def released(self, ref: ClaimKey, known: PreparedClaim) -> None:
        """`known` was unprepared (call with the preparer's lock held)."""
        if self._faults.misbehaving("background-release"):
            self._release_in_background(ref, known)
        if busy := self._keeps_busy(ref.uid):
            for device in known.devices:
                self.kept_busy[device.device_name] = (f"{ref.namespace}/{ref.name}", busy)

    def keeps_cdi_spec(self, uid: str) -> bool:
        if self._faults.misbehaving("leak-cdi-spec"):
            log.warning("misbehaviour leak-cdi-spec: keeping the spec of %s", uid)
            return True
        return False

    def refuse_kept_busy(self, devices: Sequence[tuple[str, bool]]) -> None:
        """keep-released-devices, restored-claims-stay-busy: a device (name, shareable) some
        claim was unprepared from is refused to every other claim while the misbehaviour is
        on, as by a driver that never marks it free again."""
        for device, shareable in devices:
            released_by, why = self.kept_busy.get(device, ("", ""))
            if why and self._faults.misbehaving(why) and not shareable:
                raise ClaimError(
                    f"device {device} is still busy although claim {released_by} "
                    f"was unprepared (misbehaviour {why})"
                )

    def half_released(self, namespace: str, name: str, devices: Sequence[str]) -> dict[str, str]:
        """background-release: of `devices` (not shared), those whose release from another
        claim still runs, with that claim. Not waited for: the prepare goes on and answers
        success, but the device is not set up for this claim."""
        if not self._faults.misbehaving("background-release"):
            return {}
        half = self.releasing.half_released(devices, self._clock())
        for device, claim in half.items():
            log.warning(
                "misbehaviour background-release: preparing %s for %s/%s while its release "
                "from claim %s still runs",
                device,
                namespace,
                name,
                claim,
            )
        return half

    def _keeps_busy(self, uid: str) -> str:
        """The misbehaviour that keeps the devices of claim `uid` busy after its unprepare: any
        claim's (keep-released-devices), or one the checkpoint held when this process started
        (restored-claims-stay-busy: unprepare only frees what this process prepared)."""
        if self._faults.misbehaving("keep-released-devices"):
            return "keep-released-devices"
        if uid in self.restored and self._faults.misbehaving("restored-claims-stay-busy"):
            return "restored-claims-stay-busy"
        return ""

    def _release_in_background(self, ref: ClaimKey, known: PreparedClaim) -> None:
        """The unprepare answers now, the devices of `known` stay half-released for
        BACKGROUND_RELEASE_SECONDS."""
        devices = [d.device_name for d in known.devices if not (d.admin_access or d.share_id)]
        log.warning(
            "misbehaviour background-release: unprepare of %s answers before %s is released",
            ref.uid,
            ",".join(devices),
        )
        until = self._clock() + BACKGROUND_RELEASE_SECONDS
        self.releasing.start(devices, f"{ref.namespace}/{ref.name}", until)


def unprepare_from_api_errors(reader: ClaimReader, claims: Sequence[ClaimKey]) -> dict[str, str]:
    """unprepare-needs-claim: a driver that reads each claim from the API to unprepare it,
    instead of from its own checkpoint, fails for a claim already deleted (after a force
    delete); the kubelet then retries for ever. Claim UID -> error, for those it fails."""
    errors: dict[str, str] = {}
    for ref in claims:
        try:
            claim = reader.get_claim(ref.namespace, ref.name)
        except ClaimError as exc:
            errors[ref.uid] = f"{exc}: cannot unprepare (misbehaviour unprepare-needs-claim)"
            continue
        if (claim.get("metadata") or {}).get("uid") != ref.uid:
            errors[ref.uid] = (
                f"ResourceClaim {ref.namespace}/{ref.name} ({ref.uid}) not found: cannot "
                "unprepare (misbehaviour unprepare-needs-claim)"
            )
    return errors
