"""What one run shares between its processes.

| module               | owns                                                                      |
|----------------------|---------------------------------------------------------------------------|
| `context`            | the run context: profile plus cluster facts, read once, handed to workers |
| `lease`              | the broker: a test waits for its devices; grants and releases journaled   |
| `lease_policy`       | the admission rules and fairness of the device lease, pure                |
| `lease_book`         | what the lease book holds (leases, marks, runs) and its storage interface |
| `cluster_lease_book` | the lease book in ConfigMaps of the cluster; heartbeats, expiry, journal  |
| `lease_types`        | the lease's plain data: request, book entry, decision                     |
| `node_marks`         | per-node marks in the lease book ("no kubelet restart before T")          |
| `live_runs`          | which runs against the cluster are alive (their leftovers are not swept)  |
| `durations`          | earlier runs' test durations: the longest start first |
"""
