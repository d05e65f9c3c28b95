"""The profile's opaqueConfig: validation naming the field, per-test tokens, and the check of
what the container shows."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.kube.builders import workload_command
from conformance.model.opaque_config import (
    OPAQUE_BEGIN,
    OPAQUE_END,
    expectation_problems,
    last_opaque_block,
    shown_text,
)
from conformance.model.profile import SUITE_ROOT, ProfileError
from conformance.model.profile_parse import load_profile

BASE: dict[str, Any] = {
    "apiVersion": "dra-conformance.io/v1alpha1",
    "kind": "DriverProfile",
    "driver": "gpu.example.com",
    "deviceClasses": {"default": "gpu.example.com"},
    "install": {"method": "preinstalled"},
    "verification": {"method": "env", "nameRegex": "^GPU_", "value": "device"},
    "capabilities": ["opaque-config"],
    "opaqueConfig": {
        "class": {"apiVersion": "gpu.example.com/v1", "kind": "GpuConfig", "mode": "a-${token}"},
        "claim": {"apiVersion": "gpu.example.com/v1", "kind": "GpuConfig", "mode": "b-${token}"},
        "expect": {"method": "env", "shows": ["^GPU_MODE=b-${token}$"], "hides": ["a-${token}"]},
    },
}


def load(tmp_path: Path, data: dict[str, Any]):  # noqa: ANN201
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(data))
    return load_profile(tmp_path / "p.yaml")


def with_opaque(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    for key, value in changes.items():
        if value is None:
            del data["opaqueConfig"][key]
        else:
            data["opaqueConfig"][key] = value
    return data


def test_a_typed_config_with_tokens(tmp_path: Path) -> None:
    opaque = load(tmp_path, BASE).opaque_config
    assert opaque is not None
    assert opaque.class_parameters("t1") == {
        "apiVersion": "gpu.example.com/v1",
        "kind": "GpuConfig",
        "mode": "a-t1",
    }
    assert opaque.claim_parameters("t1")["mode"] == "b-t1"
    env = {"GPU_MODE": "b-t1", "OTHER": "x"}
    assert expectation_problems(opaque, "t1", shown_text("env", env, None) or "") == []
    stale = {"GPU_MODE": "b-t0", "GPU_CLASS": "a-t1"}
    assert expectation_problems(opaque, "t1", shown_text("env", stale, None) or "") == [
        "the container's environment shows nothing matching '^GPU_MODE=b-t1$'",
        "the container's environment shows 'a-t1', which matches hides 'a-t1'",
    ]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"claim": None},
            "opaqueConfig.claim: required field is missing (expected the driver's opaque "
            "parameters as a non-empty object, e.g. {apiVersion: ..., kind: ...})",
        ),
        (
            {"class": "mode=a"},
            "opaqueConfig.class: expected the driver's opaque parameters as a non-empty "
            'object, e.g. {apiVersion: ..., kind: ...}, got "mode=a"',
        ),
        (
            {"expect": {"method": "file", "shows": ["x"]}},
            "opaqueConfig.expect.path: required field is missing (expected an absolute path "
            "inside the container)",
        ),
        (
            {"expect": {"method": "env", "shows": ["("]}},
            "opaqueConfig.expect.shows[0]: not a valid regular expression: "
            "missing ), unterminated subpattern at position 0",
        ),
        (
            {"expect": {"method": "env", "shows": []}},
            "opaqueConfig.expect.shows: give at least one regular expression the container's "
            "output must match",
        ),
        (
            {"expect": {"method": "envs", "shows": ["x"]}},
            'opaqueConfig.expect.method: expected one of env, file, command, got "envs" '
            "(did you mean 'env'?)",
        ),
        (
            {"expect": {"method": "env", "shows": ["x"], "command": ["cat"]}},
            "opaqueConfig.expect.command: not used by method env; remove it",
        ),
    ],
)
def test_bad_opaque_config_names_the_field(
    tmp_path: Path, changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(ProfileError) as err:
        load(tmp_path, with_opaque(**changes))
    assert message in str(err.value)


def test_the_capability_needs_the_block(tmp_path: Path) -> None:
    data = copy.deepcopy(BASE)
    del data["opaqueConfig"]
    with pytest.raises(ProfileError, match="opaqueConfig: required when capabilities lists"):
        load(tmp_path, data)


def test_file_and_command_expectations_read_the_opaque_block() -> None:
    expect = load_profile(SUITE_ROOT / "docs/examples/profile-example-gpu.yaml").opaque_config
    assert expect is not None and expect.expect.method == "file"
    script = workload_command(None, expect.expect)[2]
    assert script.index(OPAQUE_BEGIN) < script.index("env | sort")  # complete before the env
    assert "cat /etc/gpu/sharing.conf 2>&1" in script
    log = f"{OPAQUE_BEGIN}\nstrategy=TimeSlicing\ninterval=Default\n{OPAQUE_END}\n"
    log += f"{OPAQUE_BEGIN}\nstrategy=TimeSlicing\ninterval=Long\n{OPAQUE_END}\n"  # restarted
    block = last_opaque_block(log)
    assert block == "strategy=TimeSlicing\ninterval=Long"
    assert expectation_problems(expect, "t", block) == []
    assert expectation_problems(expect, "t", "interval=Default") == [
        "/etc/gpu/sharing.conf shows nothing matching '^strategy=TimeSlicing$'",
        "/etc/gpu/sharing.conf shows nothing matching '^interval=Long$'",
        "/etc/gpu/sharing.conf shows 'interval=Default', which matches hides '^interval=Default$'",
    ]
    assert "OPAQUE" not in workload_command(None, None)[2]


def test_the_fake_driver_profile_describes_its_env_contract() -> None:
    opaque = load_profile(SUITE_ROOT / "drivers/fake/profile.yaml").opaque_config
    assert opaque is not None
    claim, klass = opaque.claim_parameters("ab12"), opaque.class_parameters("ab12")
    env = {
        "DRA_DEVICE_FA80_0_CONFIG_SHARED": claim["shared"],
        "DRA_DEVICE_FA80_0_CONFIG_CLASSONLY": klass["classonly"],
    }
    assert expectation_problems(opaque, "ab12", shown_text("env", env, None) or "") == []
    env["DRA_DEVICE_FA80_0_CONFIG_SHARED"] = klass["shared"]  # the class value won: wrong
    assert len(expectation_problems(opaque, "ab12", shown_text("env", env, None) or "")) == 2
