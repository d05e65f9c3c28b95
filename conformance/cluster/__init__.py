"""Cluster providers: `kind` (created and owned by the run, from node images built offline in
conformance/images), `existing` (a kubeconfig) or `in-cluster` (the pod's service account).

| module        | owns                                                                       |
|---------------|----------------------------------------------------------------------------|
| `provider`    | `kind`, `existing` or `in-cluster` behind one call                         |
| `kind`        | create (online or offline image), reuse, status, delete a kind cluster     |
| `kindconfig`  | the kind configuration for DRA: feature gates per release, kubeadm patches |
| `kind_images` | images loaded into a kind cluster's nodes, each node once                  |
| `upgrade`     | in-place upgrade of a kind cluster to another Kubernetes version           |
| `in_cluster`  | the `in-cluster` provider: the pod's service account as a kubeconfig       |
| `status`      | `cluster status`: nodes, version, served DRA resources, feature gates      |
| `smoke`       | the cluster is real: pods run on every worker and reach the API server     |
| `node_images` | the image each kind node runs, for the report |
| `kind_block`  | the profile's `cluster` block in the kind config; conflicts; reuse check |
| `block_check` | the `cluster` block read and checked on a cluster the suite did not make |
| `kind_create` | `kind create` on a loaded host: waits scaled to the load, retry line, node logs |
| `assets/`     | the node network RBAC manifest |

The host the kind provider needs (Docker engine, runc workaround, network) is conformance/host.
"""
