"""What `profile check` can verify of the fault methods without injecting anything: that a
python entry point loads, and that a command's program exists on this host."""

from __future__ import annotations

import shutil
from pathlib import Path

from conformance.faults.interface import FaultError
from conformance.faults.python import load_entry_point
from conformance.model.fault_config import FaultsConfig


def fault_method_problems(faults: FaultsConfig) -> list[str]:
    """One line per problem, naming the field (`faults.withdraw.command[0]: ...`)."""
    problems: list[str] = []
    for kind, spec in faults.specs.items():
        where = f"faults.{kind.value}"
        if spec.method == "python" and spec.entry_point:
            try:
                target = load_entry_point(kind.value, spec.entry_point)
            except FaultError as exc:
                problems.append(str(exc))
                continue
            if not callable(target):
                problems.append(f"{where}.entryPoint {spec.entry_point!r} is not a class")
        elif spec.method == "command":
            for field, argv in (("command", spec.command), ("undo", spec.undo)):
                program = argv[0] if argv else None
                if program and "{" not in program and not _runnable(program):
                    problems.append(
                        f"{where}.{field}[0]: {program!r} is not an executable on this host's "
                        "PATH (the command method runs on the machine that runs the suite)"
                    )
    return problems


def _runnable(program: str) -> bool:
    if "/" in program:
        path = Path(program).expanduser()
        return path.is_file() and bool(path.stat().st_mode & 0o111)
    return shutil.which(program) is not None
