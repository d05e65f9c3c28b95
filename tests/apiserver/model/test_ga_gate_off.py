"""A GA feature gate an operator turned off, as a real API server (v1.37.2) reports it: the
requirements that need it are *not run* ("the cluster has a GA feature gate turned off"), never
not applicable, which a CONFORMANT verdict would accept. DRADeviceTaints went GA in 1.37 and is
not locked until 1.38, so `--feature-gates=DRADeviceTaints=false` is still accepted (with
DRADeviceTaintRules, which depends on it, off as well)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kube_apiserver import control_plane
from kube_apiserver.image import apiserver_ref
from kube_apiserver.server import ApiServer, write_kubeconfig
from kubernetes import config as k8s_config

from conformance.images.versions import NodeVersions
from conformance.kube.client import clients_for
from conformance.model.frozen import FrozenMap
from conformance.model.requirements import (
    Applicability,
    load_catalog,
    not_applicable_reason,
    not_run_reason,
)
from conformance.report.catalog import DEFAULT_CATALOG
from conformance.run.context import read_feature_gates

GATE = "DRADeviceTaints"
DEPENDENT = "DRADeviceTaintRules"


def _gate_turned_off(command: list[str]) -> list[str]:
    flag = next(f for f in command if f.startswith("--feature-gates="))
    off = f"{flag},{GATE}=false,{DEPENDENT}=false"
    return [off if f == flag else f for f in command]


def test_a_ga_gate_turned_off_makes_loss_001_not_run(
    kube_apiserver: ApiServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    command = _gate_turned_off(control_plane.apiserver_command("v1.37.2"))
    monkeypatch.setattr(control_plane, "apiserver_command", lambda version: command)
    image = apiserver_ref(NodeVersions(kubernetes="v1.37.2"))
    with control_plane.control_plane(image, "v1.37.2") as (endpoint, _):
        kubeconfig = write_kubeconfig(
            tmp_path / "kubeconfig", endpoint.url, endpoint.token, endpoint.ca_pem
        )
        k8s = clients_for(k8s_config.new_client_from_config(config_file=str(kubeconfig)))
        gates, error = read_feature_gates(k8s)
    assert error is None and gates is not None
    assert gates[GATE] is False and gates[DEPENDENT] is False  # the server's word (/metrics)
    loss = next(r for r in load_catalog(DEFAULT_CATALOG).requirements if r.id == "DRA-LOSS-001")
    facts = Applicability(
        capabilities=frozenset(loss.capabilities),  # the driver lacks nothing
        version=(1, 37),
        feature_gates=FrozenMap(gates),
    )
    assert not_applicable_reason(loss, facts) is None
    reason, remedy = not_run_reason(loss, facts) or ("", "")
    assert reason.startswith(f"the cluster has a GA feature gate turned off: {GATE} "), reason
    assert f"the cluster has a GA feature gate turned off: {DEPENDENT} " in reason
    assert remedy == f"turn feature gate {GATE} back on; turn feature gate {DEPENDENT} back on"
