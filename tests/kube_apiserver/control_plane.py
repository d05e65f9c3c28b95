"""etcd, kube-apiserver and a namespace-only kube-controller-manager as containers.

One private Docker network per session; only the API server's port is published, on
127.0.0.1. The API server self-signs its serving certificate (--cert-dir) and signs
service-account tokens with that same key, so nothing needs generating here but a static admin
token. The controller manager runs the namespace controller alone: deleting a namespace is
finished by it on every real cluster, and the harness waits for that. Every other controller
(scheduler, kubelet, disruption, claim allocation) is absent on purpose: tests set the status
those would write themselves.

Ryuk (testcontainers' reaper) is off: its image would have to be pulled. The fixture removes
its containers itself, and `remove_stale` removes those of a session that was killed.
"""

from __future__ import annotations

import contextlib
import io
import os
import secrets
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass

import docker
import tenacity
from testcontainers.core.config import testcontainers_config
from testcontainers.core.container import DockerContainer
from testcontainers.core.network import Network
from testcontainers.core.wait_strategies import HttpWaitStrategy

from conformance import docker_client
from conformance.cluster import kindconfig
from conformance.run.lease import pid_alive

OWNER_LABEL = "dra-conformance.io/test-apiserver-pid"
API_PORT = 6443
KCM_PORT = 10257
CERT_DIR = "/var/run/kubernetes"
TOKENS = "/etc/kubernetes/tokens.csv"
KCM_KUBECONFIG = "/etc/kubernetes/controller-manager.conf"
# a quiet machine takes a few seconds; CI runs four kind clusters beside it on 2 cores
STARTUP_TIMEOUT = 300


@dataclass(frozen=True)
class Endpoint:
    """What a client needs: the URL (published on 127.0.0.1), the admin token, the serving CA."""

    url: str
    token: str
    ca_pem: bytes


def feature_gates(version: str) -> str:
    # The gates of the e2e kind cluster, so both tiers see the same API surface.
    return ",".join(f"{k}={str(v).lower()}" for k, v in kindconfig.feature_gates(version).items())


def runtime_config(version: str) -> str:
    return ",".join(
        f"{k}={v}" for k, v in kindconfig.DRA_RUNTIME_CONFIG[kindconfig.minor_of(version)].items()
    )


def etcd_command() -> list[str]:
    return [
        "etcd",
        "--name=test",
        "--data-dir=/var/lib/etcd",
        "--listen-client-urls=http://0.0.0.0:2379",
        "--advertise-client-urls=http://etcd:2379",
        "--unsafe-no-fsync",  # a throw-away store: durability buys nothing, fsync costs seconds
        "--log-level=warn",
    ]


def apiserver_command(version: str) -> list[str]:
    command = [
        "kube-apiserver",
        "--etcd-servers=http://etcd:2379",
        f"--secure-port={API_PORT}",
        f"--cert-dir={CERT_DIR}",
        f"--service-account-key-file={CERT_DIR}/apiserver.key",
        f"--service-account-signing-key-file={CERT_DIR}/apiserver.key",
        "--service-account-issuer=https://kubernetes.default.svc",
        f"--token-auth-file={TOKENS}",
        "--authorization-mode=Node,RBAC",
        "--allow-privileged=true",
        "--service-cluster-ip-range=10.96.0.0/16",
        # No token controller creates a namespace's `default` ServiceAccount here.
        "--disable-admission-plugins=ServiceAccount",
        f"--feature-gates={feature_gates(version)}",
        "--v=1",
    ]
    if runtime_config(version):
        command.append(f"--runtime-config={runtime_config(version)}")
    return command


def controller_manager_command(version: str) -> list[str]:
    return [
        "kube-controller-manager",
        f"--kubeconfig={KCM_KUBECONFIG}",
        "--controllers=namespace",
        "--leader-elect=false",
        f"--secure-port={KCM_PORT}",
        f"--feature-gates={feature_gates(version)}",
        "--v=1",
    ]


