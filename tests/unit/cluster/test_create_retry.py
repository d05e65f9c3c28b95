"""Creating a kind cluster once more after a failure (a busy host makes kubeadm give up), but
never when the failed nodes are kept for inspection."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest

from conformance.cluster.kind import CREATE_ATTEMPTS, create_with_retry
from conformance.errors import ClusterError
from conformance.progress import Progress


def failing(times: int, calls: list[int]) -> Callable[[], None]:
    """A creation that fails `times` times, then succeeds; `calls` counts the tries."""

    def create() -> None:
        calls.append(1)
        if len(calls) <= times:
            raise ClusterError(f"cluster c did not come up: attempt {len(calls)}\nnode logs: x")

    return create


def test_a_failed_creation_is_tried_once_more_and_said() -> None:
    calls: list[int] = []
    out = io.StringIO()
    create_with_retry(failing(1, calls), retain=False, progress=Progress(out, heartbeat_s=None))
    assert len(calls) == 2
    assert (
        "cluster c did not come up: attempt 1 (attempt 1 of 2); creating it once more"
        in out.getvalue()
    )
    assert "node logs" not in out.getvalue()  # the first line only


def test_the_last_failure_is_raised_as_it_is() -> None:
    calls: list[int] = []
    with pytest.raises(ClusterError, match=f"attempt {CREATE_ATTEMPTS}"):
        create_with_retry(failing(9, calls), retain=False, progress=Progress(io.StringIO()))
    assert len(calls) == CREATE_ATTEMPTS


def test_kept_nodes_are_not_replaced() -> None:
    calls: list[int] = []
    out = io.StringIO()
    with pytest.raises(ClusterError, match="attempt 1"):
        create_with_retry(failing(1, calls), retain=True, progress=Progress(out, heartbeat_s=None))
    assert len(calls) == 1 and "once more" not in out.getvalue()


def test_another_error_is_not_retried() -> None:
    calls: list[int] = []

    def create() -> None:
        calls.append(1)
        raise OSError("no docker")

    with pytest.raises(OSError, match="no docker"):
        create_with_retry(create, retain=False, progress=Progress(io.StringIO()))
    assert len(calls) == 1
