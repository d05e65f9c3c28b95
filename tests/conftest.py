"""Fixtures shared by every tier of the project's own tests."""

from cel_differential.tally_report import (  # noqa: F401 - hooks: counts in the CI log
    pytest_runtest_logreport,
    pytest_terminal_summary,
)
from cel_fixtures import cel  # noqa: F401 - fixtures are found by name
from kube_apiserver.fixtures import (  # noqa: F401 - fixtures are found by name
    api_namespace,
    apiserver_k8s,
    cluster_scoped,
    kube_apiserver,
)
