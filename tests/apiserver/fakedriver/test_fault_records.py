"""The fake driver's control channel records which run injected each fault (an annotation of
the control ConfigMap, written in the same update as the fault), and `sweep(run_id)` undoes
exactly that run's faults: against the real test API server."""

from __future__ import annotations

import json
from types import SimpleNamespace

from fakedriver.client.channel import FAULT_RUNS_ANNOTATION, FakeDriverControl
from fakedriver.client.faults import FakeDriverFaults
from fakedriver.controls import parse_controls

from conformance.faults import DeviceRef, FaultContext, FaultKind, FaultsConfig, FaultSpec
from conformance.faults.registry import recorded_fault_runs, sweep_faults
from conformance.kube.client import K8sClients
from conformance.model.frozen import FrozenMap

NODE, OTHER = "node-a", "node-b"


def _controls(k8s: K8sClients, namespace: str) -> dict:
    return k8s.core.read_namespaced_config_map("fake-dra-control", namespace).data or {}


def test_faults_record_their_run_and_sweep_undoes_only_that_run(
    apiserver_k8s: K8sClients, api_namespace: str
) -> None:
    ours = FakeDriverControl(apiserver_k8s.core, namespace=api_namespace, run_id="run-a")
    theirs = FakeDriverControl(apiserver_k8s.core, namespace=api_namespace, run_id="run-b")
    ours.set_unhealthy(NODE, "dev-0", "broken")
    ours.withdraw(NODE, "dev-1")
    ours.add_taint(NODE, "dev-2", "example.com/k", "v", "NoExecute")
    ours.fail_prepare(NODE, count=3)
    ours.delay_prepare(OTHER, 2)
    theirs.withdraw(OTHER, "dev-9")
    assert ours.read_records() == {
        "node-a|dev-0|health": "run-a",
        "node-a|dev-1|withdrawn": "run-a",
        "node-a|dev-2|taint:example.com/k:NoExecute": "run-a",
        "node-a||failPrepare": "run-a",
        "node-b||prepareDelay": "run-a",
        "node-b|dev-9|withdrawn": "run-b",
    }
    assert ours.fault_runs() == {"run-a", "run-b"}

    undone = ours.sweep("run-a")

    assert len(undone) == 5 and "health on node-a/dev-0" in undone
    assert ours.read_records() == {"node-b|dev-9|withdrawn": "run-b"}
    data = _controls(apiserver_k8s, api_namespace)
    assert parse_controls(data, NODE).devices == {}
    assert parse_controls(data, NODE).fail_prepare is None
    other = parse_controls(data, OTHER)
    assert other.prepare_delay_seconds == 0.0
    assert other.device("dev-9").withdrawn  # run-b's fault stays


def test_undoing_a_fault_drops_its_record_and_clear_drops_all(
    apiserver_k8s: K8sClients, api_namespace: str
) -> None:
    control = FakeDriverControl(apiserver_k8s.core, namespace=api_namespace, run_id="run-a")
    control.add_taint(NODE, "dev-0", "k1", effect="NoSchedule")
    control.add_taint(NODE, "dev-0", "k1", effect="NoExecute")
    control.set_unhealthy(NODE, "dev-1")
    control.remove_taint(NODE, "dev-0", "k1")  # every effect of the key
    control.set_healthy(NODE, "dev-1")
    assert control.read_records() == {}
    control.withdraw(NODE, "dev-0")
    control.withdraw(OTHER, "dev-0")
    control.clear(NODE)
    assert control.read_records() == {"node-b|dev-0|withdrawn": "run-a"}
    control.clear()
    cm = apiserver_k8s.core.read_namespaced_config_map("fake-dra-control", api_namespace)
    assert FAULT_RUNS_ANNOTATION not in (cm.metadata.annotations or {})


def test_a_control_without_a_run_records_nothing(
    apiserver_k8s: K8sClients, api_namespace: str
) -> None:
    control = FakeDriverControl(apiserver_k8s.core, namespace=api_namespace)
    control.withdraw(NODE, "dev-0")
    assert control.read_records() == {}
    assert control.sweep("any") == []
    assert parse_controls(_controls(apiserver_k8s, api_namespace), NODE).device("dev-0").withdrawn


def test_the_plugin_records_the_context_run_and_sweeps_it(
    apiserver_k8s: K8sClients, api_namespace: str
) -> None:
    context = FaultContext(
        kind=FaultKind.WITHDRAW,
        driver="fake.dra-conformance.io",
        run_id="run-p",
        timeout=5,
        api_client=apiserver_k8s.api_client,
        options={"namespace": api_namespace},
    )
    injector = FakeDriverFaults(context)
    injector.wait = False  # no driver runs on the test API server to report it applied
    injector.withdraw(DeviceRef("fake.dra-conformance.io", NODE, "dev-0", NODE))
    cm = apiserver_k8s.core.read_namespaced_config_map("fake-dra-control", api_namespace)
    assert json.loads(cm.metadata.annotations[FAULT_RUNS_ANNOTATION]) == {
        "node-a|dev-0|withdrawn": "run-p"
    }
    assert FakeDriverFaults(context).sweep("run-p") == ["withdrawn on node-a/dev-0"]
    assert not parse_controls(_controls(apiserver_k8s, api_namespace), NODE).devices


def test_a_profiles_injectors_count_and_sweep_each_runs_faults(
    apiserver_k8s: K8sClients, api_namespace: str
) -> None:
    """What `dra-conformance cleanup` reaches, naming no driver: the faults of each run through
    the injectors the profile configures (two kinds of one plug-in: one injector, one count)."""
    options = FrozenMap({"namespace": api_namespace})
    entry = "fakedriver.client.faults:FakeDriverFaults"
    specs = {
        kind: FaultSpec(kind, "python", entry_point=entry, options=options)
        for kind in (FaultKind.WITHDRAW, FaultKind.UNHEALTHY)
    }
    profile = SimpleNamespace(
        driver="fake.dra-conformance.io",
        readiness=SimpleNamespace(daemonset_namespace=None, daemonset_name=None),
        faults=FaultsConfig(FrozenMap(specs)),
    )
    ours = FakeDriverControl(apiserver_k8s.core, namespace=api_namespace, run_id="run-a")
    ours.withdraw(NODE, "dev-0")
    ours.set_unhealthy(NODE, "dev-1", "broken")
    FakeDriverControl(apiserver_k8s.core, namespace=api_namespace, run_id="run-b").withdraw(
        OTHER, "dev-9"
    )
    api = apiserver_k8s.api_client
    assert recorded_fault_runs(profile, api) == ({"run-a": 2, "run-b": 1}, [])  # type: ignore[arg-type]

    swept = sweep_faults(profile, "run-a", api)  # type: ignore[arg-type]

    assert (sorted(swept.removed), swept.errors) == (
        [
            "health on node-a/dev-1 (faults.withdraw (method python))",
            "withdrawn on node-a/dev-0 (faults.withdraw (method python))",
        ],
        [],
    )
    assert recorded_fault_runs(profile, api) == ({"run-b": 1}, [])  # type: ignore[arg-type]
