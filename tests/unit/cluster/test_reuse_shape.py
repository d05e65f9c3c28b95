"""Reusing a kind cluster: its worker count is kept, never silently changed."""

from __future__ import annotations

import pytest

from conformance.cli import app
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


@pytest.mark.parametrize("given", ["0", "-1", "two"])
def test_cluster_up_refuses_a_worker_count_below_one_with_exit_code_2(
    given: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = app.build_parser([])
    with pytest.raises(SystemExit) as exit_info:
        app.parse_args(parser, ["cluster", "up", "--workers", given])
    assert exit_info.value.code == 2
    assert f"--workers: {given!r}: give a whole number of at least 1" in capsys.readouterr().err


def test_cluster_up_leaves_the_worker_count_to_the_cluster_unless_given() -> None:
    parser = app.build_parser([])
    assert app.parse_args(parser, ["cluster", "up"]).workers is None
    assert app.parse_args(parser, ["cluster", "up", "--workers", "3"]).workers == 3
