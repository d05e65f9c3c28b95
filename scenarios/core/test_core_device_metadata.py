"""DRA-CORE-010: a driver with the device-metadata capability (KEP-5304) gives each container
that uses a request of a prepared claim that request's device metadata file, and it matches the
allocation; a container that does not use the request has no such file.

One pod, two claims: a standalone claim with two requests, named in the pod by an entry of
another name (the file goes under the claim's name), and a claim generated from a template (the
file goes under the pod's entry name, and names it as podClaimName). Container `all` uses both
claims; with per-container-requests, container `req1-only` uses request req1 alone.
"""

from __future__ import annotations

import pytest

from conformance.kube.builders import PodClaim, container
from conformance.kube.client import K8sClients
from conformance.kube.podexec import read_container_file
from conformance.model.device_metadata import ExpectedFile, expected_files, file_problems
from conformance.observe.steps import attach_yaml, step
from conformance.scenario_api.workloads import Workloads

STANDALONE, TEMPLATED = "shared", "own"  # the pod's entries


def read_files(
    workload: Workloads, k8s: K8sClients, pod: str, container_name: str, files: list[ExpectedFile]
) -> dict[ExpectedFile, str | None]:
    driver = workload.profile.driver
    with step(f"read {len(files)} device metadata file(s) in container {container_name}"):
        texts = {
            f: read_container_file(k8s, workload.namespace, pod, container_name, f.path(driver))
            for f in files
        }
        attach_yaml(
            f"device metadata files in container {container_name}",
            {f.path(driver): text for f, text in texts.items()},
        )
        return texts


@pytest.mark.dra_requirement("DRA-CORE-010")
@pytest.mark.dra_devices("default", count=3)
def test_each_container_finds_the_metadata_of_its_requests(
    workload: Workloads, k8s: K8sClients
) -> None:
    driver = workload.profile.driver
    workload.claim(
        "claim", [workload.device_request(name="req0"), workload.device_request(name="req1")]
    )
    workload.template("per-pod", [workload.device_request(name="dev")])
    containers = [container("all", claims=[STANDALONE, TEMPLATED])]
    per_request = "per-container-requests" in workload.profile.capabilities
    if per_request:
        containers.append(container("req1-only", claims=[(STANDALONE, "req1")]))
    pod = workload.run(
        "pod",
        [PodClaim(STANDALONE, claim="claim"), PodClaim(TEMPLATED, template="per-pod")],
        containers=containers,
        abort_on_prepare_failure=True,
    )
    names = workload.pod_claim_names(pod)
    files = {
        entry: expected_files(workload.read_claim(names[entry]) or {}, driver)
        for entry in (STANDALONE, TEMPLATED)
    }
    for entry, expected in files.items():
        assert expected, f"ResourceClaim {workload.ref(names[entry])} has no device of {driver}"

    problems = []
    every = files[STANDALONE] + files[TEMPLATED]
    for f, text in read_files(workload, k8s, "pod", "all", every).items():
        where = f"container all of pod {workload.ref('pod')}: {f.path(driver)} ({f})"
        if text is None:
            problems.append(f"{where} is missing")
        else:
            problems += [f"{where}: {p}" for p in file_problems(text, f)]
    if per_request:
        used = [f for f in files[STANDALONE] if f.request == "req1"]
        for f, text in read_files(workload, k8s, "pod", "req1-only", every).items():
            where = f"container req1-only of pod {workload.ref('pod')}: {f.path(driver)} ({f})"
            if f not in used and text is not None:
                problems.append(f"{where} exists, though the container does not use the request")
            elif f in used and text is None:
                problems.append(f"{where} is missing")
            elif f in used and text is not None:
                problems += [f"{where}: {p}" for p in file_problems(text, f)]
    assert not problems, "device metadata does not match the allocation:\n" + "\n".join(problems)
