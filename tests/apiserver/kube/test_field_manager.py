"""Field managers (conformance.kube.field_manager): every write of the harness is
`dra-conformance`'s, checked in what the real test API server records."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from kube_apiserver.workloads import plugin_daemonset

from conformance.kube import apply, objects, rollout
from conformance.kube.client import K8sClients
from conformance.kube.field_manager import FIELD_MANAGER
from conformance.suite_root import SUITE_ROOT


def test_every_harness_write_is_owned_by_dra_conformance(
    apiserver_k8s: K8sClients, api_namespace: str
) -> None:
    k8s = apiserver_k8s
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": api_namespace},
        "data": {"a": "1"},
    }
    objects.create(k8s, config_map)
    # A typed call that passes no field manager is named after the client's User-Agent.
    k8s.core.patch_namespaced_config_map("cm", api_namespace, {"data": {"b": "2"}})
    k8s.core.create_namespaced_config_map(
        api_namespace, {"metadata": {"name": "typed"}, "data": {"c": "3"}}
    )
    apply.apply_all(k8s.api_client, [plugin_daemonset(api_namespace, "example.com/plugin:v1")])
    template = rollout.read_daemonset(k8s, api_namespace, "plugin")["spec"]["template"]
    rollout.set_template(
        k8s, api_namespace, "plugin", rollout.changed_template(template, image="x:2")
    )

    managers = {
        (name, entry.manager, entry.operation)
        for name, read in (
            ("cm", k8s.core.read_namespaced_config_map("cm", api_namespace)),
            ("typed", k8s.core.read_namespaced_config_map("typed", api_namespace)),
            ("plugin", k8s.apps.read_namespaced_daemon_set("plugin", api_namespace)),
        )
        for entry in read.metadata.managed_fields
    }
    assert managers == {
        ("cm", FIELD_MANAGER, "Update"),
        ("typed", FIELD_MANAGER, "Update"),
        ("plugin", FIELD_MANAGER, "Apply"),
        ("plugin", FIELD_MANAGER, "Update"),
    }


WRITE_CALL = re.compile(r"^(create|patch|replace)_\w+$|^server_side_apply$")
# Calls of those names that are not API writes: a socket, the scenarios' own helper.
NOT_API_WRITES = frozenset({"create_connection", "create_claim_deployment"})


def _writes_without_field_manager(root: Path) -> list[str]:
    """Typed-client writes (create_x, patch_x, replace_x, server_side_apply) in `root` that pass
    no field_manager; a dry run persists nothing and is left out."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            keywords = {k.arg for k in node.keywords}
            if node.func.attr in NOT_API_WRITES:
                continue
            if WRITE_CALL.match(node.func.attr) and not keywords & {"field_manager", "dry_run"}:
                found.append(f"{path.relative_to(SUITE_ROOT)}:{node.lineno} {node.func.attr}")
    return found


def test_every_typed_write_in_the_harness_and_scenarios_names_the_field_manager() -> None:
    missing = [
        w
        for d in ("conformance", "scenarios")
        for w in _writes_without_field_manager(SUITE_ROOT / d)
    ]
    assert not missing, f"pass field_manager=FIELD_MANAGER to: {missing}"
