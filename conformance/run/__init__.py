"""What one run shares between its processes.

| module               | owns                                                                      |
|----------------------|---------------------------------------------------------------------------|
| `context`            | the run context: profile plus cluster facts, read once, handed to workers |
| `lease`              | the broker: a test waits for its devices; grants and releases journaled   |
| `lease_policy`       | the admission rules and fairness of the device lease, pure                |
| `lease_book`         | where the lease book is kept (a locked file) and which holders are alive  |
| `cluster_lease_book` | the lease book in a ConfigMap of the cluster (`--dra-lease-book cluster`) |
| `lease_types`        | the lease's plain data: request, book entry, decision                     |
| `node_marks`         | per-node marks in the lease book ("no kubelet restart before T")          |
| `live_runs`          | which runs against this cluster are alive (their leftovers are not swept) |
"""
