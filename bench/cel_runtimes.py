"""docs/cel.md's table: the PyPI CEL runtimes against the Go helper on the differential corpus.

Never a project dependency; run in a scratch virtualenv outside the repository:

    .venv/bin/python bench/cel_runtimes.py reference /tmp/celref.json   # the helper's verdicts
    python3 -m venv /tmp/celcmp
    /tmp/celcmp/bin/pip install cel-python common-expression-language cel-expr-python pyyaml
    /tmp/celcmp/bin/python bench/cel_runtimes.py measure /tmp/celref.json
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SPEED = (50, 64)  # selectors x devices


def reference(out: str) -> None:
    """The Go helper's verdicts (checked against the API server and the scheduler by the
    differential tier) and its speed."""
    import yaml

    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    from cel_differential.corpus import CORPUS, load_corpus
    from cel_differential.scheduler import device_ids

    from conformance.cel import CelEvaluator, cel_evaluator

    evaluator = cel_evaluator()
    corpus = load_corpus()
    expressions = [s.expression for s in corpus]
    problems = evaluator.compile(expressions)
    items = yaml.safe_load((CORPUS.parent / "slices/kind-v1.37.2.yaml").read_text())["items"]
    devices = list(device_ids(items).values())
    valid = [e for e, p in zip(expressions, problems, strict=True) if p is None]
    rows = evaluator.match(valid, devices)
    speed_devices = [(d, {**x, "name": f"{x['name']}-{i}"}) for i in range(4) for d, x in devices]
    selectors, speed_devices = valid[: SPEED[0]], speed_devices[: SPEED[1]]
    seconds = []
    for _ in range(5):
        fresh = CelEvaluator(evaluator.binary)  # nothing cached: two helper processes
        begin = time.perf_counter()
        fresh.compile(selectors)
        fresh.match(selectors, speed_devices)
        seconds.append(time.perf_counter() - begin)
    print(f"Go helper {SPEED[0]}x{SPEED[1]}: median {statistics.median(seconds):.3f} s")
    document = {
        "devices": devices,
        "groups": {s.expression: s.group for s in corpus},
        "compile": {e: p is None for e, p in zip(expressions, problems, strict=True)},
        "match": {
            e: [[r.matches, r.error is not None] for r in row]
            for e, row in zip(valid, rows, strict=True)
        },
        "speed": {"selectors": selectors, "devices": speed_devices},
    }
    Path(out).write_text(json.dumps(document))


def _as_map(driver: str, device: dict) -> dict:
    """The device as the DRA environment shows it; quantities as strings (no such type)."""

    def split(name: str) -> tuple[str, str]:
        domain, _, ident = (name if "/" in name else f"{driver}/{name}").rpartition("/")
        return domain, ident

    attributes: dict[str, dict] = {}
    capacity: dict[str, dict] = {}
    for name, typed in (device.get("attributes") or {}).items():
        domain, ident = split(name)
        attributes.setdefault(domain, {})[ident] = next(iter(typed.values()))
    for name, value in (device.get("capacity") or {}).items():
        domain, ident = split(name)
        capacity.setdefault(domain, {})[ident] = str(value["value"])
    return {
        "driver": driver,
        "attributes": attributes,
        "capacity": capacity,
        "allowMultipleAllocations": bool(device.get("allowMultipleAllocations")),
    }


Runtime = tuple[Callable[[str], Any], Callable[[Any, dict], bool]]


def _celpy() -> Runtime:
    import celpy

    env = celpy.Environment()

    def run(program: Any, device: dict) -> bool:
        result = program.evaluate({"device": celpy.json_to_cel(device)})
        if isinstance(result, Exception) or type(result).__name__ != "BoolType":
            raise TypeError(result)
        return bool(result)

    return (lambda e: env.program(env.compile(e))), run


def _rust() -> Runtime:
    import cel

    def run(program: Any, device: dict) -> bool:
        result = program.execute({"device": device})
        if not isinstance(result, bool):
            raise TypeError(result)
        return result

    return cel.compile, run


def _cpp() -> Runtime:
    from cel_expr_python import cel
    from cel_expr_python.ext import ext_strings

    env = cel.NewEnv(variables={"device": cel.Type.DYN}, extensions=[ext_strings.ExtStrings()])

    def run(program: Any, device: dict) -> bool:
        result = program.eval(data={"device": device}).value()
        if not isinstance(result, bool):
            raise TypeError(result)
        return result

    return env.compile, run


RUNTIMES = {"cel-python": _celpy, "common-expression-language": _rust, "cel-expr-python": _cpp}


def _verdict(run: Callable[[Any, dict], bool], program: Any, device: dict) -> tuple[bool, bool]:
    """(matches, erred)"""
    if program is None:
        return False, True
    try:
        return run(program, device), False
    except Exception:
        return False, True


def measure(reference_file: str) -> None:
    ref = json.loads(Path(reference_file).read_text())
    devices = [_as_map(d, x) for d, x in ref["devices"]]
    for name, make in RUNTIMES.items():
        compile_, run = make()
        programs: dict[str, Any] = {}
        for expression in ref["compile"]:
            try:
                programs[expression] = compile_(expression)
            except Exception:
                programs[expression] = None
        compiled = sum((programs[e] is not None) == ok for e, ok in ref["compile"].items())
        pairs = selectors = 0
        groups: Counter[str] = Counter()
        for expression, row in ref["match"].items():
            same = [
                _verdict(run, programs[expression], d) == tuple(want)
                for want, d in zip(row, devices, strict=True)
            ]
            pairs += sum(same)
            selectors += all(same)
            groups[ref["groups"][expression]] += all(same)
        seconds = []
        speed_devices = [_as_map(d, x) for d, x in ref["speed"]["devices"]]
        for _ in range(3):
            begin = time.perf_counter()
            for expression in ref["speed"]["selectors"]:
                program = programs.get(expression)
                if program is None:
                    try:
                        program = compile_(expression)
                    except Exception:
                        continue
                for device in speed_devices:
                    _verdict(run, program, device)
            seconds.append(time.perf_counter() - begin)
        print(
            f"{name}: compile verdicts {compiled}/{len(ref['compile'])}, selectors "
            f"{selectors}/{len(ref['match'])}, pairs {pairs}/{len(ref['match']) * len(devices)}, "
            f"{SPEED[0]}x{SPEED[1]} median {statistics.median(seconds):.3f} s; per group "
            f"{dict(groups)}"
        )


if __name__ == "__main__":
    {"reference": reference, "measure": measure}[sys.argv[1]](sys.argv[2])
