"""Parsing of the control ConfigMap into a node's effective controls."""

from __future__ import annotations

import json

from fakedriver.controls import ALL_NODES_KEY, FailPrepare, FaultState, Taint, parse_controls


def test_node_overrides_all_field_by_field():
    data = {
        ALL_NODES_KEY: json.dumps(
            {
                "prepareDelaySeconds": 1,
                "misbehaviours": {"noop-unprepare": True, "wrong-attribute": True},
                "devices": {"a": {"health": "Unhealthy"}, "b": {"withdrawn": True}},
            }
        ),
        "n1": json.dumps(
            {
                "misbehaviours": {"wrong-attribute": False},
                "devices": {"a": {"healthMessage": "hot"}},
                "failPrepare": {"id": "x", "count": 3},
            }
        ),
    }
    n1 = parse_controls(data, "n1")
    assert n1.prepare_delay_seconds == 1.0
    assert n1.misbehaviours == {"noop-unprepare"}
    assert (n1.device("a").health, n1.device("a").health_message) == ("Unhealthy", "hot")
    assert n1.device("b").withdrawn
    assert n1.fail_prepare == FailPrepare("x", 3)
    n2 = parse_controls(data, "n2")
    assert n2.misbehaviours == {"noop-unprepare", "wrong-attribute"}
    assert n2.fail_prepare is None
    assert n1.errors == n2.errors == ()


def test_errors_are_reported_not_fatal():
    data = {
        "n1": json.dumps(
            {
                "misbehaviours": {"made-up": True},
                "prepareDelaySeconds": -1,
                "devices": {
                    "a": {"health": "Sick", "taints": [{"key": "k", "effect": "PreferNoSchedule"}]},
                    "b": {"failPrepare": {"count": 1}},
                },
            }
        ),
        ALL_NODES_KEY: "not: [valid",
    }
    controls = parse_controls(data, "n1")
    text = "\n".join(controls.errors)
    for fragment in ("made-up", "prepareDelaySeconds", "health", "effect", "failPrepare", "_all"):
        assert fragment in text
    assert controls.device("a").taints == ()


def test_to_dict_round_trip():
    raw = {
        "devices": {
            "a": {"taints": [{"key": "k", "value": "v", "effect": "NoExecute"}], "withdrawn": True}
        },
        "failPrepare": {"id": "i", "always": True},
        "prepareDelaySeconds": 0.5,
        "misbehaviours": ["no-health-reports"],
    }
    controls = parse_controls({"n": json.dumps(raw)}, "n")
    assert controls.device("a").taints == (Taint("k", "v", "NoExecute"),)
    assert controls.to_dict() == {
        "devices": {
            "a": {"withdrawn": True, "taints": [{"key": "k", "value": "v", "effect": "NoExecute"}]}
        },
        "failPrepare": {"id": "i", "always": True},
        "prepareDelaySeconds": 0.5,
        "misbehaviours": ["no-health-reports"],
    }


def test_fault_state_notifies_listeners_and_tracks_budgets(tmp_path):
    state = FaultState(counters_file=tmp_path / "counters.json")
    seen = []
    state.add_listener(seen.append)
    controls = parse_controls(
        {"n": json.dumps({"devices": {"d": {"failPrepare": {"id": "q", "count": 1}}}})}, "n"
    )
    state.update(controls, "5")
    assert seen == [controls] and state.resource_version == "5"
    assert state.take_prepare_failure(["other"]) is None
    assert state.take_prepare_failure(["d"]) == "injected prepare failure (device d, 1 of 1)"
    assert state.take_prepare_failure(["d"]) is None
    assert json.loads((tmp_path / "counters.json").read_text()) == {"q": 1}
    assert FaultState(counters_file=tmp_path / "counters.json")._consumed == {"q": 1}
