"""A real Kubernetes API server (etcd + kube-apiserver v1.37.2 in containers) for the
project's own tests: what only an API server decides (validation, defaulting, CEL, server-side
apply, field selectors, eviction) is tested against one, never against a hand-written fake."""
