"""DRA-LIFE-003's removal of a claim's CDI spec files through the node access: which files go
(those defining the claim's CDI devices, found through the kubelet's checkpoint), and when the
requirement is not run or not applicable instead."""

from __future__ import annotations

import pytest
from cdi_loss_checks import remove_claim_cdi_specs

from conformance.model.cdi_paths import CdiPaths
from conformance.model.outcome import HarnessError, NotApplicable, NotRun
from conformance.node_access import NodeAccess, Operation
from unit.scenarios.test_cdi_specs import KIND, OTHER, UID, checkpoint, spec

NODE = "worker"
STATE = "/var/lib/kubelet/dra_manager_state"


class FakeNode(NodeAccess):
    """A node as a dict of files; `rm` removes them unless `stuck`."""

    def __init__(self, files: dict[str, str], run: bool = True, stuck: bool = False) -> None:
        self.files = dict(files)
        self.can_run = run
        self.stuck = stuck

    def refusal(self, op: Operation, node: str) -> tuple[str, str] | None:
        return None if self.can_run else ("no way in", "set nodeCommands.exec")

    def _run(self, node: str, argv: list[str]) -> str:
        if argv[0] == "cat":
            if argv[1] not in self.files:
                raise RuntimeError(f"cat {argv[1]} exited 1")
            return self.files[argv[1]]
        if argv[0] == "rm":
            for path in argv[3:]:
                if not self.stuck:
                    self.files.pop(path, None)
            return ""
        assert argv[:2] == ["sh", "-c"], argv  # the spec listing
        specs = [p for p in self.files if p.endswith((".json", ".yaml")) and "/cdi/" in p]
        return "\n".join(sorted(specs))


def remove(node: FakeNode):
    return remove_claim_cdi_specs(node, NODE, CdiPaths(), UID, "claim ns/c")


def test_removes_every_file_defining_a_cdi_device_of_the_claim_and_nothing_else() -> None:
    node = FakeNode(
        {
            STATE: checkpoint({UID: [f"{KIND}=a", f"{KIND}=b"], OTHER: [f"{KIND}=c"]}),
            "/var/run/cdi/one.json": spec("a"),
            "/etc/cdi/two.yaml": spec("b", "x"),  # with another device: removed whole
            "/var/run/cdi/other.json": spec("c"),  # another claim's
            "/var/run/cdi/same-name.json": spec("a", kind="other.example.com/gpu"),
        }
    )
    lost = remove(node)
    assert lost.ids == (f"{KIND}=a", f"{KIND}=b")
    assert sorted(lost.files) == ["/etc/cdi/two.yaml", "/var/run/cdi/one.json"]
    assert sorted(node.files) == [STATE, "/var/run/cdi/other.json", "/var/run/cdi/same-name.json"]
    assert "one.json" in str(lost) and f"{KIND}=b" in str(lost)


@pytest.mark.parametrize(
    ("node", "outcome", "says"),
    [
        (FakeNode({}, run=False), NotRun, "no way in"),
        (FakeNode({}), NotRun, "cannot be read"),
        (FakeNode({STATE: "not json"}), NotRun, "could not be parsed"),
        (FakeNode({STATE: checkpoint({UID: []})}), NotApplicable, "does not use CDI"),
        (FakeNode({STATE: checkpoint({UID: [f"{KIND}=a"]})}), NotRun, "cdi.specDirs"),
    ],
)
def test_a_claim_whose_specs_cannot_be_found_is_not_judged(node, outcome, says) -> None:
    with pytest.raises(outcome, match=says):
        remove(node)


def test_a_file_that_stays_is_the_harness_s_error() -> None:
    node = FakeNode(
        {STATE: checkpoint({UID: [f"{KIND}=a"]}), "/var/run/cdi/one.json": spec("a")}, stuck=True
    )
    with pytest.raises(HarnessError, match="could not remove /var/run/cdi/one.json"):
        remove(node)
