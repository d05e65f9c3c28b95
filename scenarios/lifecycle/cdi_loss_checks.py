"""Lose a claim's CDI spec files on its node, as a reboot that empties the spec directories
does (DRA-LIFE-003), through the run's node access (conformance.node_access).

The claim's specs are found as the container runtime finds them (conformance.model.cdi_lookup):
the CDI device ids the kubelet got for the claim, read from its DRA checkpoint, looked up by
`kind` and device name in every spec file of the runtime's spec directories. Whole files are
removed: a file that also defines other devices loses them too, which is what a reboot does.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.model.cdi_lookup import CHECKPOINT_FILE, claim_cdi_ids, defined_ids
from conformance.model.cdi_paths import CdiPaths
from conformance.model.outcome import HarnessError, not_applicable, not_run
from conformance.node_access import NodeAccess, Operation, not_run_unless_available
from conformance.observe.steps import attach_yaml, step


@dataclass(frozen=True)
class LostSpecs:
    """What was removed on `node`: the claim's CDI device ids and the spec files defining them."""

    node: str
    ids: tuple[str, ...]
    files: tuple[str, ...]

    def __str__(self) -> str:
        return f"{', '.join(self.files)} on node {self.node} (defining {', '.join(self.ids)})"


def require_file_access(access: NodeAccess, node: str) -> None:
    """Not run unless commands can be run on `node` (reading and removing its files)."""
    with not_run_unless_available():
        access.require(Operation.RUN, node)


def remove_claim_cdi_specs(
    access: NodeAccess, node: str, paths: CdiPaths, uid: str, claim: str
) -> LostSpecs:
    """Remove the spec files on `node` that define a CDI device of claim `uid` (`claim`: how
    to name it). Not run, or not applicable, when the claim's specs cannot be found."""
    require_file_access(access, node)
    checkpoint = f"{paths.kubelet_root_dir}/{CHECKPOINT_FILE}"
    dirs = " or ".join(paths.spec_dirs)
    with step(f"remove the CDI spec files of {claim} in {dirs} on node {node}"):
        try:
            text = access.read_host_file(node, checkpoint)
        except RuntimeError as exc:
            not_run(
                f"the kubelet's DRA checkpoint {checkpoint} on node {node} cannot be read "
                f"({exc}), so the CDI devices the kubelet passes the runtime for {claim} are "
                "unknown",
                "set cdi.kubeletRootDir in the profile to the kubelet's --root-dir",
            )
        ids = claim_cdi_ids(text, uid)
        if ids is None:
            not_run(
                f"the kubelet's DRA checkpoint {checkpoint} on node {node} could not be parsed",
                "report the checkpoint's format to the suite's maintainers",
            )
        if not ids:
            not_applicable(
                f"the kubelet passes the container runtime no CDI device of {claim} (its "
                f"checkpoint {checkpoint} lists none): the driver does not use CDI"
            )
        wanted = frozenset(ids)
        files = tuple(
            path
            for path in access.list_cdi_specs(node, paths.spec_dirs)
            if defined_ids(access.read_host_file(node, path)) & wanted
        )
        if not files:
            not_run(
                f"the CDI devices the kubelet passes for {claim} ({', '.join(ids)}, from "
                f"{checkpoint}) are defined by no spec file in {dirs} on node {node}: the "
                "container runtime reads its specs elsewhere",
                "list the runtime's CDI spec directories in the profile (cdi.specDirs)",
            )
        access.run(node, ["rm", "-f", "--", *files])
        left = set(access.list_cdi_specs(node, paths.spec_dirs)) & set(files)
        if left:
            raise HarnessError(f"could not remove {', '.join(sorted(left))} on node {node}")
        attach_yaml(f"CDI spec files removed on {node}", {"ids": list(ids), "files": list(files)})
        return LostSpecs(node, ids, files)
