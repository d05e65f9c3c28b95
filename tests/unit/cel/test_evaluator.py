"""The selector evaluator is the Kubernetes CEL package: these run the real helper."""

from __future__ import annotations

import time

import pytest

from conformance.cel import CelEvaluator, CompileProblem, MatchResult

D = "gpu.acme.com"


def _device(name: str, **attributes: object) -> dict:
    typed = {}
    for key, value in attributes.items():
        if isinstance(value, bool):
            typed[key] = {"bool": value}
        elif isinstance(value, int):
            typed[key] = {"int": value}
        elif isinstance(value, str) and value.startswith("v:"):
            typed[key] = {"version": value[2:]}
        else:
            typed[key] = {"string": value}
    return {"name": name, "attributes": typed, "capacity": {"memory": {"value": "40Gi"}}}


H100 = (D, _device("g0", productName="H100-SXM", driverVersion="v:550.54.1", mig=True, cores=8))
A10 = (D, _device("g1", productName="A10", driverVersion="v:535.0.0", cores=4))


def test_compile_reports_the_api_server_wording_with_position(cel: CelEvaluator) -> None:
    ok, bad, not_bool = cel.compile(
        [
            f'device.attributes["{D}"].productName.startsWith("H100")',
            'device.attributes["x"].model === "a"',
            'device.driver + "x"',
        ]
    )
    assert ok is None
    assert isinstance(bad, CompileProblem)
    assert bad.message.startswith("compilation failed: ERROR: <input>:1:32: Syntax error")
    assert (bad.line, bad.column) == (1, 32)
    assert not_bool is not None and "must evaluate to bool" in not_bool.message


def test_compile_limits_length_as_the_api_server_does(cel: CelEvaluator) -> None:
    long = " || ".join(['device.driver == "a"'] * 600)
    (problem,) = cel.compile([long])
    assert problem is not None and problem.message.startswith("Too long: may not be more than")
    assert problem.line is None


@pytest.mark.parametrize(
    ("expression", "h100", "a10"),
    [
        (f'device.attributes["{D}"].productName.startsWith("H100")', True, False),
        (f'device.capacity["{D}"].memory.compareTo(quantity("40Gi")) >= 0', True, True),
        (f'device.capacity["{D}"].memory.compareTo(quantity("41Gi")) >= 0', False, False),
        (f'device.attributes["{D}"].driverVersion.isGreaterThan(semver("540.0.0"))', True, False),
        (f'"mig" in device.attributes["{D}"]', True, False),
        (f'device.attributes["{D}"].cores > 4 || device.driver == "x"', True, False),
        (f'device.attributes["{D}"].productName.lowerAscii().matches("^a[0-9]+$")', False, True),
        ('device.driver == "gpu.acme.com" && !device.allowMultipleAllocations', True, True),
    ],
)
def test_match_as_the_scheduler_does(
    cel: CelEvaluator, expression: str, h100: bool, a10: bool
) -> None:
    (row,) = cel.match([expression], [H100, A10])
    assert row == [MatchResult(h100), MatchResult(a10)]


def test_a_missing_attribute_is_an_error_that_does_not_match(cel: CelEvaluator) -> None:
    (row,) = cel.match([f'device.attributes["{D}"].mig'], [H100, A10])
    assert row[0] == MatchResult(True)
    assert row[1].matches is False
    assert row[1].error is not None and "no such key: mig" in row[1].error


def test_an_expression_that_does_not_compile_matches_nothing(cel: CelEvaluator) -> None:
    (row,) = cel.match(["device.driver ==="], [H100])
    assert row[0].matches is False and "compile error" in (row[0].error or "")


def test_unqualified_names_resolve_in_the_driver_domain(cel: CelEvaluator) -> None:
    other = ("other.io", _device("o0", productName="H100"))
    qualified = (D, {"name": "q", "attributes": {f"{D}/productName": {"string": "H100"}}})
    (row,) = cel.match(
        [f'device.attributes["{D}"].productName == "H100"'], [H100, other, qualified]
    )
    assert [r.matches for r in row] == [False, False, True]  # H100-SXM; other's domain; exact
    (row,) = cel.match(['device.attributes["other.io"].productName == "H100"'], [other])
    assert row == [MatchResult(True)]


def test_answers_are_cached_one_process_per_new_batch(cel: CelEvaluator) -> None:
    expressions = [f'device.attributes["{D}"].cores >= {n}' for n in range(50)]
    devices = [(D, _device(f"c{i}", cores=i)) for i in range(64)]
    spawns = cel.spawns
    start = time.monotonic()
    rows = cel.match(expressions, devices)
    first = time.monotonic() - start
    assert cel.spawns == spawns + 1
    assert [sum(r.matches for r in row) for row in rows] == [64 - n for n in range(50)]
    assert cel.match(expressions[:3], devices[:5]) == [row[:5] for row in rows[:3]]
    assert cel.spawns == spawns + 1
    print(f"50 selectors x 64 devices: {first:.3f}s (one helper process)")


def test_without_go_the_error_names_go_and_the_module_proxy(monkeypatch) -> None:
    from conformance import gobuild
    from conformance.cel import build
    from conformance.errors import HostError
    from conformance.progress import Progress

    monkeypatch.setattr(gobuild.shutil, "which", lambda name: None)
    monkeypatch.setattr(gobuild, "is_built", lambda component: False)
    with pytest.raises(HostError) as err:
        build.helper_binary(Progress())
    assert "cannot build the selector evaluator (k8s.io/dynamic-resource-allocation@v0.37.2)" in (
        err.value.problem
    )
    assert "`go`" in err.value.problem and "GOPROXY" in err.value.remedy
    assert "\n" not in err.value.problem


def test_the_build_key_covers_the_helper_source(tmp_path, monkeypatch) -> None:
    from dataclasses import replace

    from conformance.cel import build

    component = build.helper_component()
    changed = tmp_path / "main.go"
    changed.write_text(build.MAIN_SOURCE.read_text() + "\n// changed\n")
    assert replace(component, main_source=changed).key != component.key
