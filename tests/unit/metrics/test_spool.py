"""conformance.metrics.spool: reads handed from workers to the report through a file."""

from __future__ import annotations

from pathlib import Path

from helpers.metric_pages import DRIVER, V1, grpc, kubelet_page

from conformance.metrics.parse import parse_metrics
from conformance.metrics.scrape import Snapshot
from conformance.metrics.spool import ReadSpool


def test_a_spooled_read_comes_back_whole_and_partial(tmp_path: Path) -> None:
    text = kubelet_page(grpc(DRIVER, V1 + "NodePrepareResources", "OK", (3,) * 5, 0.1), started=5.0)
    read = Snapshot(taken=1234.5, unavailable={"kubelet b": "HTTP 503: x"})
    read.sources["kubelet a"] = parse_metrics(text)
    read.texts["kubelet a"] = text
    spool = ReadSpool(tmp_path / "run" / "reads.jsonl")
    spool.add(read)
    with spool.path.open("a") as f:
        f.write('{"taken": 1, "texts": {"kubelet a": ')  # a worker killed mid-write
    (back,) = spool.snapshots()
    assert back.partial and back.taken == 1234.5
    assert back.unavailable == {"kubelet b": "HTTP 503: x"}
    assert back.sources["kubelet a"] == read.sources["kubelet a"]


def test_no_spool_no_reads(tmp_path: Path) -> None:
    assert ReadSpool(tmp_path / "absent.jsonl").snapshots() == []
