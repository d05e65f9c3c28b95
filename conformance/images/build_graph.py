"""Run named build tasks as a dependency graph: network-bound work (`io`: module downloads,
debootstrap) starts as soon as its inputs are ready, beside compiles (`cpu`), which run one at
a time on a small machine so two `go build`s never thrash its cores.

Tasks run in threads. The first task to fail stops new starts; the tasks already running are
awaited (each writes its cache entry atomically or under its lock), then that task's own error
is raised.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Literal

from conformance.errors import BuildError
from conformance.progress import Progress, fmt_duration

Resource = Literal["cpu", "io"]


@dataclass(frozen=True)
class Task:
    """`run` gets the results of `deps` by task name and returns this task's result."""

    name: str
    run: Callable[[Mapping[str, Any]], Any]
    deps: tuple[str, ...] = ()
    resource: Resource = "io"


def cpu_slots(cores: int | None = None) -> int:
    """Compiles at once: a compile uses every core, so one on up to 3 cores, one per two more."""
    cores = cores or os.cpu_count() or 1
    return max(1, cores // 2)


@dataclass
class GraphTimes:
    """Each task's wall time and the graph's own: a sum above `wall_s` is work that overlapped."""

    tasks: dict[str, float]
    wall_s: float

    @property
    def sum_s(self) -> float:
        return sum(self.tasks.values())


def check(tasks: Iterable[Task]) -> dict[str, Task]:
    """The tasks by name; a duplicate, an unknown dependency or a cycle is a BuildError."""
    by_name: dict[str, Task] = {}
    for task in tasks:
        if task.name in by_name:
            raise BuildError(f"build graph: two tasks are named {task.name!r}")
        by_name[task.name] = task
    for task in by_name.values():
        unknown = [d for d in task.deps if d not in by_name]
        if unknown:
            raise BuildError(f"build graph: {task.name!r} depends on unknown {unknown}")
    done: set[str] = set()
    while len(done) < len(by_name):
        ready = [n for n, t in by_name.items() if n not in done and set(t.deps) <= done]
        if not ready:
            raise BuildError(f"build graph: a cycle among {sorted(set(by_name) - done)}")
        done.update(ready)
    return by_name


class _Run:
    """One execution: which tasks are done, running and waiting, and what each one printed."""

    def __init__(self, tasks: dict[str, Task], progress: Progress, slots: int) -> None:
        self.tasks = tasks
        self.progress = progress
        self.slots = slots
        self.results: dict[str, Any] = {}
        self.running: dict[Future[Any], str] = {}
        self.pending = list(tasks)  # in the order given: the caller's priority
        self.started: dict[str, float] = {}
        self.times: dict[str, float] = {}
        self.said_waiting: dict[str, str] = {}

    def startable(self) -> list[str]:
        chosen: list[str] = []
        compiles = sum(1 for n in self.running.values() if self.tasks[n].resource == "cpu")
        for name in self.pending:
            task = self.tasks[name]
            if any(d not in self.results for d in task.deps):
                continue
            if task.resource == "cpu":
                if compiles >= self.slots:
                    continue
                compiles += 1
            chosen.append(name)
        return chosen

    def say_waits(self) -> None:
        """A waiting task is named once every input it lacks is being made (not while one has
        not started), and when it waits for the compile slot."""
        compiling = sorted(n for n in self.running.values() if self.tasks[n].resource == "cpu")
        for name in self.pending:
            task = self.tasks[name]
            missing = [d for d in task.deps if d not in self.results]
            if missing and not any(d in self.pending for d in missing):
                self._say_waiting(name, ", ".join(missing))
            elif not missing and task.resource == "cpu":
                self._say_waiting(name, f"{', '.join(compiling)} (one compile at a time)")

    def _say_waiting(self, name: str, on: str) -> None:
        if self.said_waiting.get(name) != on:
            self.said_waiting[name] = on
            self.progress.note(f"{name}: waiting for: {on}")

    def start(self, pool: ThreadPoolExecutor, name: str) -> None:
        task = self.tasks[name]
        self.pending.remove(name)
        beside = sorted(self.running.values())
        suffix = f" (beside: {', '.join(beside)})" if beside else ""
        self.progress.note(f"{name} [{task.resource}] started{suffix}")
        inputs = {d: self.results[d] for d in task.deps}
        self.started[name] = time.monotonic()
        self.running[pool.submit(task.run, inputs)] = name

    def finish(self, future: Future[Any]) -> BaseException | None:
        name = self.running.pop(future)
        self.times[name] = time.monotonic() - self.started[name]
        error = future.exception()
        if error is not None:
            self.progress.note(f"{name} FAILED after {fmt_duration(self.times[name])}")
            return error
        self.results[name] = future.result()
        self.progress.note(f"{name} finished ({fmt_duration(self.times[name])})")
        return None


def run(
    tasks: Iterable[Task], progress: Progress, slots: int | None = None
) -> tuple[dict[str, Any], GraphTimes]:
    """Run every task once its dependencies are done; return the results by name and the
    times. `slots`: compiles at once (default: `cpu_slots()`)."""
    state = _Run(check(tasks), progress, slots or cpu_slots())
    began = time.monotonic()
    first_error: BaseException | None = None
    with ThreadPoolExecutor(max_workers=max(1, len(state.tasks))) as pool:
        while state.pending or state.running:
            if first_error is None:
                for name in state.startable():
                    state.start(pool, name)
                state.say_waits()
            if not state.running:
                break
            finished, _ = wait(list(state.running), return_when=FIRST_COMPLETED)
            for future in finished:
                error = state.finish(future)
                first_error = first_error or error
    times = GraphTimes(state.times, time.monotonic() - began)
    if first_error is not None:
        never = ", ".join(state.pending)
        if never:
            progress.note(f"not started after the failure: {never}")
        raise first_error
    if len(state.times) > 1:
        progress.note(
            f"build graph: {len(state.times)} tasks, {fmt_duration(times.sum_s)} of task time "
            f"in {fmt_duration(times.wall_s)} wall"
        )
    return state.results, times
