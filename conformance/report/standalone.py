"""Use the report without the conformance plugin: `pytest -p conformance.report.standalone`.

It stands in for the parts of `conformance/plugin/` the report relies on: the report options,
the requirement of each test taken from its `dra_requirement(ID)` marker (wherever the test
lives: there is no scenario tree to trust here), and the collector itself. Such a report is
marked "modified suite — not a certification" (conformance/report/provenance.py): only a run of
the harness on the suite's own scenario tree can certify.
"""

from __future__ import annotations

import pytest

from conformance.report.collector import install_report_collector
from conformance.report.options import add_report_options
from conformance.report.outcomes import mark_suite_test
from conformance.report.provenance import STANDALONE_KEY


def pytest_addoption(parser: pytest.Parser) -> None:
    add_report_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "dra_requirement(ID): the conformance requirement a test checks"
    )
    config.stash[STANDALONE_KEY] = True
    install_report_collector(config)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        mark = item.get_closest_marker("dra_requirement")
        if mark is not None and mark.args:
            mark_suite_test(item, str(mark.args[0]))
