"""DRA-CORE-008's reading of CDI spec files: the dump script run by a real /bin/sh over a
directory tree laid out like a node's, the choice of the claim's specs by the kubelet's CDI
device ids (as the runtime resolves them) or its UID, and the reader pod checked by the
client's models."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from cdi_specs_checks import dump_script, reader_pod
from kubernetes.client import V1Pod

from conformance.kube.builders import Builders
from conformance.model.cdi_lookup import (
    END,
    NodeCdi,
    SpecFile,
    claim_cdi_ids,
    claim_specs,
    defined_ids,
    parse_dump,
    reader_mounts,
    static_specs,
)

UID = "5f0c8b0e-7b7a-4a37-9a51-3b0c2f1e0a01"
OTHER = "5f0c8b0e-7b7a-4a37-9a51-3b0c2f1e0a02"
KIND = "gpu.example.com/gpu"


def checkpoint(claims: dict[str, list[str]]) -> str:
    """The kubelet's dra_manager_state as v1.37.2 writes it: Data is JSON in a string."""
    states = [
        {
            "ClaimUID": uid,
            "ClaimName": "c",
            "Namespace": "ns",
            "PodUIDs": {"p": {}},
            "DriverState": {
                "gpu.example.com": {
                    "Devices": [
                        {"PoolName": "n1", "DeviceName": "gpu-0", "CDIDeviceIDs": ids or None}
                    ]
                }
            },
        }
        for uid, ids in claims.items()
    ]
    data = {
        "kind": "DRACheckpoint",
        "apiVersion": "checkpoint.dra.kubelet.k8s.io/v1",
        "ClaimInfoStateList": states,
    }
    return json.dumps({"Data": json.dumps(data), "Checksum": 1})


def spec(*names: str, kind: str = KIND) -> str:
    return json.dumps(
        {"cdiVersion": "0.6.0", "kind": kind, "devices": [{"name": n} for n in names]}
    )


def _dump(host: Path, dirs: tuple[str, ...] = ("/etc/cdi", "/var/run/cdi")) -> NodeCdi | None:
    script = dump_script(dirs, "/var/lib/kubelet", host=str(host))
    out = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, check=True)
    return parse_dump(out.stdout)


def test_the_dump_holds_every_spec_file_and_the_checkpoint(tmp_path: Path) -> None:
    run_cdi = tmp_path / "var/run/cdi"
    run_cdi.mkdir(parents=True)
    (run_cdi / f"gpu.example.com-{UID}.json").write_text('{"devices": []}')
    (run_cdi / "by-device-gpu0.yaml").write_text(f"kind: {KIND}\ndevices:\n- name: gpu0\n")
    (run_cdi / f".gpu.example.com-{UID}.json.tmp").write_text(UID)  # not a spec: ignored
    (run_cdi / f"notes-{UID}.txt").write_text(UID)  # not a spec: ignored
    (tmp_path / "opt/cdi").mkdir(parents=True)
    (tmp_path / "opt/cdi/elsewhere.json").write_text(spec("gpu1"))
    kubelet = tmp_path / "var/lib/kubelet"
    kubelet.mkdir(parents=True)
    (kubelet / "dra_manager_state").write_text(checkpoint({UID: [f"{KIND}=gpu0"]}))
    # /etc/cdi is missing: nothing there, no error.
    node = _dump(tmp_path, ("/etc/cdi", "/var/run/cdi", "/opt/cdi"))
    assert node is not None
    assert sorted(node.specs) == [
        "/opt/cdi/elsewhere.json",
        "/var/run/cdi/by-device-gpu0.yaml",
        f"/var/run/cdi/gpu.example.com-{UID}.json",
    ]
    assert defined_ids(node.specs["/var/run/cdi/by-device-gpu0.yaml"]) == {f"{KIND}=gpu0"}
    assert node.checkpoint is not None
    assert claim_cdi_ids(node.checkpoint, UID) == (f"{KIND}=gpu0",)


def test_an_empty_node_and_a_truncated_dump(tmp_path: Path) -> None:
    assert _dump(tmp_path) == NodeCdi({}, None)
    assert parse_dump(f"=== CDI SPEC /etc/cdi/{UID}.json\n") is None
    assert parse_dump(f"{END}\n") == NodeCdi({}, None)


