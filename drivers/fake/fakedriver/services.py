"""gRPC servicers: thin translations between protobuf messages and the driver.

All behaviour lives in prepare.py and health.py; the same logic serves the
v1 and v1beta1 DRAPlugin APIs and the v1 and v1alpha1 health APIs.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import grpc

from fakedriver.grpcapi import (
    PLUGIN_TYPE,
    dra_v1_pb2,
    dra_v1_pb2_grpc,
    dra_v1beta1_pb2,
    dra_v1beta1_pb2_grpc,
    drahealth_v1_pb2,
    drahealth_v1_pb2_grpc,
    drahealth_v1alpha1_pb2,
    drahealth_v1alpha1_pb2_grpc,
    pluginregistration_v1_pb2,
    pluginregistration_v1_pb2_grpc,
)
from fakedriver.health import HealthMonitor
from fakedriver.liveness import from_probe
from fakedriver.prepare import ClaimRef, DevicePreparer

log = logging.getLogger(__name__)


class RegistrationService(pluginregistration_v1_pb2_grpc.RegistrationServicer):
    def __init__(
        self,
        driver: str,
        endpoint: str,
        supported_versions: Sequence[str],
        on_status: Callable[[bool, str], None],
        refuse: Callable[[], str] = lambda: "",
    ) -> None:
        self._refuse = refuse  # a reason to fail GetInfo (a misbehaviour), "" to answer
        self._info = pluginregistration_v1_pb2.PluginInfo(
            type=PLUGIN_TYPE,
            name=driver,
            endpoint=endpoint,
            supported_versions=list(supported_versions),
        )
        self._on_status = on_status

    def GetInfo(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        # The liveness probe asks every few seconds: only the kubelet's calls are news.
        probe = from_probe(context)
        caller = "liveness probe" if probe else "kubelet"
        if reason := self._refuse():
            level = logging.DEBUG if probe else logging.WARNING
            log.log(level, "%s GetInfo refused: %s", caller, reason)
            context.abort(grpc.StatusCode.UNAVAILABLE, reason)
        log.log(
            logging.DEBUG if probe else logging.INFO,
            "%s GetInfo: endpoint %s, versions %s",
            caller,
            self._info.endpoint,
            ",".join(self._info.supported_versions),
        )
        return self._info

    def NotifyRegistrationStatus(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        if request.plugin_registered:
            log.info("kubelet registered the plugin")
        else:
            log.error("kubelet rejected the registration: %s", request.error)
        self._on_status(request.plugin_registered, request.error)
        return pluginregistration_v1_pb2.RegistrationStatusResponse()


def _refs(request: Any) -> list[ClaimRef]:
    return [ClaimRef(uid=c.uid, namespace=c.namespace, name=c.name) for c in request.claims]


class _DraService:
    """NodePrepareResources/NodeUnprepareResources for one API version."""

    def __init__(self, preparer: DevicePreparer, pb2: ModuleType, has_share_id: bool) -> None:
        self._preparer = preparer
        self._pb2 = pb2
        self._has_share_id = has_share_id

    def NodePrepareResources(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        try:
            results = self._preparer.prepare(_refs(request))
        except Exception as exc:  # an unexpected bug must not look like success
            log.exception("NodePrepareResources failed")
            context.abort(grpc.StatusCode.INTERNAL, f"prepare: {exc}")
        response = self._pb2.NodePrepareResourcesResponse()
        for uid, outcome in results.items():
            entry = response.claims[uid]  # message-valued map: indexing inserts
            if outcome.error:
                entry.error = outcome.error
                continue
            for device in outcome.devices:
                message = entry.devices.add(
                    request_names=list(device.request_names),
                    pool_name=device.pool_name,
                    device_name=device.device_name,
                    cdi_device_ids=list(device.cdi_device_ids),
                )
                if self._has_share_id and device.share_id:
                    message.share_id = device.share_id
        return response

    def NodeUnprepareResources(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        try:
            results = self._preparer.unprepare(_refs(request))
        except Exception as exc:
            log.exception("NodeUnprepareResources failed")
            context.abort(grpc.StatusCode.INTERNAL, f"unprepare: {exc}")
        response = self._pb2.NodeUnprepareResourcesResponse()
        for uid, error in results.items():
            response.claims[uid].error = error
        return response


class DraV1Service(_DraService, dra_v1_pb2_grpc.DRAPluginServicer):
    def __init__(self, preparer: DevicePreparer) -> None:
        super().__init__(preparer, dra_v1_pb2, has_share_id=True)


class DraV1beta1Service(_DraService, dra_v1beta1_pb2_grpc.DRAPluginServicer):
    def __init__(self, preparer: DevicePreparer) -> None:
        super().__init__(preparer, dra_v1beta1_pb2, has_share_id=False)


class _HealthService:
    def __init__(self, monitor: HealthMonitor, pb2: ModuleType, stopping: threading.Event) -> None:
        self._monitor = monitor
        self._pb2 = pb2
        self._stopping = stopping
        self._status = {"Healthy": pb2.HEALTHY, "Unhealthy": pb2.UNHEALTHY, "Unknown": pb2.UNKNOWN}

    def NodeWatchResources(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        log.info("health stream opened (%s)", self._pb2.DESCRIPTOR.package)

        def active() -> bool:
            return context.is_active() and not self._stopping.is_set()

        pb2 = self._pb2
        with self._monitor.stream(pb2.DESCRIPTOR.package):
            for report in self._monitor.reports(active):
                yield pb2.NodeWatchResourcesResponse(
                    devices=[
                        pb2.DeviceHealth(
                            device=pb2.DeviceIdentifier(pool_name=h.pool, device_name=h.device),
                            health=self._status[h.health],
                            last_updated_time=h.last_updated,
                            health_check_timeout_seconds=h.timeout_seconds,
                            message=h.message,
                        )
                        for h in report
                    ]
                )
        log.info("health stream closed (%s)", pb2.DESCRIPTOR.package)


class HealthV1Service(_HealthService, drahealth_v1_pb2_grpc.DRAResourceHealthServicer):
    def __init__(self, monitor: HealthMonitor, stopping: threading.Event) -> None:
        super().__init__(monitor, drahealth_v1_pb2, stopping)


class HealthV1alpha1Service(_HealthService, drahealth_v1alpha1_pb2_grpc.DRAResourceHealthServicer):
    def __init__(self, monitor: HealthMonitor, stopping: threading.Event) -> None:
        super().__init__(monitor, drahealth_v1alpha1_pb2, stopping)
