"""Reading a file in a container: an absent file, an empty one and an exec error differ."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from conformance.kube import podexec


def reading(monkeypatch: pytest.MonkeyPatch, output: str) -> list[Sequence[str]]:
    calls: list[Sequence[str]] = []

    def fake_exec(k8s: object, ns: str, pod: str, container: str, argv: Sequence[str]) -> str:
        calls.append(argv)
        return output

    monkeypatch.setattr(podexec, "exec_in_container", fake_exec)
    return calls


def test_the_text_after_the_found_marker_is_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = reading(monkeypatch, f"{podexec.FOUND_MARKER}\n" + '{"a": 1}\n{"b": 2}\n')
    text = podexec.read_container_file(None, "ns", "pod", "c", "/x/y.json")  # type: ignore[arg-type]
    assert text == '{"a": 1}\n{"b": 2}\n'
    assert calls[0][-1] == "/x/y.json"  # the path is an argument, never spliced into the script


def test_an_empty_file_is_not_an_absent_one(monkeypatch: pytest.MonkeyPatch) -> None:
    reading(monkeypatch, f"{podexec.FOUND_MARKER}\n")
    assert podexec.read_container_file(None, "ns", "pod", "c", "/f") == ""  # type: ignore[arg-type]
    reading(monkeypatch, f"{podexec.ABSENT_MARKER}\n")
    assert podexec.read_container_file(None, "ns", "pod", "c", "/f") is None  # type: ignore[arg-type]


def test_other_output_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    reading(monkeypatch, "OCI runtime exec failed: sh: not found")
    with pytest.raises(RuntimeError, match="OCI runtime exec failed"):
        podexec.read_container_file(None, "ns", "pod", "c", "/f")  # type: ignore[arg-type]
