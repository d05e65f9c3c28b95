"""Cluster providers: `kind` with offline node images per Kubernetes version, or `existing`.

| module       | owns                                                                        |
|--------------|-----------------------------------------------------------------------------|
| `provider`   | `kind` or `existing` behind one call                                        |
| `kind`       | create (online or offline image), reuse, status, delete a kind cluster      |
| `kindconfig` | the kind configuration for DRA: feature gates per release, kubeadm patches  |
| `status`     | `cluster status`: nodes, version, served DRA resources, feature gates       |
| `smoke`      | the cluster is real: pods run on every worker and reach the API server      |
| `host`       | a running Docker engine, and the runc workaround                            |
| `versions`   | pinned versions of everything the node image is built from; cache keys      |
| `releases`   | per release: Go, etcd, pause, DRA gate stages, resource.k8s.io versions     |
| `rootfs`     | the Debian bookworm root filesystem (debootstrap)                           |
| `gobuild`    | Go binaries from the Go module proxy, cached by version                     |
| `substitutes`| stand-ins for Go modules the proxy refuses (v1.38's iptables helper)        |
| `nodeimage`  | the kind node image, assembled offline                                      |
| `images`     | images the harness needs in the cluster (workload, fake driver), built here |
| `testdriver` | the Kubernetes e2e DRA test driver image, built from k8s.io/kubernetes      |
| `buildlock`  | a cross-process lock around a cached build                                  |
| `tarbuild`   | tar archives to copy files into containers                                  |
"""
