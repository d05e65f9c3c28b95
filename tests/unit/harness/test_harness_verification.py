"""The container's view of its devices, per verification method."""

from __future__ import annotations

import pytest

from conformance.devices import PublishedDevice
from conformance.frozen import FrozenMap
from conformance.kube.state import AllocationResult, WorkloadOutput
from conformance.profile import Verification
from conformance.verification import (
    VerificationError,
    expected_identifiers,
    observed_identifiers,
)

D = "gpu.example.com"
RESULTS = [AllocationResult("r", D, "w1", "gpu-0"), AllocationResult("r", D, "w1", "gpu-1")]
DEVICES = {
    "w1/gpu-0": PublishedDevice("w1", "gpu-0", "w1", FrozenMap({f"{D}/uuid": "GPU-a"})),
    "w1/gpu-1": PublishedDevice("w1", "gpu-1", "w1", FrozenMap({f"{D}/uuid": "GPU-b"})),
}


def test_fake_driver_env() -> None:
    v = Verification("env", "pool/device", None, "^DRA_ASSIGNED_")
    out = WorkloadOutput(
        {
            "DRA_ASSIGNED_GPU_0": "w1/gpu-0",
            "DRA_ASSIGNED_GPU_1": "w1/gpu-1",
            "DRA_DEVICE_GPU_0_MODEL": "x",
            "HOME": "/",
        }
    )
    assert observed_identifiers(v, out) == expected_identifiers(v, RESULTS)


def test_a_foreign_device_is_visible_in_the_difference() -> None:
    v = Verification("env", "pool/device", None, "^DRA_ASSIGNED_")
    out = WorkloadOutput({"DRA_ASSIGNED_GPU_0": "w1/gpu-0", "DRA_ASSIGNED_GPU_9": "w1/gpu-9"})
    assert observed_identifiers(v, out) - expected_identifiers(v, RESULTS) == {"w1/gpu-9"}


def test_uuid_list_in_one_variable() -> None:
    v = Verification("env", f"attribute:{D}/uuid", ",", "^NVIDIA_VISIBLE_DEVICES$")
    out = WorkloadOutput({"NVIDIA_VISIBLE_DEVICES": "GPU-a, GPU-b"})
    assert observed_identifiers(v, out) == {"GPU-a", "GPU-b"}
    assert expected_identifiers(v, RESULTS, DEVICES) == {"GPU-a", "GPU-b"}


def test_attribute_missing_from_slices() -> None:
    v = Verification("env", f"attribute:{D}/serial", None, "^X$")
    with pytest.raises(VerificationError, match="w1/gpu-0 has no attribute gpu.example.com/serial"):
        expected_identifiers(v, RESULTS, DEVICES)


def test_file_and_command() -> None:
    f = Verification("file", "device", None, None, "/run/devices")
    assert observed_identifiers(f, WorkloadOutput({}, file="gpu-0\ngpu-1\n")) == {"gpu-0", "gpu-1"}
    assert expected_identifiers(f, RESULTS) == {"gpu-0", "gpu-1"}
    c = Verification("command", "device", None, None, None, ("ls", "/dev"))
    with pytest.raises(VerificationError, match="printed no command block"):
        observed_identifiers(c, WorkloadOutput({}))