def _kcm_kubeconfig(token: str) -> bytes:
    # Inside the private network; the serving certificate names neither alias nor container IP.
    return (
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://apiserver:6443', "
        "insecure-skip-tls-verify: true}}]\n"
        f"users: [{{name: u, user: {{token: '{token}'}}}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    ).encode()


def remove_stale(client: docker.DockerClient) -> list[str]:
    """Containers and networks of test sessions whose process is gone (killed: no teardown).
    Low-level listings: other sessions remove their own containers meanwhile, and the SDK's
    high-level list would inspect each one and fail on those."""
    removed = []
    for container in client.api.containers(all=True, filters={"label": OWNER_LABEL}):
        if not pid_alive(int(container["Labels"].get(OWNER_LABEL, "0"))):
            with contextlib.suppress(docker.errors.NotFound):
                client.api.remove_container(container["Id"], force=True)
                removed.append(container["Names"][0].lstrip("/"))
    for network in client.api.networks(filters={"label": OWNER_LABEL}):
        if not pid_alive(int(network["Labels"].get(OWNER_LABEL, "0"))):
            with contextlib.suppress(docker.errors.APIError):  # gone, or still in use
                client.api.remove_network(network["Id"])
                removed.append(network["Name"])
    return removed


def _read_file(container: DockerContainer, path: str) -> bytes:
    stream, _ = container.get_wrapped_container().get_archive(path)
    with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
        member = tar.extractfile(tar.getmembers()[0])
        assert member is not None, f"{path} in the API server container is not a file"
        return member.read()


class LoopbackContainer(DockerContainer):
    """Reached on the Docker host's 127.0.0.1, where its ports are published. (testcontainers
    would pick a gateway address on a machine that has /.dockerenv, as this VM image does.)"""

    def get_container_host_ip(self) -> str:
        return "127.0.0.1"


def _container(image: str, network: Network, alias: str, labels: dict[str, str]) -> DockerContainer:
    return (
        LoopbackContainer(image)
        .with_network(network)
        .with_network_aliases(alias)
        .with_name(f"dra-test-{alias}-{os.getpid()}-{secrets.token_hex(3)}")
        .with_kwargs(labels=labels)
    )


def _published_on_loopback(container: DockerContainer, port: int) -> DockerContainer:
    # A random host port on 127.0.0.1 only: the admin token must not be usable from outside.
    container.ports[f"{port}/tcp"] = ("127.0.0.1", None)  # type: ignore[assignment]
    return container


class StartFailed(RuntimeError):
    """A control-plane container exited or never answered."""


def _wait_ready(container: DockerContainer, port: int, path: str, what: str) -> None:
    """Poll `path` with testcontainers' HTTP wait in short rounds, so that a container that
    exited (a flag its binary refuses, for example) fails the session at once, with its log."""
    strategy = (
        HttpWaitStrategy(port, path)
        .using_tls(insecure=True)  # the CA is read from the container once it is up
        .with_startup_timeout(2)
        .with_poll_interval(0.2)
    )
    wrapped = container.get_wrapped_container()

    def round_() -> None:
        wrapped.reload()
        if wrapped.status in ("exited", "dead"):
            raise StartFailed(f"the test {what} exited")
        strategy.wait_until_ready(container)

    try:
        for attempt in tenacity.Retrying(
            stop=tenacity.stop_after_delay(STARTUP_TIMEOUT),
            retry=tenacity.retry_if_exception_type(TimeoutError),
            reraise=True,
        ):
            with attempt:
                round_()
    except StartFailed as exc:
        raise StartFailed(f"{exc}; its last log lines:\n{_tail(wrapped)}") from None
    except TimeoutError as exc:
        raise StartFailed(
            f"the test {what} did not answer {path} within {STARTUP_TIMEOUT} s (is the machine "
            f"overloaded? see `uptime`); its last log lines:\n{_tail(wrapped)}"
        ) from exc


def _tail(container: docker.models.containers.Container) -> str:
    return container.logs(tail=15).decode(errors="replace")


@contextlib.contextmanager
def control_plane(image: str, version: str) -> Iterator[tuple[Endpoint, dict[str, float]]]:
    """Start the three containers; yield the endpoint and start-up timings (seconds); remove
    everything on exit, also when start-up fails."""
    testcontainers_config.ryuk_disabled = True
    remove_stale(docker_client.client())
    labels = {OWNER_LABEL: str(os.getpid())}
    token = secrets.token_hex(24)
    tokens_csv = f'{token},test-admin,test-admin,"system:masters"\n'.encode()
    started: list[DockerContainer] = []
    timings: dict[str, float] = {}
    network = Network(docker_network_kw={"labels": labels}).create()
    begin = time.monotonic()
    try:
        # All three start at once and wait for each other (the API server retries etcd, the
        # controller manager is restarted by Docker if the API server is not up in its 10 s).
        etcd = _container(image, network, "etcd", labels).with_command(etcd_command())
        etcd.with_tmpfs_mount("/var/lib/etcd")
        apiserver = (
            _published_on_loopback(_container(image, network, "apiserver", labels), API_PORT)
            .with_command(apiserver_command(version))
            .with_copy_into_container(tokens_csv, TOKENS, 0o600)
        )
        kcm = (
            _published_on_loopback(
                _container(image, network, "controller-manager", labels), KCM_PORT
            )
            .with_command(controller_manager_command(version))
            .with_copy_into_container(_kcm_kubeconfig(token), KCM_KUBECONFIG, 0o600)
        )
        kcm.with_kwargs(labels=labels, restart_policy={"Name": "on-failure"})
        for container in (etcd, apiserver, kcm):
            started.append(container)
            container.start()
        timings["containers_started"] = time.monotonic() - begin
        _wait_ready(apiserver, API_PORT, "/readyz", "kube-apiserver")
        timings["apiserver_ready"] = time.monotonic() - begin
        _wait_ready(kcm, KCM_PORT, "/healthz", "kube-controller-manager")
        timings["controller_manager_ready"] = time.monotonic() - begin
        port = apiserver.get_exposed_port(API_PORT)
        ca = _read_file(apiserver, f"{CERT_DIR}/apiserver.crt")
        # "localhost": the self-signed certificate names it, not 127.0.0.1.
        yield Endpoint(f"https://localhost:{port}", token, ca), timings
    finally:
        for container in reversed(started):
            with contextlib.suppress(docker.errors.APIError):
                container.stop()
        with contextlib.suppress(docker.errors.APIError):
            network.remove()
