"""DRA-CORE-008's reading of CDI spec files: the listing script run by a real /bin/sh over a
directory tree laid out like a node's, and the reader pod checked by the client's models."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kubernetes.client import V1Pod

from conformance.kube.builders import Builders
from conformance.scenario_api.cdi_specs import (
    END,
    SpecFile,
    listing_script,
    parse_listing,
    reader_pod,
)

UID = "5f0c8b0e-7b7a-4a37-9a51-3b0c2f1e0a01"
OTHER = "5f0c8b0e-7b7a-4a37-9a51-3b0c2f1e0a02"


def _listing(host: Path) -> list[SpecFile] | None:
    script = listing_script(UID, host=str(host))
    out = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, check=True)
    return parse_listing(out.stdout)


def test_spec_files_naming_the_claim_by_file_name_or_contents(tmp_path: Path) -> None:
    run_cdi = tmp_path / "var/run/cdi"
    run_cdi.mkdir(parents=True)
    (run_cdi / f"gpu.example.com-{UID}.json").write_text('{"devices": []}')
    (run_cdi / "k8s.gpu.example.com-gpu_claims.yaml").write_text(f"devices:\n- name: {UID}-gpu0\n")
    (run_cdi / f"gpu.example.com-{OTHER}.json").write_text(OTHER)
    (run_cdi / f".gpu.example.com-{UID}.json.tmp").write_text(UID)  # not a spec: ignored
    (run_cdi / f"notes-{UID}.txt").write_text(UID)  # not a spec: ignored
    # /etc/cdi is missing: nothing there, no error.
    assert _listing(tmp_path) == [
        SpecFile(f"/var/run/cdi/gpu.example.com-{UID}.json", in_name=True, in_contents=False),
        SpecFile("/var/run/cdi/k8s.gpu.example.com-gpu_claims.yaml", False, True),
    ]
    assert str(SpecFile("/etc/cdi/x.json", True, True)) == (
        "/etc/cdi/x.json (UID in its name and contents)"
    )


def test_no_spec_files_is_an_empty_listing_and_no_end_line_is_none(tmp_path: Path) -> None:
    assert _listing(tmp_path) == []
    assert parse_listing(f"NAME /etc/cdi/{UID}.json\n") is None
    assert parse_listing(f"{END}\n") == []


def test_reader_pod_mounts_the_parent_directories_read_only() -> None:
    body = Builders("run-1").pod(
        "cdi", "ns", image="busybox", containers=[{"name": "list", "command": ["true"]}]
    )
    pod = reader_pod(body)
    assert pod["spec"]["volumes"] == [
        {"name": "host-0", "hostPath": {"path": "/etc", "type": "Directory"}},
        {"name": "host-1", "hostPath": {"path": "/var/run", "type": "Directory"}},
    ]
    assert pod["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "host-0", "mountPath": "/host/etc", "readOnly": True},
        {"name": "host-1", "mountPath": "/host/var/run", "readOnly": True},
    ]
    parsed = V1Pod.model_validate(pod)  # the client's strict model: no misspelt field
    assert parsed.model_dump(by_alias=True, exclude_none=True) == pod
