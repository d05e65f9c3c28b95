"""What a driver install needs that no cluster does (the driver's image, and helm for a helm
install) built in a background thread while the cluster is created, joined before the install.

A build error is raised as that build's own error once the cluster is up; a cluster that fails
is reported as such, after the build is awaited and its outcome said (a build cut off midway
would leave its cache entry to the next run)."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from conformance.cache import cache_root
from conformance.install.helm import helm_tool, local_chart
from conformance.install.image import build_image, image_source
from conformance.model.profile import HelmInstall, ManifestsInstall, Profile
from conformance.progress import Progress

T = TypeVar("T")
B = TypeVar("B")


@dataclass(frozen=True)
class Prebuilt:
    """What the background build produced: the driver image's reference (not yet loaded)."""

    image: str | None


def build_inputs(profile: Profile, progress: Progress | None = None) -> Prebuilt:
    """Build what the install of `profile` needs before it reaches the cluster."""
    progress = progress or Progress()
    method = profile.install
    spec = method.image if isinstance(method, ManifestsInstall | HelmInstall) else None
    image = None
    if spec is not None and image_source(spec) == "built":
        from conformance.host import prepare

        prepare.prepare_host(progress, cache_root() / "logs")  # the engine builds it
        image = build_image(spec, progress)
    if isinstance(method, HelmInstall):
        helm_tool(progress)
        local_chart(method)  # a goModule chart: its module fetched
    return Prebuilt(image)


def provision_while_building(
    build: Callable[[], B] | None, provision: Callable[[], T], progress: Progress | None = None
) -> tuple[T, B | None]:
    """`provision()` with `build()` beside it in a thread (None: nothing to build); the
    build's error, if any, is raised as it is once the cluster is up."""
    if build is None:
        return provision(), None
    progress = progress or Progress()
    started = time.monotonic()
    ended: list[float] = []

    def timed() -> B:
        try:
            return build()
        finally:
            ended.append(time.monotonic())

    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="driver-build")
    future = executor.submit(timed)
    executor.shutdown(wait=False)
    try:
        handle = provision()
    except BaseException:
        _settle(future, progress)
        raise
    provisioned = time.monotonic()
    built = future.result()
    progress.note(overlap_line(ended[0] - started, provisioned - started))
    return handle, built


def overlap_line(build_s: float, provision_s: float) -> str:
    """How the build and the provisioning overlapped: the time a serial set-up would add."""
    waited = max(build_s - provision_s, 0.0)
    return (
        f"driver build beside the cluster: {build_s:.1f} s, cluster {provision_s:.1f} s; "
        f"the install waited {waited:.1f} s for the build (one after the other: "
        f"{min(build_s, provision_s):.1f} s more)"
    )


def _settle(future: Future[B], progress: Progress) -> None:
    """After a failed provisioning: wait for the build, saying so, and name its error."""
    if not future.done():
        progress.note("the cluster failed; waiting for the driver build beside it to end")
    error = future.exception()
    if error is not None:
        first = (str(error).splitlines() or [type(error).__name__])[0]
        progress.note(f"the driver build beside the cluster failed too: {first}")
