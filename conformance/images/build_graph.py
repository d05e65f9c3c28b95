"""Run named build tasks as a dependency graph, in threads: network-bound work (`io`: module
downloads, debootstrap) starts as soon as its inputs are ready, beside compiles (`cpu`), which
run one at a time on a small machine so two `go build`s never thrash its cores. The first task
to fail stops new starts; the running ones are awaited (each writes its cache entry atomically
or under its lock), then that task's own error is raised."""

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
    """Compiles at once: a compile uses every core, so one per two cores, at least one."""
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
    """One execution: which tasks are done, running and waiting, and what was said of them.
    A task is announced once it has run `announce_after` seconds, so a warm cache's no-op
    tasks say nothing."""

    def __init__(
        self, tasks: dict[str, Task], progress: Progress, slots: int, announce_after: float
    ) -> None:
        self.tasks = tasks
        self.progress = progress
        self.slots = slots
        self.announce_after = announce_after
        self.results: dict[str, Any] = {}
        self.running: dict[Future[Any], str] = {}
        self.pending = list(tasks)  # in the order given: the caller's priority
        self.started: dict[str, float] = {}
        self.announced: set[str] = set()
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

    def start(self, pool: ThreadPoolExecutor, name: str) -> None:
        self.pending.remove(name)
        inputs = {d: self.results[d] for d in self.tasks[name].deps}
        self.started[name] = time.monotonic()
        self.running[pool.submit(self.tasks[name].run, inputs)] = name

    def next_due(self) -> float | None:
        """Seconds until the next running task is to be announced; None: all are."""
        due = [
            self.started[n] + self.announce_after - time.monotonic()
            for n in self.running.values()
            if n not in self.announced
        ]
        return max(0.0, min(due)) if due else None

    def announce_due(self) -> None:
        now = time.monotonic()
        for name in sorted(self.running.values(), key=self.started.__getitem__):
            if name not in self.announced and now - self.started[name] >= self.announce_after:
                self._announce(name)

    def _announce(self, name: str) -> None:
        self.announced.add(name)
        beside = sorted(n for n in self.running.values() if n != name)
        suffix = f" (beside: {', '.join(beside)})" if beside else ""
        self.progress.note(f"{name} [{self.tasks[name].resource}] started{suffix}")

    def say_waits(self) -> None:
        """A waiting task is named once every input it lacks is being made and announced, and
        when it waits for the compile slot."""
        compiling = sorted(n for n in self.running.values() if self.tasks[n].resource == "cpu")
        for name in self.pending:
            task = self.tasks[name]
            missing = [d for d in task.deps if d not in self.results]
            if missing and all(d in self.announced for d in missing):
                self._say_waiting(name, ", ".join(missing))
            elif not missing and task.resource == "cpu" and set(compiling) <= self.announced:
                self._say_waiting(name, f"{', '.join(compiling)} (one compile at a time)")

    def _say_waiting(self, name: str, on: str) -> None:
        if self.said_waiting.get(name) != on:
            self.said_waiting[name] = on
            self.progress.note(f"{name}: waiting for: {on}")

    def finish(self, future: Future[Any]) -> BaseException | None:
        name = self.running.pop(future)
        self.times[name] = time.monotonic() - self.started[name]
        if name not in self.announced and self.times[name] >= self.announce_after:
            self._announce(name)
        error = future.exception()
        if error is not None:
            self.progress.note(f"{name} FAILED after {fmt_duration(self.times[name])}")
            return error
        self.results[name] = future.result()
        if name in self.announced:
            self.progress.note(f"{name} finished ({fmt_duration(self.times[name])})")
        return None


def run(
    tasks: Iterable[Task],
    progress: Progress,
    slots: int | None = None,
    announce_after: float = 1.0,
) -> tuple[dict[str, Any], GraphTimes]:
    """Run every task once its dependencies are done; return the results by name and the
    times. `slots`: compiles at once (default: `cpu_slots()`); a task that ends within
    `announce_after` seconds (one that finds its output there) prints nothing."""
    state = _Run(check(tasks), progress, slots or cpu_slots(), announce_after)
    began = time.monotonic()
    first_error: BaseException | None = None
    with ThreadPoolExecutor(max_workers=max(1, len(state.tasks))) as pool:
        while state.pending or state.running:
            if first_error is None:
                for name in state.startable():
                    state.start(pool, name)
            state.announce_due()
            if first_error is None:
                state.say_waits()
            if not state.running:
                break
            finished, _ = wait(
                list(state.running), timeout=state.next_due(), return_when=FIRST_COMPLETED
            )
            for error in [state.finish(f) for f in finished]:
                first_error = first_error or error
    times = GraphTimes(state.times, time.monotonic() - began)
    if first_error is not None:
        if state.pending:
            progress.note(f"not started after the failure: {', '.join(state.pending)}")
        raise first_error
    if state.announced:
        progress.note(
            f"build graph: {len(state.times)} tasks, {fmt_duration(times.sum_s)} of task time "
            f"in {fmt_duration(times.wall_s)} wall"
        )
    return state.results, times
