"""What scenario tests call: workloads and checks written against the profile, never a driver.

| module            | owns                                                                  |
|-------------------|-----------------------------------------------------------------------|
| `workloads`       | `Workloads`: claims and pods in one test namespace (the mixins below) |
| `scope`           | what every part of `Workloads` works in: cluster, namespace, run      |
| `claims`          | ResourceClaims and templates: create, wait for allocation, results    |
| `pods`            | workload pods: create, run until ready, restart, delete, events       |
| `running_wait`    | what ends a wait for Running at once (pure)                           |
| `container_view`  | what a container sees against what its claims were allocated          |
| `device_requests` | requests per device kind, CEL describing one device (pure)            |
| `kind_check`      | whether an allocated device is of a device kind (pure)                |
| `deployments`     | Deployments whose pods get claims from a ResourceClaimTemplate        |
| `placement`       | the nodes that hold node-local devices of a kind                      |
| `disruption`      | what "keeps running" means across a disruptive step                   |
| `verification`    | how a container proves which devices it received                      |
| `device_reuse`    | proving a released device can be allocated again                      |
| `republish`       | proving a driver publishes its node's devices again, in new slices    |
| `driver_restarts` | restarts of the driver's plugin pod, awaited ready again at the end   |
| `kubelet_dra`     | what a node's kubelet says of a driver's claims (metrics) |
| `prepare_retry`   | have the kubelet retry a failed prepare now (pure) |

Every action is an Allure step named after its object, with the claim, pod and slices read
attached as YAML (conformance.observe.steps; a no-op when Allure is not collecting).
"""
