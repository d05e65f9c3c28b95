"""The bundle's manifest: it round-trips, a foreign or tampered one is refused in one line,
and the member check names every member that is missing, extra or not the one listed."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable
from typing import Any

import pytest

from conformance.bundle.manifest import (
    BundleError,
    Entry,
    HashingReader,
    Manifest,
    Member,
    key_changes,
    problems,
)

KIND = Entry("kind", "dir", "2a3358849e8b", "bin/kind-v0.33.0-2a3358849e8b")
NODE = Entry("node:v1.37.2", "image", "v1.37.2-b78", "localhost/dra-conformance/node:v1.37.2-b78")


def _manifest(members: dict[str, Member]) -> Manifest:
    return Manifest("0.1.0", "abc", ("v1.37.2",), "go1.26.8", (KIND, NODE), members)


def _member(data: bytes) -> Member:
    reader = HashingReader(io.BytesIO(data))
    while reader.read(3):
        pass
    return reader.member()


def test_members_are_named_by_kind_and_a_safe_name() -> None:
    assert KIND.member == "dirs/kind.tar"
    assert NODE.member == "images/node_v1.37.2.tar"


def test_the_manifest_round_trips_through_json() -> None:
    manifest = _manifest({KIND.member: _member(b"k"), NODE.member: _member(b"n")})
    assert Manifest.from_json(manifest.to_json(), "b.tar") == manifest


def test_the_hashing_reader_gives_the_sha256_and_size_of_what_was_read() -> None:
    member = _member(b"hello bundle")
    assert member.size == 12
    assert member.sha256 == hashlib.sha256(b"hello bundle").hexdigest()


def test_an_intact_bundle_has_no_problems() -> None:
    found = {KIND.member: _member(b"k"), NODE.member: _member(b"n")}
    assert problems(_manifest(found), found) == []


def test_a_changed_missing_or_extra_member_is_named() -> None:
    listed = {KIND.member: _member(b"k"), NODE.member: _member(b"n")}
    found = {KIND.member: _member(b"K"), "dirs/stray.tar": _member(b"s")}
    out = problems(_manifest(listed), found)
    assert len(out) == 3, out
    assert any(p.startswith("dirs/kind.tar: sha256 ") and "the manifest says" in p for p in out)
    assert "images/node_v1.37.2.tar: missing from the file" in out
    assert "dirs/stray.tar: in the file but not in the manifest" in out


def test_an_entry_without_a_listed_sha256_is_a_problem() -> None:
    found = {KIND.member: _member(b"k"), NODE.member: _member(b"n")}
    out = problems(_manifest({KIND.member: found[KIND.member]}), found)
    assert out == ["images/node_v1.37.2.tar: no sha256 in the manifest"]


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda d: d.update(schema=2), "schema 2"),
        (lambda d: d.pop("entries"), "'entries'"),
        (lambda d: d["entries"][0].update(kind="volume"), "kind 'volume'"),
        (lambda d: d["entries"][0].update(location="../../etc"), "leaves its root"),
        (lambda d: d["entries"][0].update(location="/etc"), "leaves its root"),
    ],
)
def test_a_foreign_manifest_is_refused_in_one_line(
    edit: Callable[[dict[str, Any]], object], said: str
) -> None:
    data = json.loads(_manifest({}).to_json())
    edit(data)
    with pytest.raises(BundleError) as caught:
        Manifest.from_json(json.dumps(data).encode(), "b.tar")
    assert caught.value.problem.startswith("b.tar: its manifest is not a dra-conformance bundle")
    assert said in caught.value.problem
    assert "\n" not in caught.value.problem
    assert "bundle save" in caught.value.remedy


def test_not_json_is_refused() -> None:
    with pytest.raises(BundleError, match="not a dra-conformance bundle manifest"):
        Manifest.from_json(b"\x00garbage", "b.tar")


def test_key_changes_name_the_entries_this_checkout_looks_up_elsewhere() -> None:
    manifest = _manifest({})
    newer = Entry("kind", "dir", "ffffffffffff", "bin/kind-v0.33.0-ffffffffffff")
    assert key_changes(manifest, {"kind": KIND, "node:v1.37.2": NODE}) == []
    assert key_changes(manifest, {"kind": newer}) == [
        "kind: the bundle has 2a3358849e8b, this checkout looks up ffffffffffff"
    ]
