"""The dra-conformance pytest plugin (entry point `pytest11: dra_conformance`).

Inert for every other project: it only registers its `--dra-*` options and `dra_*` markers
(prefixed, so another project's `requirement` marker or `--kubeconfig` option is never taken
for ours). It becomes active when `--dra-profile` is given (`dra-conformance run` passes it):
then it owns the cluster, the run context, the SIGTERM handler, the xdist hand-over and the
report. Without a profile, only tests under the catalog's own folder (`scenarios/`) or marked
`dra_requirement` are looked at, for the collection rules, which need no cluster:
`pytest --collect-only scenarios` validates the catalog offline.

Process roles under xdist: the controller provisions the cluster, installs the driver, reads
the run context and sweeps at the end; workers get the context through `workerinput` and
only run tests. Without xdist the single process does both.

| module              | owns                                                                  |
|---------------------|-----------------------------------------------------------------------|
| `options`           | `--dra-*` options and `dra_*` markers                                 |
| `hookspecs`         | the plugin's own hook (a lease book double for its tests)             |
| `state`             | stash keys, per-process state, the run's catalog                      |
| `session`           | set-up: cluster, driver install, run context, xdist hand-over, header |
| `setup_failure`     | a failed set-up: no test collected, NO-VERDICT, one error line        |
| `preflight`         | set-up: the cluster runs the workload image, the harness reads logs   |
| `collection`        | collection hooks: lease order, `--dra-requirement`, catalog checks    |
| `markers`           | what a test's `dra_` markers ask for, and the run order they give     |
| `selection`         | the rules the hooks apply (pure: requirement IDs, MUST coverage)      |
| `scheduling`        | which test an xdist worker gets next (lease-aware load scheduling)    |
| `durations`         | how long each passed test held its worker, for the next run's order   |
| `applicability`     | not applicable / not run before a test starts                         |
| `not_ready`         | the test protocol of a run whose driver never became ready            |
| `fixtures`          | `dra_context`, `k8s`, `build`, `device_lease`, `test_namespace`, ...  |
| `diagnostics`       | what is attached to a failed test                                     |
| `finish`            | Ctrl-C/SIGTERM cleanup, end-of-run sweep, terminal summary, teardown  |
| `driver_metrics`    | the kubelets' and scheduler's DRA metrics, read at start and end      |
| `driver_identity`   | what the run certified: the driver's images by digest, its install    |
| `run_facts`         | the run's facts for the report, from its context                      |
| `run_progress`      | live progress of `dra-conformance run` (registered by the CLI only)   |
| `driver_calls`      | a test's own driver figures, from the per-test kubelet check |
| `kubelet_check`     | the per-test kubelet check: no DRA error the test did not cause |
| `lanes`             | which tests the lease-aware scheduler treats apart |
| `node_identity`     | the build the driver was tested on, per node |
| `leftovers_note`    | the header's line on what dead runs left on the cluster |

pytest registers this module: the hooks and fixtures below are imported here for that.
"""

from conformance.plugin.applicability import (
    pytest_runtest_protocol,
    pytest_runtest_setup,
)
from conformance.plugin.collection import (
    pytest_collection_finish,
    pytest_collection_modifyitems,
    pytest_deselected,
    pytest_ignore_collect,
    pytest_report_collectionfinish,
)
from conformance.plugin.diagnostics import pytest_runtest_makereport
from conformance.plugin.finish import (
    pytest_sessionfinish,
    pytest_terminal_summary,
    pytest_unconfigure,
)
from conformance.plugin.fixtures import (
    build,
    cluster_objects,
    device_lease,
    dra_context,
    k8s,
    node_access,
    test_namespace,
)
from conformance.plugin.options import pytest_addhooks, pytest_addoption
from conformance.plugin.session import (
    pytest_configure,
    pytest_report_header,
    pytest_sessionstart,
)

__all__ = [
    "build",
    "cluster_objects",
    "device_lease",
    "dra_context",
    "k8s",
    "node_access",
    "pytest_addhooks",
    "pytest_addoption",
    "pytest_collection_finish",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_deselected",
    "pytest_ignore_collect",
    "pytest_report_collectionfinish",
    "pytest_report_header",
    "pytest_runtest_makereport",
    "pytest_runtest_protocol",
    "pytest_runtest_setup",
    "pytest_sessionfinish",
    "pytest_sessionstart",
    "pytest_terminal_summary",
    "pytest_unconfigure",
    "test_namespace",
]
