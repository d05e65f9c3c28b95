"""What Kubernetes itself measured about the driver: the kubelet's and the control plane's DRA
metrics, read at the start and the end of a run, and the cluster's claims and devices at its end.

| module       | owns                                                                       |
|--------------|----------------------------------------------------------------------------|
| `parse`      | Prometheus text -> histogram series and gauges (prometheus_client's parser) |
| `histogram`  | one histogram series: the delta of two reads, sums, quantiles from buckets  |
| `scrape`     | one snapshot: every node's kubelet and the scheduler, through the API server |
| `operations` | two snapshots -> per driver and operation: count, errors, mean, p50/p95/p99 |
| `inventory`  | claims per state, devices per pool allocated/free/tainted, from the API     |
| `calls`      | a kubelet's DRA gRPC calls to a driver, from one read |
| `increase`   | counts over many reads, as Prometheus's `increase()` (restarts summed) |
| `spool`      | workers' reads handed to the controller through a JSON-lines file |
| `timeline`   | the driver's load over the run, from the periodic kubelet reads |

A source that cannot be read (forbidden, not reachable) is "not available (why)", never zero.
"""
