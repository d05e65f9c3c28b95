"""The machine kind clusters run on: what the kind provider (conformance/cluster/kind.py) needs
of it before it creates a cluster.

| module    | owns                                                                           |
|-----------|--------------------------------------------------------------------------------|
| `prepare` | a running Docker engine, the runc workaround for missing capabilities, inotify |
| `network` | the Docker network the harness's kind nodes join (fixed node addresses)        |
| `assets/` | the runc wrapper template                                                      |
"""
