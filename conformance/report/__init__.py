"""Run reports: summary.json / summary.md, JUnit, Allure (results, HTML), evidence bundle.

What tests and the harness call:

- `record_metric(request, name, value_s, **labels)` / `add_inventory(request, key, value)`
- `RunFacts` + `set_run_facts(config, facts)` (the plugin, once the cluster is known)
- `install_report_collector(config)` (the plugin's pytest_configure)
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
