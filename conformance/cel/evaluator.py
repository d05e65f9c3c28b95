"""The Python side of the selector helper: batched requests, answers cached in-process."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from conformance.errors import HostError
from conformance.progress import Progress


@dataclass(frozen=True)
class CompileProblem:
    """Why the API server would reject a selector, in its words (for example
    `compilation failed: ERROR: <input>:1:31: Syntax error: ...`), with the first position
    CEL reported (1-based line and column), when there is one."""

    message: str
    line: int | None
    column: int | None


@dataclass(frozen=True)
class MatchResult:
    matches: bool
    error: str | None = None  # set when evaluation erred (then matches is False)


Device = tuple[str, Mapping]  # (driver, a ResourceSlice v1 spec.devices[] entry)


def _device_key(device: Device) -> str:
    driver, entry = device
    return json.dumps([driver, entry], sort_keys=True, separators=(",", ":"), default=str)


class CelEvaluator:
    """Compiles and matches selectors with the helper binary: one process per call that has
    anything new to evaluate, none when every answer is cached."""

    def __init__(self, binary: Path, *, list_type_attributes: bool = False) -> None:
        self.binary = Path(binary)
        self.features = {"consumableCapacity": True, "listTypeAttributes": list_type_attributes}
        self._compiled: dict[str, CompileProblem | None] = {}
        self._matched: dict[tuple[str, str], MatchResult] = {}
        self._lock = threading.Lock()
        self.spawns = 0  # helper processes started (for measurements and tests)

    def _call(self, request: Mapping) -> dict:
        payload = json.dumps({"features": self.features, **request}, default=str)
        try:
            result = subprocess.run(
                [str(self.binary)], input=payload, capture_output=True, text=True, check=False
            )
        except OSError as exc:
            raise HostError(
                f"cannot run the selector evaluator {self.binary}: {exc}",
                "remove that directory from the cache so it is built again",
            ) from exc
        self.spawns += 1
        if result.returncode != 0:
            raise HostError(
                f"the selector evaluator {self.binary} failed (exit {result.returncode}): "
                f"{result.stderr.strip() or 'no output'}",
                "this is a harness bug; report it with the selector and the device",
            )
        return json.loads(result.stdout)

    def compile(self, expressions: Sequence[str]) -> list[CompileProblem | None]:
        """Per expression: None if the API server accepts it in a new claim or class, else
        the problem as it would report it."""
        with self._lock:
            todo = list(dict.fromkeys(e for e in expressions if e not in self._compiled))
            if todo:
                answers = self._call({"compile": todo})["compile"]
                for expression, answer in zip(todo, answers, strict=True):
                    self._compiled[expression] = (
                        None
                        if answer is None
                        else CompileProblem(
                            answer["message"], answer.get("line"), answer.get("column")
                        )
                    )
            return [self._compiled[e] for e in expressions]

    def match(
        self, expressions: Sequence[str], devices: Sequence[Device]
    ) -> list[list[MatchResult]]:
        """[expression][device]: whether the allocator would find the device selected by the
        expression alone. An expression that does not compile matches nothing (its error
        says why)."""
        keys = [_device_key(d) for d in devices]
        with self._lock:
            todo_exprs: dict[str, None] = {}
            todo_devices: dict[str, Device] = {}
            for expression in expressions:
                for key, device in zip(keys, devices, strict=True):
                    if (expression, key) not in self._matched:
                        todo_exprs[expression] = None
                        todo_devices.setdefault(key, device)
            if todo_exprs:
                batch = list(todo_devices.items())
                rows = self._call(
                    {
                        "match": {
                            "expressions": list(todo_exprs),
                            "devices": [{"driver": d[0], "device": d[1]} for _, d in batch],
                        }
                    }
                )["match"]
                for expression, row in zip(todo_exprs, rows, strict=True):
                    for (key, _), answer in zip(batch, row, strict=True):
                        self._matched[(expression, key)] = MatchResult(
                            bool(answer.get("matches")), answer.get("error") or None
                        )
            return [[self._matched[(e, k)] for k in keys] for e in expressions]


_EVALUATOR: CelEvaluator | None = None
_EVALUATOR_LOCK = threading.Lock()


def cel_evaluator(progress: Progress | None = None) -> CelEvaluator:
    """The process-wide evaluator; builds the helper on first use (cached across runs).
    Raises HostError (one line naming Go and the module proxy) when it cannot be built."""
    global _EVALUATOR
    with _EVALUATOR_LOCK:
        if _EVALUATOR is None:
            from conformance.cel.build import helper_binary

            _EVALUATOR = CelEvaluator(helper_binary(progress or Progress()))
        return _EVALUATOR
