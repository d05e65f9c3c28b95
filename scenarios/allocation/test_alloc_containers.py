"""DRA-ALLOC-012: each container of a pod sees only the device of the request it names."""

from __future__ import annotations

import pytest

from conformance.kube.builders import container
from conformance.scenario_api.workloads import Workloads


@pytest.mark.dra_requirement("DRA-ALLOC-012")
@pytest.mark.dra_devices("default", count=2)
def test_each_container_sees_only_its_requests_device(workload: Workloads) -> None:
    workload.claim(
        "claim", [workload.device_request(name="first"), workload.device_request(name="second")]
    )
    workload.run(
        "pod",
        ["claim"],
        containers=[
            container("one", claims=[("claim", "first")]),
            container("two", claims=[("claim", "second")]),
        ],
        abort_on_prepare_failure=True,
    )
    results = workload.results("claim")
    by_request = {r.request: r for r in results}
    assert sorted(by_request) == ["first", "second"] and len(results) == 2, results
    assert by_request["first"].device_id != by_request["second"].device_id, results
    workload.assert_sees_exactly("pod", [by_request["first"]], container="one")
    workload.assert_sees_exactly("pod", [by_request["second"]], container="two")
