"""The differential tier's slice copies keep what CEL sees and drop what holds an allocation."""

from __future__ import annotations

from cel_differential.scheduler import NodeGroup, _copy_slices

DEVICE = {
    "name": "fx-0",
    "attributes": {"type": {"string": "fabric"}},
    "taints": [{"key": "k", "effect": "NoSchedule"}],
    "bindingConditions": ["Attached"],
    "bindingFailureConditions": ["AttachFailed"],
    "bindsToNode": True,
}


def _slice() -> dict:
    return {
        "spec": {
            "driver": "fake.dra-conformance.io",
            "nodeName": "worker",
            "pool": {"name": "worker", "generation": 3, "resourceSliceCount": 1},
            "devices": [dict(DEVICE)],
        }
    }


def test_a_copy_keeps_the_attributes_and_drops_taints_and_binding_conditions() -> None:
    original = _slice()
    (copied,) = _copy_slices(NodeGroup("cel-node", (original,)), "uid-1")
    (device,) = copied["spec"]["devices"]
    assert device == {"name": "fx-0", "attributes": {"type": {"string": "fabric"}}}
    assert copied["spec"]["nodeName"] == "cel-node"
    assert copied["spec"]["pool"]["name"] == "cel-node/worker"
    assert original["spec"]["devices"][0] == DEVICE  # the live slice is left as it was
