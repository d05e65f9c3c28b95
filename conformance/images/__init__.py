"""The images the suite builds here, offline (no registry): the kind node image per Kubernetes
version, the harness's images (workload, fake driver), the suite's own image, the Kubernetes
e2e DRA test driver and third-party drivers built from their public Go modules. The cluster
providers (conformance/cluster) run and load them.

| module         | owns                                                                      |
|----------------|---------------------------------------------------------------------------|
| `versions`     | pinned versions of everything the node image is built from; its cache keys |
| `releases`     | per release: Go, etcd, pause, DRA gate stages, resource.k8s.io versions    |
| `components`   | the node image's Go components (and helm), the Go toolchain each needs     |
| `substitutes`  | stand-ins for Go modules the proxy refuses (v1.38's iptables helper)       |
| `rootfs`       | the Debian bookworm root filesystem (debootstrap)                          |
| `nodeimage`    | the kind node image, assembled offline                                     |
| `build_graph`  | build tasks as a dependency graph: downloads beside one compile at a time  |
| `harness`      | images the harness needs in the cluster (workload, fake driver)            |
| `suite_image`  | the suite as a container image (in-cluster runs, Sonobuoy)                 |
| `testdriver`   | the Kubernetes e2e DRA test driver image, built from k8s.io/kubernetes     |
| `gomodule`     | a third-party driver's image built from its Go module at a pinned version  |
| `cached_image` | an image built once across processes                                       |
| `tarbuild`     | tar archives to copy files into containers                                 |
| `assets/`      | files the node image carries (node set-up, CNI) and the stand-ins' adapter |

The Go builds themselves are conformance/gobuild.py, the cache and its lock conformance/cache.py.
"""