def test_the_checkpoint_lists_the_claims_cdi_device_ids() -> None:
    text = checkpoint({UID: [f"{KIND}=a", f"{KIND}=b"], OTHER: []})
    assert claim_cdi_ids(text, UID) == (f"{KIND}=a", f"{KIND}=b")
    assert claim_cdi_ids(text, OTHER) == ()  # prepared without CDI
    assert claim_cdi_ids(text, "unknown") == ()
    assert claim_cdi_ids("{not json", UID) is None
    assert claim_cdi_ids('{"Data": "{}"}', UID) is None


def test_a_spec_named_by_device_is_the_claims_when_written_for_it() -> None:
    """What the UID alone never finds: a spec named after the device, defining the id the
    kubelet passed for the claim."""
    ids = (f"{KIND}=gpu0",)
    before = NodeCdi({"/etc/cdi/static.json": spec("gpu0", "gpu1", kind="x.com/base")}, None)
    running = NodeCdi(
        {
            **before.specs,
            "/var/run/cdi/gpu0.json": spec("gpu0"),
            "/var/run/cdi/gpu1.json": spec("gpu1"),  # another claim's device
        },
        None,
    )
    assert claim_specs(running, UID, ids, before) == [
        SpecFile("/var/run/cdi/gpu0.json", False, False, frozenset(ids))
    ]
    assert claim_specs(running, UID, (), before) == []  # by the UID alone: nothing
    assert str(claim_specs(running, UID, ids, before)[0]) == (
        f"/var/run/cdi/gpu0.json (defines {KIND}=gpu0)"
    )


def test_a_spec_that_was_there_unchanged_before_is_static_not_the_claims() -> None:
    ids = (f"{KIND}=gpu0",)
    before = NodeCdi({"/etc/cdi/all.json": spec("gpu0", "gpu1")}, None)
    running = NodeCdi({"/etc/cdi/all.json": spec("gpu0", "gpu1")}, None)
    assert claim_specs(running, UID, ids, before) == []
    assert static_specs(running, ids, before) == ["/etc/cdi/all.json"]
    # rewritten for the claim (same name, new contents): the claim's
    rewritten = NodeCdi({"/etc/cdi/all.json": spec("gpu0")}, None)
    assert [s.path for s in claim_specs(rewritten, UID, ids, before)] == ["/etc/cdi/all.json"]


def test_a_spec_naming_the_uid_is_the_claims_whatever_its_ids() -> None:
    running = NodeCdi(
        {
            f"/var/run/cdi/gpu.example.com-{UID}.json": spec("x"),
            "/var/run/cdi/claims.yaml": f"kind: {KIND}\ndevices:\n- name: {UID}-gpu0\n",
            f"/var/run/cdi/gpu.example.com-{OTHER}.json": spec(OTHER),
        },
        None,
    )
    assert claim_specs(running, UID, ()) == [
        SpecFile("/var/run/cdi/claims.yaml", False, True),
        SpecFile(f"/var/run/cdi/gpu.example.com-{UID}.json", True, False),
    ]
    assert str(SpecFile("/etc/cdi/x.json", True, True)) == (
        "/etc/cdi/x.json (UID in its name and contents)"
    )


def test_reader_mounts_nothing_twice() -> None:
    assert reader_mounts(("/etc/cdi", "/var/run/cdi"), "/var/lib/kubelet") == [
        "/etc",
        "/var/lib/kubelet",
        "/var/run",
    ]
    assert reader_mounts(("/var/lib/cdi",), "/var/lib/kubelet") == ["/var/lib"]


def test_reader_pod_mounts_the_parent_directories_read_only() -> None:
    body = Builders("run-1").pod(
        "cdi", "ns", image="busybox", containers=[{"name": "read", "command": ["true"]}]
    )
    pod = reader_pod(body)
    assert pod["spec"]["volumes"] == [
        {"name": "host-0", "hostPath": {"path": "/etc", "type": "Directory"}},
        {"name": "host-1", "hostPath": {"path": "/var/lib/kubelet", "type": "Directory"}},
        {"name": "host-2", "hostPath": {"path": "/var/run", "type": "Directory"}},
    ]
    assert pod["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "host-0", "mountPath": "/host/etc", "readOnly": True},
        {"name": "host-1", "mountPath": "/host/var/lib/kubelet", "readOnly": True},
        {"name": "host-2", "mountPath": "/host/var/run", "readOnly": True},
    ]
    parsed = V1Pod.model_validate(pod)  # the client's strict model: no misspelt field
    assert parsed.model_dump(by_alias=True, exclude_none=True) == pod
