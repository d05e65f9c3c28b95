"""Fixtures for the fake driver's unit tests: in-memory API fakes, a driver
started on short unix-socket paths, and gRPC channels to it."""

from __future__ import annotations

import copy
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
FAKE_DIR = REPO_ROOT / "drivers" / "fake"
for _path in (FAKE_DIR, REPO_ROOT):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from fakedriver import protogen  # noqa: E402

protogen.generate()  # fast no-op when the stubs are up to date

import grpc  # noqa: E402
from fakedriver.catalog import Catalog  # noqa: E402
from fakedriver.checkpoint import PreparedClaim  # noqa: E402
from fakedriver.claims import ClaimNotFound  # noqa: E402
from fakedriver.driver import DriverOptions, FakeDriver  # noqa: E402
from fakedriver.kubeapi import ApiError  # noqa: E402
from fakedriver.status import StatusSink  # noqa: E402

DRIVER = "fake.dra-conformance.io"
NODE = "kind-worker"
NODE2 = "kind-worker2"


class FakeClaims:
    """ClaimReader over a dict; counts reads so tests can prove idempotence."""

    def __init__(self) -> None:
        self.claims: dict[tuple[str, str], dict[str, Any]] = {}
        self.reads = 0
        self.fail_reads = False

    def add(self, claim: dict[str, Any]) -> dict[str, Any]:
        meta = claim["metadata"]
        self.claims[(meta["namespace"], meta["name"])] = claim
        return claim

    def get_claim(self, namespace: str, name: str) -> dict[str, Any]:
        self.reads += 1
        if self.fail_reads:
            raise AssertionError(f"unexpected API read of claim {namespace}/{name}")
        try:
            return copy.deepcopy(self.claims[(namespace, name)])
        except KeyError:
            message = f"get ResourceClaim {namespace}/{name}: HTTP 404: not found"
            raise ClaimNotFound(message) from None


class FakeSlices:
    """SliceClient with the API server's optimistic concurrency, in memory."""

    def __init__(self, drop_shared_counters: bool = False) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self._rv = 0
        self.writes = 0
        self.drop_shared_counters = drop_shared_counters

    def _store(self, body: dict[str, Any]) -> dict[str, Any]:
        self._rv += 1
        self.writes += 1
        obj = copy.deepcopy(body)
        obj["metadata"]["resourceVersion"] = str(self._rv)
        if self.drop_shared_counters:  # what the API does with the gate off
            obj["spec"].pop("sharedCounters", None)
            for device in obj["spec"].get("devices") or []:
                device.pop("consumesCounters", None)
        self.objects[obj["metadata"]["name"]] = obj
        return copy.deepcopy(obj)

    def list_slices(self, node_name: str, driver: str) -> list[dict[str, Any]]:
        return [
            copy.deepcopy(o)
            for o in self.objects.values()
            if o["spec"].get("nodeName") == node_name and o["spec"]["driver"] == driver
        ]

    def create_slice(self, body: dict[str, Any]) -> dict[str, Any]:
        if body["metadata"]["name"] in self.objects:
            raise ApiError(409, "already exists")
        return self._store(body)

    def update_slice(self, body: dict[str, Any]) -> dict[str, Any]:
        current = self.objects.get(body["metadata"]["name"])
        if current is None:
            raise ApiError(404, "not found")
        if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise ApiError(409, "conflict")
        return self._store(body)

    def delete_slice(self, name: str) -> None:
        self.objects.pop(name, None)

    def devices(self) -> list[str]:
        return [d["name"] for o in self.objects.values() for d in o["spec"].get("devices") or []]


class ClaimStatusLog:
    """ClaimStatusWriter that records each apply (``fail`` makes it raise)."""

    def __init__(self) -> None:
        self.applied: list[tuple[PreparedClaim, list[dict[str, Any]]]] = []
        self.fail = False

    def apply(self, claim: PreparedClaim, entries: list[dict[str, Any]]) -> None:
        if self.fail:
            raise ApiError(403, "forbidden")
        self.applied.append((claim, entries))


class ListSink(StatusSink):
    def __init__(self) -> None:
        self.documents: list[dict[str, Any]] = []

    def write(self, document: dict[str, Any]) -> None:
        self.documents.append(document)


def make_claim(
    uid: str,
    results: list[dict[str, Any]],
    name: str | None = None,
    namespace: str = "test-ns",
    config: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A ResourceClaim as the API serves it, allocated with ``results``."""
    full = [{"driver": DRIVER, "pool": NODE, "request": "req", **r} for r in results]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name or f"claim-{uid}", "namespace": namespace, "uid": uid},
        "spec": {
            "devices": {"requests": [{"name": "req", "exactly": {"deviceClassName": DRIVER}}]}
        },
        "status": {"allocation": {"devices": {"results": full, "config": config or []}}},
    }


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    # Unix socket paths are limited to ~107 bytes; pytest's tmp_path is too long.
    path = Path(tempfile.mkdtemp(prefix="fd-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def catalog() -> Catalog:
    return Catalog.load(FAKE_DIR / "catalog.yaml")


class DriverHarness:
    """Builds drivers on fixed directories so a test can 'restart' one."""

    def __init__(self, root: Path, catalog: Catalog) -> None:
        self.root = root
        self.catalog = catalog
        self.claims = FakeClaims()
        self.slices = FakeSlices()
        self.sink = ListSink()
        self.claim_status = ClaimStatusLog()
        self.running: list[FakeDriver] = []

    def options(self, node: str = NODE, **overrides: Any) -> DriverOptions:
        base = dict(
            node_name=node,
            registration_dir=self.root / "reg",
            plugin_dir=self.root / "plug",
            cdi_dir=self.root / "cdi",
            ready_file=self.root / "ready.json",
            health_interval=0.3,
        )
        base.update(overrides)
        return DriverOptions(**base)

    def start(
        self, node: str = NODE, controls: dict[str, str] | None = None, **overrides: Any
    ) -> FakeDriver:
        driver = FakeDriver(
            self.options(node, **overrides),
            self.catalog,
            self.claims,
            self.slices,
            self.sink,
            claim_status=self.claim_status,
        )
        if controls is not None:
            driver.apply_controls(controls, "1")
        driver.start(control=None, background=False)
        self.running.append(driver)
        return driver

    def stop(self, driver: FakeDriver) -> None:
        driver.stop(grace=0.5)
        self.running.remove(driver)

    def channel(self, driver: FakeDriver, registration: bool = False) -> grpc.Channel:
        path = driver.options.registration_socket if registration else driver.options.dra_socket
        channel = grpc.insecure_channel(f"unix://{path}")
        grpc.channel_ready_future(channel).result(timeout=60)  # a loaded machine starts slowly
        return channel


@pytest.fixture
def harness(short_tmp: Path, catalog: Catalog) -> Iterator[DriverHarness]:
    h = DriverHarness(short_tmp, catalog)
    yield h
    for driver in list(h.running):
        h.stop(driver)
