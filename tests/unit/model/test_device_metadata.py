"""Device metadata files judged against the allocation (DRA-CORE-010)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.model.device_metadata import (
    KNOWN_VERSIONS,
    StreamError,
    decode_stream,
    expected_files,
    file_problems,
)

D = "gpu.example.com"
UID = "4f1d7d3e-0c0b-4a55-9d4e-2b9a7d0e6c11"


def claim(results: list[dict[str, Any]], **annotations: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "c", "namespace": "ns", "uid": UID, "annotations": annotations},
        "status": {"allocation": {"devices": {"results": results}}},
    }


def result(request: str, device: str, driver: str = D) -> dict[str, str]:
    return {"request": request, "driver": driver, "pool": "node-1", "device": device}


TWO = claim([result("a", "gpu-0"), result("b/big", "gpu-1"), result("b/big", "gpu-2")])


def document(request: str = "a", devices: tuple[str, ...] = ("gpu-0",), **over: Any) -> dict:
    body: dict[str, Any] = {
        "kind": "DeviceMetadata",
        "apiVersion": KNOWN_VERSIONS[0],
        "metadata": {"name": "c", "namespace": "ns", "uid": UID, "generation": 1},
        "requests": [
            {
                "name": request,
                "devices": [
                    {
                        "driver": D,
                        "pool": "node-1",
                        "name": name,
                        "attributes": {"model": {"string": "x"}, "cores": {"int": 8}},
                    }
                    for name in devices
                ],
            }
        ],
    }
    return body | over


def stream(*documents: dict) -> str:
    return "\n".join(json.dumps(d, indent=2) for d in documents) + "\n"


def test_one_expected_file_per_base_request_of_the_driver() -> None:
    files = expected_files(
        claim([*TWO["status"]["allocation"]["devices"]["results"], result("c", "x", "other")]), D
    )
    assert [(f.request, sorted(f.result_requests), sorted(f.devices)) for f in files] == [
        ("a", ["a"], [(D, "node-1", "gpu-0")]),
        ("b", ["b/big"], [(D, "node-1", "gpu-1"), (D, "node-1", "gpu-2")]),
    ]
    assert files[0].path(D) == (
        f"/var/run/kubernetes.io/dra-device-attributes/resourceclaims/c/a/{D}-metadata.json"
    )
    assert str(files[1]) == "request b of ResourceClaim ns/c"


def test_a_template_claim_is_under_its_pod_claim_name() -> None:
    (only,) = expected_files(
        claim([result("a", "gpu-0")], **{"resource.kubernetes.io/pod-claim-name": "gpu"}), D
    )
    assert only.pod_claim_name == "gpu"
    assert only.path(D).endswith(f"/resourceclaimtemplates/gpu/a/{D}-metadata.json")


def test_decode_stream_reads_concatenated_documents() -> None:
    assert decode_stream('{"a": 1}{"b": 2}\n  {"c": 3}\n') == [{"a": 1}, {"b": 2}, {"c": 3}]
    assert decode_stream("") == []
    with pytest.raises(StreamError, match="document 2"):
        decode_stream('{"a": 1}\n{"b": ')


def test_a_matching_file_has_no_problems_and_only_the_first_known_version_counts() -> None:
    a, b = expected_files(TWO, D)
    newer = document(devices=("gpu-9",), apiVersion="metadata.resource.k8s.io/v2")
    older = document(devices=("gpu-9",), apiVersion=KNOWN_VERSIONS[1])
    assert file_problems(stream(newer, document(), older), a) == []
    assert file_problems(stream(document("b/big", ("gpu-2", "gpu-1"))), b) == []


def test_a_template_claim_file_must_name_its_pod_claim() -> None:
    (only,) = expected_files(
        claim([result("a", "gpu-0")], **{"resource.kubernetes.io/pod-claim-name": "gpu"}), D
    )
    assert file_problems(stream(document(podClaimName="gpu")), only) == []
    assert file_problems(stream(document()), only) == ["its podClaimName is None, not 'gpu'"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("not json", "it is not a stream of JSON documents"),
        (stream(document(apiVersion="v9")), "no object of a known version"),
        (stream(document(kind="Pod")), "of kind 'Pod', not DeviceMetadata"),
        (
            stream(document(metadata={"name": "d", "namespace": "ns", "uid": UID})),
            "it names claim ns/d",
        ),
        (stream(document(podClaimName="x")), "its podClaimName is 'x', not None"),
        (stream(document("b")), "its request is named 'b', not a"),
        (
            stream(document(devices=("gpu-0", "gpu-1"))),
            f"(not allocated to it: {D} node-1/gpu-1)",
        ),
        (stream(document(devices=())), f"it lists no device, but the request was allocated {D}"),
        (
            stream(document(requests=[document()["requests"][0]] * 2)),
            "it has 2 requests, not exactly one",
        ),
    ],
)
def test_problems_name_what_is_wrong(text: str, problem: str) -> None:
    a, _ = expected_files(TWO, D)
    problems = file_problems(text, a)
    assert any(problem in p for p in problems), problems


def test_malformed_attributes_and_network_data() -> None:
    a, _ = expected_files(TWO, D)
    body = document()
    device = body["requests"][0]["devices"][0]
    device["attributes"] = {"m": {"string": "x", "int": 1}, "n": {"int": True}}
    device["networkData"] = {"ips": ["10.0.0.1"]}
    problems = file_problems(stream(body), a)
    assert len(problems) == 3, problems
    assert "attribute m is" in problems[0] and "not exactly one of int" in problems[0]
    assert "attribute n has a int of True" in problems[1]
    assert "not an address in CIDR form" in problems[2]
