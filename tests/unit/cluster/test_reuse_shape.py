"""Reusing a kind cluster: its worker count is kept, never silently changed."""

from __future__ import annotations

import pytest

from conformance.cluster.kind import check_reused_shape
from conformance.errors import ClusterError


@pytest.mark.parametrize("requested", [None, 3])
def test_a_cluster_is_reused_as_it_is_unless_another_count_is_asked_for(
    requested: int | None,
) -> None:
    check_reused_shape("c", 3, requested)  # `run` asks for none; `cluster up --workers 3`


def test_another_worker_count_is_an_error_that_says_what_to_do() -> None:
    with pytest.raises(ClusterError, match=r"cluster c exists with 3 worker node\(s\), not 2") as e:
        check_reused_shape("c", 3, 2)
    assert "dra-conformance cluster down --name c" in e.value.remedy
