"""The Docker SDK client (the library testcontainers wraps) with a clear error when unreachable."""

from __future__ import annotations

import functools

import docker
from docker.errors import DockerException

from conformance.errors import HostError


@functools.cache
def client() -> docker.DockerClient:
    try:
        c = docker.from_env(timeout=600)
        c.ping()
    except DockerException as exc:
        raise HostError(
            f"cannot reach a Docker engine: {exc}",
            "run `dra-conformance cluster up` as root on Debian/Ubuntu (it installs and starts "
            "one) or start dockerd yourself",
        ) from exc
    return c


def image_exists(ref: str) -> bool:
    try:
        client().images.get(ref)
        return True
    except docker.errors.ImageNotFound:
        return False
