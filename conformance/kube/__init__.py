"""Thin helpers over the official `kubernetes` client. Imports no layer above it (`cluster/`,
`install/`, `report/`, ...): the import-linter contract in pyproject.toml holds that.

| module           | owns                                                                    |
|------------------|-------------------------------------------------------------------------|
| `client`         | API clients from a kubeconfig and context, once per process             |
| `field_manager`  | `dra-conformance`, the field manager (and User-Agent) of every write     |
| `apply`          | server-side apply and ordered deletion of manifests (dynamic client)    |
| `driver_images`  | the images the driver's pods run, by digest (pod status `imageID`)     |
| `objects`        | create and delete builder dicts by kind                                 |
| `builders`       | plain-dict objects scenarios create, labelled with the run and test     |
| `claim_requests` | the pieces of a claim spec: requests, subrequests, constraints, config  |
| `state`          | readers of cluster state as camelCase dicts and small records           |
| `waits`          | tenacity waits that report what was awaited and the last state seen     |
| `harness_causes` | a pod stuck for the cluster's or harness's reason (image pull, sandbox)  |
| `slices`         | the devices a driver publishes right now                                |
| `readiness`      | is a driver ready the way its profile says                              |
| `daemonsets`     | a DaemonSet's pod on one node: find, restart, await                     |
| `rollout`        | a DaemonSet's pod template changed and restored, its rollout followed   |
| `ownership`      | field ownership the harness's patches took, given back to its owners     |
| `drain`          | cordon, drain (Eviction API), uncordon                                  |
| `nodes`          | delete a Node object and bring the node back (kind)                     |
| `kubelet`        | what a node's kubelet says about DRA (node proxy)                       |
| `podexec`        | exec in a container, restart a container                                |
| `cleanup`        | test namespaces, the end-of-run sweep, `dra-conformance cleanup`        |
| `leftovers`      | what dead runs left on the cluster (by run label)                       |
| `diagnostics`    | what a failed test leaves for a person to read                          |
| `access`         | who the driver runs as; SubjectAccessReviews of their rights |
| `cordon_seen`    | wait until the scheduler has seen a node's cordon |
| `node_info`      | what each node runs (kubelet, runtime, OS, kernel) |
"""
