"""Why a pod does not run when the cause lies with the cluster or the harness, not with the
driver (pure, no cluster): its image cannot be pulled, or the runtime cannot create its
sandbox. A wait for a workload pod that sees one of these ends as a `HarnessError` (the
requirement's *error*), never as a failure of the driver.

- An image-pull reason on a container's `state.waiting` ends a wait at once: the kubelet
  pulls the same image on every retry, and no driver can change that.
- `FailedCreatePodSandBox` warning events count only when the wait times out without the pod
  starting a container: the runtime retries them, and a node that is coming back (a restarted
  kubelet, a CNI that is not ready yet) records some before it succeeds. One whose message
  says an NRI hook failed ("NRI RunPodSandbox failed: ...", containerd's wrapping of a plugin's
  error) is the driver's: an NRI plugin is how a node-level driver (a network driver moving an
  interface into the pod) takes part in creating the sandbox, and it refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from conformance.model.outcome import HarnessError

# The kubelet's waiting reasons of a container whose image it cannot get
# (pkg/kubelet/images/types.go, v1.37.2).
IMAGE_PULL_REASONS = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
        "ImageInspectError",
        "RegistryUnavailable",
        "SignatureValidationFailed",
    }
)
SANDBOX_FAILED = "FailedCreatePodSandBox"  # the kubelet's event reason

NOT_THE_DRIVER = "a problem of the cluster or the harness, not of the driver"
# containerd wraps an NRI plugin's error as "NRI <event> failed: <plugin's error>"
# (internal/cri/server/sandbox_run.go); CRI-O's messages name NRI the same way.
_NRI_HOOK_FAILED = re.compile(r"\bNRI\b.*\bfail", re.IGNORECASE)


@dataclass(frozen=True)
class PullFailure:
    pod: str
    container: str
    image: str
    reason: str
    message: str

    def __str__(self) -> str:
        message = f": {self.message}" if self.message else ""
        return (
            f"container {self.container} of pod {self.pod} cannot get image {self.image} "
            f"({self.reason}{message})"
        )


def _statuses(pod: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    status = pod.get("status") or {}
    yield from status.get("initContainerStatuses") or ()
    yield from status.get("containerStatuses") or ()


def _images(pod: Mapping[str, Any]) -> dict[str, str]:
    spec = pod.get("spec") or {}
    return {
        c.get("name", ""): c.get("image", "")
        for c in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]
    }


def _ref(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return "/".join(str(meta[k]) for k in ("namespace", "name") if meta.get(k))


def image_pull_failure(pod: Mapping[str, Any] | None) -> PullFailure | None:
    """The first container of `pod` (a camelCase dict) waiting with an image-pull reason."""
    if not pod:
        return None
    images = _images(pod)
    for status in _statuses(pod):
        waiting = (status.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in IMAGE_PULL_REASONS:
            name = status.get("name", "")
            return PullFailure(
                pod=_ref(pod),
                container=name,
                image=images.get(name) or status.get("image") or "?",
                reason=waiting["reason"],
                message=" ".join(str(waiting.get("message") or "").split()),
            )
    return None


def _started(status: Mapping[str, Any]) -> bool:
    now, last = status.get("state") or {}, status.get("lastState") or {}
    return "running" in now or "terminated" in now or "terminated" in last


@dataclass(frozen=True)
class SandboxFailure:
    pod: str
    message: str  # the newest event's, whitespace collapsed

    @property
    def by_driver(self) -> bool:
        """An NRI plugin refused the sandbox: the driver's failure, not the cluster's."""
        return bool(_NRI_HOOK_FAILED.search(self.message))

    def __str__(self) -> str:
        if self.by_driver:
            return (
                f"an NRI plugin refused the sandbox of pod {self.pod}, which is the driver's "
                f"failure ({SANDBOX_FAILED}: {self.message})"
            )
        return (
            f"the container runtime cannot create the sandbox of pod {self.pod} "
            f"({SANDBOX_FAILED}: {self.message})"
        )


def sandbox_failure(
    pod: Mapping[str, Any] | None, events: Iterable[Mapping[str, Any]]
) -> SandboxFailure | None:
    """The newest FailedCreatePodSandBox warning about this pod (not an earlier pod of the
    same name), when none of its containers ever started; else None."""
    if not pod or any(_started(s) for s in _statuses(pod)):
        return None
    uid = (pod.get("metadata") or {}).get("uid")
    found = [
        e
        for e in events
        if e.get("type") == "Warning"
        and e.get("reason") == SANDBOX_FAILED
        and (not uid or (e.get("involvedObject") or {}).get("uid") in (None, uid))
    ]
    if not found:
        return None
    return SandboxFailure(_ref(pod), " ".join(str(found[-1].get("message") or "").split()))


def raise_if_pull_failure(pod: Mapping[str, Any] | None) -> None:
    """Raise a HarnessError when a container of `pod` cannot get its image."""
    failure = image_pull_failure(pod)
    if failure is not None:
        raise HarnessError(
            f"{failure}: {NOT_THE_DRIVER} (make the image pullable by the cluster's nodes, or "
            "pass --dra-workload-image REF: any image with sh, env and sleep)"
        )


def pull_failure_abort(pod: Mapping[str, Any] | None) -> str | None:
    """For `waits.wait_until(abort=...)`: raises on a pull failure, else None (keep waiting)."""
    raise_if_pull_failure(pod)
    return None
