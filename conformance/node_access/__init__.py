"""What a scenario may do to a node, behind one interface (`NodeAccess`): restart its kubelet,
reboot, stop or start it, read its files, list its CDI specs, read its kubelet's log, see one of
its directories from the harness host, upgrade the cluster in place.

Three ways in, chosen once per run (`choose.choose_node_access`): the profile's `nodeCommands`
(a vendor's own commands), the node containers of a kind cluster the harness made (the Docker
SDK), and a short-lived privileged pod on the node where the profile allows it. An operation no
way can do raises `NodeOperationUnavailable` saying why and what to configure; callers never ask
which way they got.

| module         | owns                                                                       |
|----------------|----------------------------------------------------------------------------|
| `interface`    | `NodeAccess`: one method per operation, `NodeOperationUnavailable`         |
| `choose`       | the run's way to its nodes, chosen once from the cluster and the profile   |
| `chain`        | several ways tried in order: each operation to the first that can do it    |
| `commands`     | the profile's `nodeCommands`: argv templates on the harness host           |
| `kind`         | a kind cluster's node containers through the Docker SDK                    |
| `kind_restart` | a kind node's reboot: its container restarted, its addresses kept          |
| `pod`          | a short-lived privileged pod on the node (`nodeCommands.privilegedPod`)    |
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
