"""The node image's build graph as wired (nothing runs): each Go component is fetched (io)
before it is compiled (cpu), compiles are the only cpu tasks, and the assembly waits for
every other task, so a warm cache's tasks are all there to find their outputs."""

from __future__ import annotations

from conformance.images.build_graph import Task, check
from conformance.images.nodeimage import GO_COMPONENTS, node_image_tasks
from conformance.images.versions import NodeVersions
from conformance.progress import Progress


def _tasks() -> dict[str, Task]:
    v = NodeVersions.for_kubernetes("v1.37.2")
    return check(node_image_tasks(v, "localhost/x:y", Progress(heartbeat_s=None)))


def _ancestors(tasks: dict[str, Task], name: str) -> set[str]:
    seen: set[str] = set()
    todo = list(tasks[name].deps)
    while todo:
        dep = todo.pop()
        if dep not in seen:
            seen.add(dep)
            todo.extend(tasks[dep].deps)
    return seen


def test_each_component_is_fetched_then_compiled_and_only_compiles_hold_the_cpu() -> None:
    tasks = _tasks()
    for name in GO_COMPONENTS:
        assert tasks[f"fetch {name}"].resource == "io"
        assert tasks[f"compile {name}"].resource == "cpu"
        assert tasks[f"compile {name}"].deps == (f"fetch {name}",)
    cpu = {n for n, t in tasks.items() if t.resource == "cpu"}
    assert cpu == {f"compile {name}" for name in GO_COMPONENTS}


def test_the_rootfs_waits_for_nothing_and_the_assembly_for_everything() -> None:
    tasks = _tasks()
    assert tasks["node rootfs"].deps == ()
    assert _ancestors(tasks, "node image") == set(tasks) - {"node image"}
    assert "node rootfs" not in _ancestors(tasks, "compile kubernetes")
