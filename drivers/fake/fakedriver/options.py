"""The driver's options: names, paths and versions, with the kubelet's defaults."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fakedriver import DRIVER_NAME
from fakedriver.grpcapi import DRA_SERVICES, HEALTH_SERVICES
from fakedriver.ready import DEFAULT_READY_FILE


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
