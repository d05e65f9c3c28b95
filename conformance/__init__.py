"""The dra-conformance harness, in packages by concern. Which package may import which is
fixed by the import-linter layers in pyproject.toml (docs/CONTRACTS.md, docs/DESIGN.md).

| module          | owns                                                                    |
|-----------------|-------------------------------------------------------------------------|
| `cli/`          | the `dra-conformance` command                                           |
| `bundle/`       | `bundle save/load`: what a run builds, in one file for another machine  |
| `plugin/`       | the pytest plugin: options, set-up, selection, fixtures, sweep          |
| `scenario_api/` | what scenarios call: workloads, placement, verification                 |
| `faults/`       | fault injection: the interface and one module per method                |
| `install/`      | driver install (manifests, helm, preinstalled) and `profile check`      |
| `report/`       | JUnit, Allure, summary, verdict, provenance, signing, `verify`          |
| `node_access/`  | what a scenario may do to a node, one interface over three ways in      |
| `run/`          | what a run's processes share: run context, device lease book, marks     |
| `cluster/`      | cluster providers (kind, existing, in-cluster)                          |
| `metrics/`      | what Kubernetes measured of the driver (kubelet, control plane)         |
| `images/`       | images built offline: kind node images, harness, suite, drivers         |
| `host/`         | what kind needs of the machine: Docker engine, runc workaround, network |
| `docker_client` | the Docker SDK client, with a clear error when unreachable              |
| `kube/`         | helpers over the official kubernetes client                             |
| `model/`        | profile, catalog and pure logic over them (no cluster)                  |
| `cel/`          | device selectors evaluated by Kubernetes' own CEL code (a Go helper)    |
| `gobuild`       | Go binaries built from the Go module proxy, cached by version           |
| `observe/`      | Allure steps, attachments and redaction, for every layer                |
| `progress`      | progress output for long steps                                          |
| `errors`        | errors the CLI turns into one line: what is wrong, what to do           |
| `suite_root`    | where the suite's own files are (scenarios/, drivers/fake/)             |
| `cache`         | the shared build cache: its root, keys and lock                         |
"""
