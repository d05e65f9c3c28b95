"""The device lease book kept in the cluster under test: one ConfigMap
(`dra-conformance-leases` in namespace `dra-conformance`), so runs from several machines, or
from inside the cluster, share one book.

Each transaction reads the ConfigMap, applies the change and replaces it with the
resourceVersion it read: a concurrent writer makes the API server answer 409 Conflict, and the
transaction runs again on the new state (optimistic concurrency; the change may run more than
once). Every process renews a heartbeat in the book (`RENEW_EVERY_S`); the entries of an owner
whose heartbeat is older than `EXPIRE_AFTER_S` are dropped, so a runner killed with SIGKILL
frees its devices within that time. Heartbeats are wall-clock times of the writer: the
machines sharing a book must have clocks within a few seconds of each other.

Not the default yet. To select it, build the broker over it:
`DeviceLeaseBroker(ClusterLeaseBook(k8s.core, location=lease_dir), device_sets, ...)`; node
marks and live runs stay in `location` on this machine meanwhile.
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
from pathlib import Path
from typing import Any, TypeVar

from kubernetes.client.exceptions import ApiException
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_random

from conformance.kube.field_manager import FIELD_MANAGER
from conformance.run.lease_book import BookState, drop_entries, state_from_json, state_to_json
from conformance.run.node_marks import marked_nodes_unlocked

log = logging.getLogger("conformance.run.lease")

T = TypeVar("T")

NAMESPACE = "dra-conformance"
CONFIG_MAP = "dra-conformance-leases"
RENEW_EVERY_S = 10.0
EXPIRE_AFTER_S = 60.0
JOURNAL_KEEP = 2000  # lines kept in the ConfigMap (its data is limited to 1 MiB)
CONFLICT_PATIENCE_S = 120.0  # retrying 409s this long means something else is wrong


class _Conflict(Exception):
    """Someone wrote the book since it was read: run the transaction again."""


class ClusterLeaseBook:
    """A `LeaseBook` in one ConfigMap, over a CoreV1Api."""

    def __init__(
        self,
        core: Any,
        *,
        namespace: str = NAMESPACE,
        name: str = CONFIG_MAP,
        location: Path | None = None,
        renew_every: float = RENEW_EVERY_S,
        expire_after: float = EXPIRE_AFTER_S,
    ) -> None:
        self.core = core
        self.namespace, self.name = namespace, name
        self._location = location
        self.renew_every, self.expire_after = renew_every, expire_after
        # pid and host alone may repeat across CI containers: a random part makes it unique
        self._owner = f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self.conflicts = 0  # transactions run again after a 409 (for tests and benches)

    @property
    def location(self) -> Path | None:
        return self._location

    @property
    def owner(self) -> str:
        return self._owner

    # --- heartbeat -------------------------------------------------------------------------

    def start(self) -> ClusterLeaseBook:
        """Renew this process's heartbeat in the background until `close` (or the process
        ends: a daemon thread, so a killed process stops renewing)."""
        if self._renewer is None:
            self._renewer = threading.Thread(target=self._renew_loop, daemon=True, name="lease")
            self._renewer.start()
        return self

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.renew_every):
            try:
                self.update(lambda state: None, renew=True)
            except Exception as exc:  # noqa: BLE001 - the next beat tries again
                log.warning(
                    "lease book %s/%s: heartbeat failed: %s", self.namespace, self.name, exc
                )

    def close(self) -> None:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join(timeout=5)

    # --- transactions ------------------------------------------------------------------------

    def update(self, change: Callable[[BookState], T], *, renew: bool = False) -> T:
        for attempt in Retrying(
            retry=retry_if_exception_type(_Conflict),
            stop=stop_after_delay(CONFLICT_PATIENCE_S),
            wait=wait_random(0.01, 0.2),
            reraise=True,
        ):
            with attempt:
                return self._attempt(change, renew)
        raise AssertionError("unreachable: tenacity reraises")  # pragma: no cover

    def _attempt(self, change: Callable[[BookState], T], renew: bool) -> T:
        config_map = self._read()
        data = dict(config_map.data or {})
        raw = json.loads(data.get("book") or "{}")
        state = state_from_json(raw)
        now = time.time()
        beats = {
            k: float(t)
            for k, t in raw.get("heartbeats", {}).items()
            if now - float(t) <= self.expire_after
        }
        drop_entries(state, lambda e: e.owner != self._owner and e.owner not in beats)
        if renew or now - beats.get(self._owner, 0.0) >= self.renew_every:
            beats[self._owner] = now
        if self._location is not None:
            state.marked = frozenset(marked_nodes_unlocked(self._location))
        result = change(state)
        book = {**state_to_json(state), "heartbeats": beats}
        if book == raw and not state.journal:
            return result
        data["book"] = json.dumps(book, sort_keys=True)
        if state.journal:
            lines = (data.get("journal") or "").splitlines()
            lines += [json.dumps(line) for line in state.journal]
            data["journal"] = "\n".join(lines[-JOURNAL_KEEP:]) + "\n"
        config_map.data = data
        self._replace(config_map)
        return result

    def journal(self) -> list[dict[str, Any]]:
        """The journal lines kept in the book, oldest first."""
        text = (self._read().data or {}).get("journal") or ""
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def _read(self) -> Any:
        try:
            return self.core.read_namespaced_config_map(self.name, self.namespace)
        except ApiException as exc:
            if exc.status != 404:
                raise
        self._create()
        raise _Conflict  # read what was created (by this process or another)

    def _create(self) -> None:
        body = {"metadata": {"name": self.name}, "data": {"book": "{}"}}
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
                self.name, self.namespace, config_map, field_manager=FIELD_MANAGER
            )
        except ApiException as exc:
            if exc.status == 409:
                self.conflicts += 1
                raise _Conflict from exc
            raise
