"""Use the report without the conformance plugin: `pytest -p conformance.report.standalone`.

It stands in for the parts of `conformance/plugin/` the report relies on: the report options,
the `dra_requirement(ID)` marker copied into `item.user_properties`, and the collector itself.
"""

from __future__ import annotations

import pytest

from conformance.report.collector import install_report_collector
from conformance.report.options import add_report_options
from conformance.report.outcomes import PROP_REQUIREMENT


def pytest_addoption(parser: pytest.Parser) -> None:
    add_report_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "dra_requirement(ID): the conformance requirement a test checks"
    )
    install_report_collector(config)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        present = {v for k, v in item.user_properties if k == PROP_REQUIREMENT}
        for mark in item.iter_markers("dra_requirement"):
            for req_id in mark.args:
                if req_id not in present:
                    item.user_properties.append((PROP_REQUIREMENT, str(req_id)))
                    present.add(req_id)
