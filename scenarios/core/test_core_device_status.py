"""DRA-CORE-009: a driver with the device-status capability reports the devices of a prepared
claim in its status.devices, well-formed, with the rights to write them for its own name only,
and the entries are gone once the claim is deallocated.

The claim is standalone (not from a template), so it outlives its pod and its deallocation can
be observed.
"""

from __future__ import annotations

import pytest

from conformance.kube import waits
from conformance.kube.access import violations
from conformance.kube.client import K8sClients
from conformance.model import privileges
from conformance.model.device_status import (
    allocated_keys,
    describe_key,
    driver_entries,
    entry_problems,
    missing_entries,
    status_summary,
)
from conformance.model.privileges import ServiceAccountRef
from conformance.observe.steps import attach_yaml, step
from conformance.scenario_api.workloads import Workloads


def assert_some_account_may_write(
    k8s: K8sClients, accounts: tuple[ServiceAccountRef, ...], driver: str, namespace: str
) -> None:
    """Some account of the driver may send a status write and have its entries accepted."""
    status = privileges.status_subresource_writes(namespace)
    own = privileges.own_device_status_writes(driver, namespace)
    with step(f"review whether {len(accounts)} account(s) of {driver} may write its entries"):
        # violations() lists what the authorizer allows: here the rights the driver needs.
        granted = violations(k8s.api_client, accounts, status + own)
    may_send = {g.account for g in granted if g.check in status}
    may_change = {g.account for g in granted if g.check in own}
    attach_yaml("granted", [str(g) for g in granted])
    assert may_send & may_change, (
        f"no ServiceAccount of {driver} ({', '.join(map(str, accounts))}) may both write a "
        f"claim's status in namespace {namespace} (one of: {', '.join(map(str, status))}; "
        f"allowed to {', '.join(map(str, sorted(may_send))) or 'none'}) and change {driver}'s "
        f"entries in status.devices (one of: {', '.join(map(str, own))}; allowed to "
        f"{', '.join(map(str, sorted(may_change))) or 'none'}), as a SubjectAccessReview decides"
    )


@pytest.mark.dra_requirement("DRA-CORE-009")
@pytest.mark.dra_devices("default")
def test_prepared_claim_reports_its_devices_in_status(
    workload: Workloads, k8s: K8sClients, driver_accounts: tuple[ServiceAccountRef, ...]
) -> None:
    driver = workload.profile.driver
    ref = workload.ref("claim")
    workload.claim("claim")
    workload.run("pod", ["claim"], abort_on_prepare_failure=True)
    allocated = allocated_keys(workload.read_claim("claim") or {}, driver)
    assert allocated, f"ResourceClaim {ref} has no device of {driver} in its allocation"

    # A malformed entry or one for a device the claim was not allocated cannot get better by
    # waiting: stop at once and name it.
    def malformed(claim: dict | None) -> str | None:
        problems = entry_problems(claim or {}, driver)
        return "; ".join(problems) if problems else None

    claim = waits.wait_until(
        lambda: workload.read_claim("claim"),
        lambda c: c is not None and not missing_entries(c, driver),
        describe=f"status.devices of ResourceClaim {ref} (prepared for running pod "
        f"{workload.ref('pod')}) to have an entry of driver {driver} for each allocated device "
        f"({', '.join(describe_key(k) for k in allocated)})",
        timeout=workload.timeout("converge"),
        show=status_summary,
        abort=malformed,
    )
    attach_yaml(f"ResourceClaim {ref} (status.devices written)", claim)
    problems = entry_problems(claim or {}, driver)
    assert not problems, f"ResourceClaim {ref}: " + "; ".join(problems)

    assert_some_account_may_write(k8s, driver_accounts, driver, workload.namespace)

    workload.delete_pod("pod")
    released = workload.wait_deallocated("claim")
    left = driver_entries(released, driver)
    assert not left, (
        f"ResourceClaim {ref} was deallocated but status.devices still has entries of "
        f"{driver}: {left}"
    )
