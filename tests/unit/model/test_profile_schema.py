"""docs/profile.schema.json: generated from the profile's typed schema, current, and it accepts
every shipped profile while refusing a bad one (what an editor shows its user)."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from conformance.model.profile import SUITE_ROOT
from conformance.model.profile_jsonschema import profile_schema, render

COMMITTED = SUITE_ROOT / "docs/profile.schema.json"
SHIPPED = sorted(
    [
        *SUITE_ROOT.glob("drivers/*/profile*.yaml"),
        *SUITE_ROOT.glob("docs/examples/**/profile*.yaml"),
    ]
)


@functools.cache
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(COMMITTED.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_committed_schema_is_current() -> None:
    assert COMMITTED.read_text() == render(), (
        "docs/profile.schema.json is stale: dra-conformance profile schema > "
        "docs/profile.schema.json"
    )
    assert profile_schema()["title"] == "DriverProfile"


def test_the_shipped_profiles_are_found() -> None:
    names = {str(p.relative_to(SUITE_ROOT)) for p in SHIPPED}
    assert {"drivers/fake/profile.yaml", "docs/examples/profile-example-gpu.yaml"} <= names
    assert len(names) >= 5, names


@pytest.mark.parametrize("path", SHIPPED, ids=[str(p.relative_to(SUITE_ROOT)) for p in SHIPPED])
def test_every_shipped_profile_validates(path: Path) -> None:
    errors = [e.message for e in validator().iter_errors(yaml.safe_load(path.read_text()))]
    assert errors == []


def _fake_profile() -> dict[str, Any]:
    return yaml.safe_load((SUITE_ROOT / "drivers/fake/profile.yaml").read_text())


def _set(document: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    document = copy.deepcopy(document)
    *parents, last = dotted.split(".")
    target = document
    for part in parents:
        target = target[part]
    target[last] = value
    return document


@pytest.mark.parametrize(
    ("dotted", "value", "says"),
    [
        ("drver", "x.example.com", "'drver' was unexpected"),
        ("verification.method", "environment", "environment"),
        ("install.method", "helm3", "helm3"),
        ("faults.method", "fake-driver-control", "'method' was unexpected"),
        ("readiness.slicesPerNode", -1, "-1 is less than the minimum of 0"),
        ("timeouts", {"podRunning": "soon"}, "soon"),
        ("driver", "GPU.example.com", "does not match"),
        ("cluster", {"featureGates": {"lowerCase": True}}, "not valid under any"),
        ("cluster", {"containerd": {"nri": "yes"}}, "not valid under any"),
        ("cluster", {"extraMounts": [{"hostPath": "/d"}]}, "'containerPath' is a required"),
        ("cluster", {"nodeLabels": {"a": "x" * 64}}, "is too long"),
    ],
)
def test_a_bad_profile_fails_the_schema(dotted: str, value: Any, says: str) -> None:
    errors = [e for e in validator().iter_errors(_set(_fake_profile(), dotted, value))]
    assert errors, f"{dotted}={value!r} passed the schema"
    assert any(says in (e.message + str(list(e.context or []))) for e in errors), [
        e.message for e in errors
    ]


def test_a_cluster_block_passes_the_schema() -> None:
    block = {
        "featureGates": {"DRAListTypeAttributes": True},
        "kubelet": {"cpuManagerPolicy": "none", "evictionHard": {"memory.available": "1Mi"}},
        "containerd": {"nri": True, "cdiSpecDirs": ["/opt/cdi"], "configPatches": ["[a]"]},
        "extraMounts": [{"hostPath": "/dev/null", "containerPath": "/dev/x", "readOnly": True}],
        "nodeLabels": {"example.com/pool": "a"},
    }
    errors = [e.message for e in validator().iter_errors(_set(_fake_profile(), "cluster", block))]
    assert errors == []


def test_the_command_prints_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    from conformance.cli import app

    assert app.main(["profile", "schema"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(COMMITTED.read_text())
