"""What a scenario may do to a node, behind one interface (`NodeAccess`): restart its kubelet,
reboot, stop or start it, read its files, list its CDI specs, read its kubelet's log, see one of
its directories from the harness host, upgrade the cluster in place.

Three ways in, chosen once per run (`choose.choose_node_access`): the profile's `nodeCommands`
(a vendor's own commands), the node containers of a kind cluster the harness made (the Docker
SDK), and a short-lived privileged pod on the node where the profile allows it. An operation no
way can do raises `NodeOperationUnavailable` saying why and what to configure; callers never ask
which way they got.
"""

from conformance.node_access.interface import (
    InPlaceUpgrade,
    NodeAccess,
    NodeOperationUnavailable,
    Operation,
    not_run_unless_available,
)

__all__ = [
    "InPlaceUpgrade",
    "NodeAccess",
    "NodeOperationUnavailable",
    "Operation",
    "not_run_unless_available",
]
