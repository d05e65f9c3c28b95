"""The build graph with fake tasks: dependencies are respected, compiles never overlap on a
small machine, downloads overlap compiles, and a failure is raised as its task's own error
with its dependents never started."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest

from conformance.errors import BuildError
from conformance.images.build_graph import Task, cpu_slots, run
from conformance.progress import Progress


class Recorder:
    """Records each task's start and end; what overlapped is read from the intervals."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.spans: dict[str, tuple[float, float]] = {}
        self.inputs: dict[str, dict[str, Any]] = {}

    def task(
        self, name: str, deps: tuple[str, ...] = (), resource: str = "io", sleep: float = 0.05
    ) -> Task:
        def body(inputs: Mapping[str, Any]) -> str:
            start = time.monotonic()
            time.sleep(sleep)
            with self.lock:
                self.spans[name] = (start, time.monotonic())
                self.inputs[name] = dict(inputs)
            return f"{name}-out"

        return Task(name, body, deps, resource)  # type: ignore[arg-type]

    def overlap(self, a: str, b: str) -> bool:
        (a0, a1), (b0, b1) = self.spans[a], self.spans[b]
        return a0 < b1 and b0 < a1


def quiet() -> tuple[Progress, io.StringIO]:
    out = io.StringIO()
    return Progress(out, heartbeat_s=None), out


def test_dependencies_run_first_and_hand_over_their_results() -> None:
    rec = Recorder()
    tasks = [
        rec.task("assemble", deps=("compile", "rootfs")),
        rec.task("compile", deps=("fetch",), resource="cpu"),
        rec.task("fetch"),
        rec.task("rootfs"),
    ]
    results, times = run(tasks, quiet()[0], slots=1)
    assert rec.spans["fetch"][1] <= rec.spans["compile"][0]
    assert rec.spans["compile"][1] <= rec.spans["assemble"][0]
    assert rec.spans["rootfs"][1] <= rec.spans["assemble"][0]
    assert rec.inputs["assemble"] == {"compile": "compile-out", "rootfs": "rootfs-out"}
    assert results["assemble"] == "assemble-out"
    assert set(times.tasks) == {"assemble", "compile", "fetch", "rootfs"}


def test_two_compiles_never_overlap_on_two_cores() -> None:
    rec = Recorder()
    tasks = [rec.task(f"compile {n}", resource="cpu", sleep=0.1) for n in "abc"]
    run(tasks, quiet()[0], slots=cpu_slots(2))
    assert not any(
        rec.overlap(f"compile {x}", f"compile {y}") for x, y in (("a", "b"), ("a", "c"), ("b", "c"))
    )


def test_more_cores_allow_compiles_side_by_side() -> None:
    assert cpu_slots(1) == cpu_slots(2) == 1
    assert cpu_slots(8) == 4
    rec = Recorder()
    run([rec.task(f"compile {n}", resource="cpu", sleep=1.0) for n in "ab"], quiet()[0], slots=2)
    assert rec.overlap("compile a", "compile b")


def test_downloads_run_beside_a_compile_and_say_so() -> None:
    rec = Recorder()
    tasks = [
        # seconds apart, so a loaded machine's thread starts cannot reorder them
        rec.task("compile k8s", resource="cpu", sleep=3.0),
        rec.task("fetch etcd", sleep=1.5),
        rec.task("compile etcd", deps=("fetch etcd",), resource="cpu", sleep=0.05),
        rec.task("rootfs", sleep=2.0),
    ]
    progress, out = quiet()
    _, times = run(tasks, progress, slots=1, announce_after=0)
    assert rec.overlap("compile k8s", "fetch etcd") and rec.overlap("compile k8s", "rootfs")
    assert not rec.overlap("compile k8s", "compile etcd")
    text = out.getvalue()
    assert "rootfs [io] started (beside: compile k8s, fetch etcd)" in text
    assert "compile etcd: waiting for: fetch etcd" in text
    assert "compile etcd: waiting for: compile k8s (one compile at a time)" in text
    assert "compile k8s finished (" in text
    assert times.sum_s > times.wall_s  # the overlap, as the summary line reports it
    assert "4 tasks" in text.splitlines()[-1]


def test_a_failure_is_raised_as_its_own_error_and_its_dependents_never_start() -> None:
    rec = Recorder()

    class DownloadRefused(Exception):
        pass

    def refuse(_: Mapping[str, Any]) -> None:
        raise DownloadRefused("proxy said 403")

    tasks = [
        Task("fetch k8s", refuse),
        rec.task("compile k8s", deps=("fetch k8s",), resource="cpu"),
        rec.task("assemble", deps=("compile k8s", "rootfs")),
        rec.task("rootfs", sleep=0.3),
    ]
    progress, out = quiet()
    with pytest.raises(DownloadRefused, match="proxy said 403"):
        run(tasks, progress, slots=1, announce_after=0)
    assert "rootfs" in rec.spans  # the running task was awaited, not abandoned
    assert "compile k8s" not in rec.spans and "assemble" not in rec.spans
    assert "fetch k8s FAILED after" in out.getvalue()
    assert "not started after the failure: compile k8s, assemble" in out.getvalue()


@pytest.mark.parametrize(
    ("tasks", "message"),
    [
        ([Task("a", lambda _: 1, ("b",))], "'a' depends on unknown ['b']"),
        ([Task("a", lambda _: 1), Task("a", lambda _: 2)], "two tasks are named 'a'"),
        ([Task("a", lambda _: 1, ("b",)), Task("b", lambda _: 1, ("a",))], "a cycle among"),
    ],
)
def test_a_malformed_graph_is_refused_before_anything_runs(tasks: list[Task], message: str) -> None:
    with pytest.raises(BuildError, match=message.replace("[", r"\[").replace("]", r"\]")):
        run(tasks, quiet()[0])


def test_tasks_that_find_their_output_say_nothing_and_a_long_one_is_announced() -> None:
    rec = Recorder()
    warm = [rec.task(n, sleep=0) for n in ("fetch", "rootfs")]
    progress, out = quiet()
    # Margins wide enough for a loaded 2-core machine, where starting a thread can take a while.
    run([*warm, rec.task("compile", ("fetch",), "cpu", sleep=0)], progress, announce_after=30)
    assert out.getvalue() == ""
    slow = [rec.task("rootfs", sleep=3.0), rec.task("fetch", sleep=0)]
    progress, out = quiet()
    run([*slow, rec.task("compile", ("fetch",), "cpu", sleep=0)], progress, announce_after=1.5)
    lines = [line.split("] ", 1)[1] for line in out.getvalue().splitlines()]
    assert lines[0] == "rootfs [io] started"
    assert lines[1].startswith("rootfs finished (")
    assert "fetch" not in out.getvalue() and "compile" not in out.getvalue()
