"""Earlier runs' test durations: the shipped prior, the per-driver book, the keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.run import durations
from conformance.run.durations import (
    book_path,
    duration_key,
    load_durations,
    record_durations,
)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DRA_CONFORMANCE_CACHE", str(tmp_path / "cache"))
    prior = tmp_path / "durations.json"
    prior.write_text(json.dumps({"test_a.py::test_a": 10.0, "test_b.py::test_b": 4.0}))
    monkeypatch.setattr(durations, "PRIOR", prior)
    return tmp_path


def test_keys_do_not_depend_on_the_rootdir() -> None:
    assert duration_key("scenarios/core/test_a.py::test_a[x]") == "test_a.py::test_a[x]"
    assert duration_key("/abs/scenarios/core/test_a.py::test_a") == "test_a.py::test_a"


def test_a_drivers_measurements_override_the_prior_and_move_half_way(cache: Path) -> None:
    assert load_durations("gpu.example.com") == {
        "test_a.py::test_a": 10.0,
        "test_b.py::test_b": 4.0,
    }
    record_durations("gpu.example.com", {"test_a.py::test_a": 30.0, "test_c.py::test_c": 2.0})
    assert load_durations("gpu.example.com") == {
        "test_a.py::test_a": 30.0,
        "test_b.py::test_b": 4.0,
        "test_c.py::test_c": 2.0,
    }
    record_durations("gpu.example.com", {"test_a.py::test_a": 10.0})
    assert load_durations("gpu.example.com")["test_a.py::test_a"] == 20.0
    # another driver keeps the prior
    assert load_durations("nic.example.com")["test_a.py::test_a"] == 10.0


def test_a_damaged_book_is_ignored(cache: Path) -> None:
    path = book_path("gpu.example.com")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert load_durations("gpu.example.com")["test_a.py::test_a"] == 10.0
    record_durations("gpu.example.com", {"test_a.py::test_a": 1.0})
    assert json.loads(path.read_text()) == {"test_a.py::test_a": 1.0}


def test_the_shipped_prior_names_existing_scenario_tests() -> None:
    prior = json.loads(durations.PRIOR.read_text())
    root = durations.PRIOR.parent
    files = {p.name: p.read_text() for p in root.rglob("test_*.py")}
    assert len(prior) >= 60
    for key in prior:
        file, _, test = key.partition("::")
        assert file in files and f"def {test}(" in files[file], f"{key}: no such test"
