"""DRA-ALLOC-013 (admin access to a device in use) and DRA-ALLOC-014 (opaque config from the
class and the claim, claim overriding class).

What the profile promises here (docs/profile.md): with `admin-access` the driver tells an
admin-access container so through an environment variable whose name contains ADMIN_ACCESS
set to "true"; with `opaque-config` the profile's `opaqueConfig` gives the driver's own class
and claim config objects and what the container shows for them.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping

import pytest

from conformance.kube import state
from conformance.kube.builders import Builders, container
from conformance.kube.claim_requests import opaque_config, request
from conformance.kube.client import K8sClients
from conformance.kube.field_manager import FIELD_MANAGER
from conformance.kube.objects import ClusterObjects
from conformance.model.devices import class_expressions
from conformance.model.opaque_config import expectation_problems, last_opaque_block, shown_text
from conformance.scenario_api.kind_check import allocated_device
from conformance.scenario_api.workloads import Workloads, describing_selector, look_alikes

ADMIN_NAMESPACE_LABEL = "resource.kubernetes.io/admin-access"
TRUE_VALUES = ("true", "1", "yes")


def admin_flags(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if "ADMIN_ACCESS" in k.upper()}


@pytest.mark.dra_requirement("DRA-ALLOC-013")
@pytest.mark.dra_devices("default")
def test_admin_access_claim_gets_a_device_in_use(workload: Workloads, k8s: K8sClients) -> None:
    k8s.core.patch_namespace(
        workload.namespace,
        {"metadata": {"labels": {ADMIN_NAMESPACE_LABEL: "true"}}},
        field_manager=FIELD_MANAGER,
    )
    workload.claim("user")
    workload.run("user", ["user"], abort_on_prepare_failure=True)
    (used,) = workload.results("user")
    devices = workload.devices_allocated_against()
    device = allocated_device(used.device_id, devices, workload.profile.driver)
    selector = describing_selector(device)
    assert selector, f"device {device.id} publishes no attributes to select it by"
    # All matching devices of its node: the device in use (and any look-alike) for certain.
    alikes = look_alikes(device, workload.live_devices().values())
    workload.claim(
        "admin",
        [workload.device_request(selectors=[selector], all_devices=True, admin_access=True)],
    )
    workload.run("admin", ["admin"], node=device.node, abort_on_prepare_failure=True)

    results = workload.results("admin")
    assert {r.device_id for r in results} == {device.id, *alikes}, (
        f"admin claim should get the device in use {device.id} (look-alikes {alikes}): {results}"
    )
    assert all(r.admin_access for r in results), f"results without adminAccess: {results}"
    assert workload.results("user") == [used], "the ordinary claim lost its device"
    workload.assert_sees_exactly("admin", results)
    admin_env = admin_flags(workload.output("admin").env)
    user_env = admin_flags(workload.output("user").env)
    assert any(v.lower() in TRUE_VALUES for v in admin_env.values()), (
        f"the admin-access container has no *ADMIN_ACCESS*=true variable: {admin_env}"
    )
    assert not any(v.lower() in TRUE_VALUES for v in user_env.values()), (
        f"the ordinary container is marked as admin access: {user_env}"
    )


@pytest.mark.dra_requirement("DRA-ALLOC-014")
@pytest.mark.dra_devices("default", count=2)
def test_class_and_claim_config_reach_the_container(
    workload: Workloads, k8s: K8sClients, build: Builders, cluster_objects: ClusterObjects
) -> None:
    driver = workload.profile.driver
    opaque = workload.profile.opaque_config
    assert opaque is not None, "the profile lists opaque-config but has no opaqueConfig"
    token = secrets.token_hex(4)
    class_params = opaque.class_parameters(token)
    claim_params = opaque.claim_parameters(token)
    default = k8s.to_dict(k8s.resource.read_device_class(workload.profile.default_class))
    class_name = f"{workload.namespace}-config"
    cluster_objects.create(
        build.device_class(
            class_name,
            selectors=class_expressions(default),
            config=[opaque_config(driver, class_params)],
        )
    )
    # A second request without config: v1.37.2 clears `requests` of a config entry that
    # applies to every request, so only with two requests does the status name "dev".
    workload.claim(
        "claim",
        [request("dev", class_name), workload.device_request(name="plain")],
        config=[opaque_config(driver, claim_params, ["dev"])],
    )
    command = build.workload_command(opaque_expect=opaque.expect)
    workload.run(
        "pod",
        ["claim"],
        containers=[container("main", claims=["claim"], command=command)],
        abort_on_prepare_failure=True,
    )

    claim = workload.read_claim("claim") or {}
    config = claim["status"]["allocation"]["devices"].get("config") or []
    assert [(c.get("source"), c.get("requests"), c.get("opaque")) for c in config] == [
        ("FromClass", ["dev"], {"driver": driver, "parameters": class_params}),
        ("FromClaim", ["dev"], {"driver": driver, "parameters": claim_params}),
    ], f"status.allocation.devices.config: {config}"
    workload.assert_sees_exactly("pod", state.allocation_results(claim))
    env = workload.output("pod").env  # waits for the workload to have printed everything
    block = None
    if opaque.expect.method != "env":
        log = k8s.core.read_namespaced_pod_log("pod", workload.namespace, container="main")
        block = last_opaque_block(log)
    text = shown_text(opaque.expect.method, env, block)
    assert text is not None, (
        f"the workload printed no opaque-config block for method {opaque.expect.method}"
    )
    problems = expectation_problems(opaque, token, text)
    assert not problems, (
        "the container does not show the opaque config as the profile's opaqueConfig.expect "
        f"says (token {token}): " + "; ".join(problems)
    )
