"""The pool a restarted fake driver leaves behind, and misbehaviour `stale-slice-after-restart`
(the restart writes the pool under new slice names at a higher generation and leaves one old
slice at the lower one), judged with DRA-LIFE-004's own checks."""

from __future__ import annotations

import json

import pytest

from conformance.model.pool_history import PoolHistory, device_names, settled_problems

STALE = ["stale-slice-after-restart"]


def _generations(harness) -> dict[str, int]:
    return {n: o["spec"]["pool"]["generation"] for n, o in harness.slices.objects.items()}


def test_a_restart_keeps_an_identical_pool_untouched(harness):
    first = harness.start()
    published = _generations(harness)
    writes = harness.slices.writes
    harness.stop(first)
    restarted = harness.start()
    restarted.republish()  # its resync
    assert _generations(harness) == published
    assert harness.slices.writes == writes


@pytest.mark.parametrize(("misbehaviours", "stale"), [([], False), (STALE, True)])
def test_a_restarted_pool_settles_without_stale_slices(harness, misbehaviours, stale):
    controls = {"_all": json.dumps({"misbehaviours": misbehaviours})}
    first = harness.start(controls=controls)  # no slices at its start: no misbehaviour
    before = list(harness.slices.objects.values())
    names, history = device_names(before), PoolHistory()
    history.observe(before)
    harness.stop(first)
    restarted = harness.start(controls=controls)
    restarted.republish()  # its resync leaves the pool as it is
    after = list(harness.slices.objects.values())
    history.observe(after)
    problems = settled_problems(after, names)
    assert history.regressions == []  # the broken one goes forward too
    assert bool(problems["stale"]) is stale, problems
    assert not problems["pools"] and not problems["devices"] and not problems["duplicates"]
    if stale:
        [left] = [
            n for n in after if n["metadata"]["name"] in {s["metadata"]["name"] for s in before}
        ]
        assert left["spec"]["pool"]["generation"] < max(_generations(harness).values())


def test_switched_off_the_restarted_plugin_cleans_its_pool_up(harness):
    controls = {"_all": json.dumps({"misbehaviours": STALE})}
    harness.stop(harness.start(controls=controls))
    restarted = harness.start(controls=controls)
    assert settled_problems(list(harness.slices.objects.values()), set())["stale"]
    restarted.apply_controls({}, "2")
    after = list(harness.slices.objects.values())
    assert not settled_problems(after, device_names(after))["stale"]
    assert len(after) == after[0]["spec"]["pool"]["resourceSliceCount"]


def test_switched_on_while_running_it_waits_for_the_next_restart(harness):
    harness.stop(harness.start())
    running = harness.start()  # found slices at its start, the misbehaviour off
    running.apply_controls({"_all": json.dumps({"misbehaviours": STALE})}, "2")
    assert not settled_problems(list(harness.slices.objects.values()), set())["stale"]
