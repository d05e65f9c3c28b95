"""The device lease book, kept in the cluster under test: one ConfigMap
(`dra-conformance-leases` in namespace `dra-conformance`) holds the leases, the node marks, the
live runs and every holder's heartbeat; a second one (`dra-conformance-lease-journal`) the
journal of grants and releases. Runs from several machines, or from inside the cluster, share
one book; the cluster is the coordinator.

Each transaction reads the ConfigMap, applies the change and replaces it with the
resourceVersion it read: a concurrent writer makes the API server answer 409 Conflict, and the
transaction runs again on the new state (optimistic concurrency; the change may run more than
once). Every process renews a heartbeat in the book (`renew_every`) saying how long it may stay
silent (`expire_after`); the entries and runs of an owner silent longer than that are dead, so
a runner killed with SIGKILL frees its devices within its expiry. Heartbeats are wall-clock
times of the writer: the machines sharing a book must have clocks within a few seconds.

The journal is appended after the book's transaction commits (a lost line is a missing
timeline, never a wrong lease); its lines carry the time of their transaction.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from kubernetes.client.exceptions import ApiException
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_random

from conformance.kube.field_manager import FIELD_MANAGER
from conformance.run.lease_book import BookState, drop_dead, state_from_json, state_to_json

log = logging.getLogger("conformance.run.lease")

T = TypeVar("T")

NAMESPACE = "dra-conformance"
CONFIG_MAP = "dra-conformance-leases"
JOURNAL_CONFIG_MAP = "dra-conformance-lease-journal"
RENEW_EVERY_S = 10.0
EXPIRE_AFTER_S = 60.0
EXPIRY_ENV = "DRA_CONFORMANCE_LEASE_EXPIRY"  # seconds; shorter for tests of a killed holder
JOURNAL_KEEP = 2000  # lines kept (a ConfigMap's data is limited to 1 MiB)
CONFLICT_PATIENCE_S = 120.0  # retrying 409s this long means something else is wrong


class _Conflict(Exception):
    """Someone wrote the object since it was read: run the transaction again."""


def default_expiry() -> float:
    """`EXPIRY_ENV` if set (a positive number of seconds), else `EXPIRE_AFTER_S`."""
    given = os.environ.get(EXPIRY_ENV, "")
    try:
        value = float(given) if given else EXPIRE_AFTER_S
    except ValueError:
        value = EXPIRE_AFTER_S
    return value if value > 0 else EXPIRE_AFTER_S


def _retrying() -> Retrying:
    return Retrying(
        retry=retry_if_exception_type(_Conflict),
        stop=stop_after_delay(CONFLICT_PATIENCE_S),
        wait=wait_random(0.01, 0.2),
        reraise=True,
    )


def _beats(raw: dict[str, Any], now: float) -> dict[str, list[float]]:
    """The heartbeats still fresh: owner -> [time, the expiry it declared]."""
    out = {}
    for owner, beat in (raw.get("heartbeats") or {}).items():
        at, expiry = (float(beat), EXPIRE_AFTER_S) if not isinstance(beat, list) else beat
        if now - float(at) <= float(expiry):
            out[owner] = [float(at), float(expiry)]
    return out


class ClusterLeaseBook:
    """A `LeaseBook` in a ConfigMap of the cluster, over a CoreV1Api."""

    def __init__(
        self,
        core: Any,
        *,
        namespace: str = NAMESPACE,
        name: str = CONFIG_MAP,
        renew_every: float | None = None,
        expire_after: float | None = None,
    ) -> None:
        self.core = core
        self.namespace, self.name = namespace, name
        self.journal_name = f"{name}-journal" if name != CONFIG_MAP else JOURNAL_CONFIG_MAP
        self.expire_after = expire_after if expire_after is not None else default_expiry()
        self.renew_every = renew_every or min(RENEW_EVERY_S, self.expire_after / 4)
        # pid and host alone may repeat across CI containers: a random part makes it unique
        self._owner = f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self._beating = False  # a heartbeat of this owner may be in the book
        self.conflicts = 0  # transactions run again after a 409 (for tests and benches)

    @property
    def owner(self) -> str:
        return self._owner

    def __repr__(self) -> str:
        return f"ConfigMap {self.namespace}/{self.name}"

    # --- heartbeat -------------------------------------------------------------------------

    def start(self) -> ClusterLeaseBook:
        """Renew this process's heartbeat now and in the background until `close` (or the
        process ends: a daemon thread, so a killed process stops renewing)."""
        if self._renewer is None:
            self.update(lambda state: None, renew=True)
            self._renewer = threading.Thread(target=self._renew_loop, daemon=True, name="lease")
            self._renewer.start()
        return self

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.renew_every):
            try:
                self.update(lambda state: None, renew=True)
            except Exception as exc:  # noqa: BLE001 - the next beat tries again
                log.warning("lease book %r: heartbeat failed: %s", self, exc)

    def close(self) -> None:
        """Stop renewing and withdraw the heartbeat (this owner's entries then go at once)."""
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join(timeout=5)
            self._renewer = None
        if self._beating:
            try:
                self.update(lambda state: None, withdraw=True)
            except Exception as exc:  # noqa: BLE001 - it expires anyway
                log.debug("lease book %r: could not withdraw the heartbeat: %s", self, exc)
            self._beating = False

    # --- transactions ------------------------------------------------------------------------

    def update(
        self, change: Callable[[BookState], T], *, renew: bool = False, withdraw: bool = False
    ) -> T:
        for attempt in _retrying():
            with attempt:
                result, journal = self._attempt(change, renew, withdraw)
        if journal:
            self._append_journal(journal)
        return result

    def _attempt(
        self, change: Callable[[BookState], T], renew: bool, withdraw: bool
    ) -> tuple[T, list[dict[str, Any]]]:
        config_map = self._read(self.name, {"book": "{}"})
        data = dict(config_map.data or {})
        raw = json.loads(data.get("book") or "{}")
        now = time.time()
        beats = _beats(raw, now)
        mine = beats.get(self._owner)
        if withdraw:
            beats.pop(self._owner, None)
        elif renew or mine is None or now - mine[0] >= self.renew_every:
            beats[self._owner] = [now, self.expire_after]
            self._beating = True
        state = state_from_json(raw)
        state.alive = lambda owner: owner in beats
        drop_dead(state)
        result = change(state)
        book = {**state_to_json(state), "heartbeats": beats}
        if book != raw:
            data["book"] = json.dumps(book, sort_keys=True)
            config_map.data = data
            self._replace(config_map)
        return result, state.journal

    def journal(self) -> list[dict[str, Any]]:
        """The journal lines kept in the cluster, in the order of their transactions (appends
        of two processes may land the other way round)."""
        for attempt in _retrying():
            with attempt:
                text = (self._read(self.journal_name, {}).data or {}).get("journal") or ""
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        return sorted(lines, key=lambda line: float(line.get("t", 0)))

    def _append_journal(self, lines: list[dict[str, Any]]) -> None:
        try:
            for attempt in _retrying():
                with attempt:
                    config_map = self._read(self.journal_name, {})
                    data = dict(config_map.data or {})
                    kept = (data.get("journal") or "").splitlines()
                    kept += [json.dumps(line, sort_keys=True) for line in lines]
                    data["journal"] = "\n".join(kept[-JOURNAL_KEEP:]) + "\n"
                    config_map.data = data
                    self._replace(config_map)
        except ApiException as exc:
            log.warning("lease journal %s: %s", self.journal_name, exc)

    # --- the API ------------------------------------------------------------------------------

    def _read(self, name: str, initial: dict[str, str]) -> Any:
        try:
            return self.core.read_namespaced_config_map(name, self.namespace)
        except ApiException as exc:
            if exc.status != 404:
                raise
        self._create(name, initial)
        raise _Conflict  # read what was created (by this process or another)

    def _create(self, name: str, initial: dict[str, str]) -> None:
        body = {"metadata": {"name": name}, "data": initial}
        for create in (
            lambda: self.core.create_namespace(
                {"metadata": {"name": self.namespace}}, field_manager=FIELD_MANAGER
            ),
            lambda: self.core.create_namespaced_config_map(
                self.namespace, body, field_manager=FIELD_MANAGER
            ),
        ):
            try:
                create()
            except ApiException as exc:
                if exc.status != 409:  # already there
                    raise

    def _replace(self, config_map: Any) -> None:
        try:
            self.core.replace_namespaced_config_map(
                config_map.metadata.name, self.namespace, config_map, field_manager=FIELD_MANAGER
            )
        except ApiException as exc:
            if exc.status == 409:
                self.conflicts += 1
                raise _Conflict from exc
            raise
