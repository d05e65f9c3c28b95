"""Which CDI spec files on a node are a claim's (DRA-CORE-008), found the way the runtime finds
them: the kubelet hands the runtime the CDI device ids the driver returned from
NodePrepareResources (it keeps them in its DRA checkpoint, `<kubelet root>/dra_manager_state`),
and the runtime looks each `vendor/class=name` id up in the spec files of its spec directories
(a spec's `kind` is `vendor/class`, its `devices[].name` the names).

A spec file is the claim's when its name or contents hold the claim's UID, or when it defines one
of the claim's CDI device ids and was written for it: not there before the claim was prepared,
or changed since. A spec that was there unchanged before (a driver's static per-device specs)
is not the claim's, and unprepare need not remove it.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import yaml

SPEC = "=== CDI SPEC "
SPEC_END = "=== CDI SPEC END"
CHECKPOINT = "=== CDI CHECKPOINT"
CHECKPOINT_END = "=== CDI CHECKPOINT END"
END = "=== CDI END"
CHECKPOINT_FILE = "dra_manager_state"


@dataclass(frozen=True)
class NodeCdi:
    """What a node holds: its spec files (path -> text) and the kubelet's DRA checkpoint."""

    specs: Mapping[str, str]
    checkpoint: str | None  # None: no such file


def parse_dump(text: str) -> NodeCdi | None:
    """The reader pod's output (scenarios/core/cdi_specs_checks.py); None without its END line
    (a truncated log is told apart from an empty node)."""
    if END not in text.splitlines():
        return None
    specs: dict[str, str] = {}
    checkpoint: str | None = None
    current: list[str] | None = None
    path = ""
    for line in text.splitlines():
        if current is None:
            if line.startswith(SPEC) and line != SPEC_END:
                path, current = line[len(SPEC) :], []
            elif line == CHECKPOINT:
                path, current = "", []
        elif line in (SPEC_END, CHECKPOINT_END):
            body = "\n".join(current)
            if line == SPEC_END:
                specs[path] = body
            else:
                checkpoint = body
            current = None
        else:
            current.append(line)
    return NodeCdi(specs, checkpoint)


def defined_ids(text: str) -> frozenset[str]:
    """The CDI device ids a spec file defines (`<kind>=<device name>`); none if unreadable."""
    try:
        document = yaml.safe_load(text)  # JSON is YAML
    except yaml.YAMLError:
        return frozenset()
    if not isinstance(document, Mapping) or not isinstance(document.get("kind"), str):
        return frozenset()
    devices = document.get("devices")
    entries = devices if isinstance(devices, list) else []
    names = [d.get("name") for d in entries if isinstance(d, Mapping)]
    return frozenset(f"{document['kind']}={n}" for n in names if isinstance(n, str) and n)


def claim_cdi_ids(checkpoint: str, uid: str) -> tuple[str, ...] | None:
    """The CDI device ids the kubelet's DRA checkpoint lists for claim `uid` (empty: none, the
    claim prepared without CDI), or None when the checkpoint cannot be read."""
    try:
        data = json.loads(json.loads(checkpoint)["Data"])
        claims = data["ClaimInfoStateList"] or []
    except (ValueError, KeyError, TypeError):
        return None
    ids: list[str] = []
    for claim in claims:
        if not isinstance(claim, Mapping) or claim.get("ClaimUID") != uid:
            continue
        for driver in (claim.get("DriverState") or {}).values():
            for device in (driver or {}).get("Devices") or ():
                ids += [i for i in device.get("CDIDeviceIDs") or () if isinstance(i, str)]
    return tuple(dict.fromkeys(ids))


@dataclass(frozen=True)
class SpecFile:
    path: str  # on the node
    in_name: bool  # the claim's UID is in the file name
    in_contents: bool  # ... in its contents
    ids: frozenset[str] = frozenset()  # the claim's CDI device ids it defines, written for it

    def __str__(self) -> str:
        why = [w for w, hit in (("name", self.in_name), ("contents", self.in_contents)) if hit]
        parts = [f"UID in its {' and '.join(why)}"] if why else []
        if self.ids:
            parts.append(f"defines {', '.join(sorted(self.ids))}")
        return f"{self.path} ({'; '.join(parts)})"


def claim_specs(
    node: NodeCdi, uid: str, ids: Iterable[str], before: NodeCdi | None = None
) -> list[SpecFile]:
    """The spec files of `node` that are claim `uid`'s (module docstring); `before`: the node
    before the claim was prepared."""
    wanted = frozenset(ids)
    found = []
    for path, text in sorted(node.specs.items()):
        in_name, in_contents = uid in posixpath.basename(path), uid in text
        defines = defined_ids(text) & wanted
        if before is not None and before.specs.get(path) == text:
            defines = frozenset()  # there, unchanged, before the claim: not written for it
        if in_name or in_contents or defines:
            found.append(SpecFile(path, in_name, in_contents, defines))
    return found


def static_specs(node: NodeCdi, ids: Iterable[str], before: NodeCdi) -> list[str]:
    """Spec files that define one of `ids` and were there unchanged before the claim."""
    wanted = frozenset(ids)
    return sorted(
        path
        for path, text in node.specs.items()
        if before.specs.get(path) == text and defined_ids(text) & wanted
    )


def reader_mounts(spec_dirs: Iterable[str], kubelet_root_dir: str) -> list[str]:
    """The host directories a reader pod mounts: each spec directory's parent (a missing spec
    directory is then just empty; `/var/run`, a symlink on most hosts, resolves on the host)
    and the kubelet's root directory, none inside another."""
    wanted = {posixpath.dirname(d.rstrip("/")) or "/" for d in spec_dirs} | {kubelet_root_dir}
    return sorted(
        d for d in wanted if not any(d != o and d.startswith(o.rstrip("/") + "/") for o in wanted)
    )
