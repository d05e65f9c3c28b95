"""What one run shares between its processes.

| module       | owns                                                                        |
|--------------|-----------------------------------------------------------------------------|
| `context`    | the run context: profile plus cluster facts, read once, handed to workers   |
| `lease`      | the cross-process device lease book: no oversubscription, node-scoped leases|
| `node_marks` | per-node marks in the lease book ("no kubelet restart before T")            |
| `live_runs`  | which runs against this cluster are alive (their leftovers are not swept)   |
"""
