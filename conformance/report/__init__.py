"""Run reports: summary.json / summary.md, JUnit, Allure (results, HTML), evidence bundle.

What tests and the harness call:

- `record_metric(request, name, value_s, **labels)` / `add_inventory(request, key, value)`
- `RunFacts` + `set_run_facts(config, facts)` (the plugin, once the cluster is known)
- `install_report_collector(config)` (the plugin's pytest_configure)

| module        | owns                                                                      |
|---------------|---------------------------------------------------------------------------|
| `collector`   | the pytest plugin object that gathers results and writes `reports/<run>/` |
| `outcomes`    | one test's result from its reports; what the harness stamps on them       |
| `verdict`     | per-requirement status from typed outcomes, and the run's verdict         |
| `partial`     | whether a scoped run selected every applicable MUST (else PASSED-PARTIAL) |
| `no_verdict`  | the fenced report directory; NO-VERDICT summaries (set-up, interrupt)     |
| `summary`     | `summary.json` (schema dra-conformance.io/summary/v1)                     |
| `markdown`    | `summary.md`, rendered from summary.json only                             |
| `platform_issues` | a failed test's note when a known platform issue explains it       |
| `gate`        | the upgrade gate: two runs compared per requirement (gate.md, gate.json)  |
| `junit`       | `junit.xml`: where pytest writes it, its counts, the verdict properties   |
| `allure`      | Allure results: labels, environment, categories                           |
| `allure_html` | the Allure HTML report, generated offline (Allure Report 3)               |
| `evidence`    | `evidence.tar.gz`, what a vendor publishes                                |
| `facts`       | the run's driver, cluster and identity                                    |
| `metrics`     | performance figures and inventory tests add                               |
| `catalog`     | the requirement facts the report needs                                    |
| `options`     | the report's options, and where the run directory is                      |
| `standalone`  | the report without the conformance plugin                                 |
| `provenance`  | suite version and digests of what ran; "modified suite" marks             |
| `suite_files` | the whole suite as installed against its reference (git HEAD or RECORD)   |
| `seal`        | the sealed run: plugin allow-list, refused options, foreign code, inputs  |
| `paths`       | local paths as a published report shows them (relative, `~`)              |
| `signing`     | the report's in-toto statement in a DSSE envelope: sign, check            |
| `verify`      | `dra-conformance verify`: a report re-derived and checked against the suite |
| `requirement_status` | one requirement's status from its tests' outcomes (pure) |
| `markdown_first` | the top of summary.md: why the verdict, what failed, what to do |
| `driver_markdown` | summary.md's driver operations and cluster inventory |
| `per_test_calls` | summary.md's driver calls per test |
| `call_sharing` | how many other tests share a test's driver figures |
| `capabilities_seen` | capabilities declared against observed |
| `dra_gates`   | the feature gates summary.md shows |
| `node_facts`  | the nodes' build as summary.md and Allure show it |
| `driver_figures` | what Kubernetes measured of the driver, handed to the report |
| `run_figures` | the run's charts and run-level Allure attachments, never fatal |
| `charts`      | SVG charts beside summary.md (matplotlib, no pyplot) |
| `allure_run`  | the run's own figures as an Allure tear-down shared by every test |
| `gate_latency` | the gate's p95 latency comparison (pure) |
| `junit_records` | junit.xml read back into test records (`verify`) |
| `verify_cross` | Allure results and the evidence archive against junit.xml |
| `cut_short`   | tests a run cut short, in junit.xml and Allure as summary.json has them |
| `sonobuoy`    | the requirement-level JUnit file Sonobuoy reads |
| `matrix`      | several verified reports as one driver matrix (the data) |
| `matrix_intake` | which reports enter a matrix: verified, signed or allowed unsigned |
| `matrix_notes` | the judgement of each failure, read from a notes file |
| `matrix_markdown` | the matrix as Markdown (footnoted reasons) |
| `matrix_html` | the matrix as one self-contained HTML page |
"""

from conformance.report.facts import RunFacts, get_run_facts, get_run_id, set_run_facts
from conformance.report.metrics import add_inventory, record_metric

__all__ = [
    "RunFacts",
    "add_inventory",
    "get_run_facts",
    "get_run_id",
    "record_metric",
    "set_run_facts",
]
