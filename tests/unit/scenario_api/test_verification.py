"""The container's view of its devices, per verification method."""

from __future__ import annotations

import pytest

from conformance.kube.state import AllocationResult, WorkloadOutput
from conformance.model.devices import PublishedDevice, published_devices
from conformance.model.frozen import FrozenMap
from conformance.model.profile import Verification
from conformance.scenario_api.verification import (
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


def test_unqualified_attribute_in_the_slice_or_the_profile() -> None:
    # The slice publishes `uuid` (in the driver's domain); either spelling finds it.
    slice_ = {
        "metadata": {"name": "s"},
        "spec": {
            "driver": D,
            "nodeName": "w1",
            "pool": {"name": "w1", "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {"name": "gpu-0", "attributes": {"uuid": {"string": "GPU-a"}}},
                {"name": "gpu-1", "attributes": {f"{D}/uuid": {"string": "GPU-b"}}},
            ],
        },
    }
    devices = {d.id: d for d in published_devices([slice_], D)}
    for value in ("attribute:uuid", f"attribute:{D}/uuid"):
        v = Verification("env", value, ",", "^NVIDIA_VISIBLE_DEVICES$")
        assert expected_identifiers(v, RESULTS, devices) == {"GPU-a", "GPU-b"}


def test_name_regex_is_searched_not_fully_matched() -> None:
    out = WorkloadOutput({"MY_GPU_IDS": "gpu-0", "GPU": "gpu-1"})
    assert observed_identifiers(Verification("env", "device", None, "GPU"), out) == {
        "gpu-0",
        "gpu-1",
    }
    assert observed_identifiers(Verification("env", "device", None, "^GPU$"), out) == {"gpu-1"}
