"""The notes file of `dra-conformance matrix` and the command's bad input: one line, exit 2,
nothing written. Also: docs/drivers.md is the command's output and its notes load."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.cli import app
from conformance.model.requirements import load_catalog
from conformance.report.catalog import DEFAULT_CATALOG
from conformance.report.matrix_markdown import MARKER, TITLE
from conformance.report.matrix_notes import Note, NotesError, load_notes, parse_notes
from conformance.suite_root import SUITE_ROOT

GOOD = {
    "schema": 1,
    "drivers": {
        "gpu.example.com": {
            "DRA-REBOOT-001": {
                "kind": "driver-bug",
                "link": "https://github.com/kubernetes/kubernetes/issues/141433",
                "text": "CDI specs   not re-created\nafter a reboot",
            }
        }
    },
}


def test_a_note_is_read_with_its_text_on_one_line() -> None:
    notes = parse_notes(GOOD, "n.yaml")
    assert notes == {
        "gpu.example.com": {
            "DRA-REBOOT-001": Note(
                "driver-bug",
                "CDI specs not re-created after a reboot",
                "https://github.com/kubernetes/kubernetes/issues/141433",
            )
        }
    }
    assert notes["gpu.example.com"]["DRA-REBOOT-001"].label == "driver bug"


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"kind": "bug", "text": "x"}, "kind 'bug'; one of driver-bug, device-limitation"),
        ({"kind": "suite-bug"}, "text missing"),
        ({"kind": "driver-bug", "text": "x"}, "a driver-bug needs its link"),
        ({"kind": "suite-bug", "text": "x", "link": "http://x"}, "is not an https:// address"),
        ({"kind": "suite-bug", "text": "x", "owner": "me"}, "unknown field 'owner'"),
        ("driver bug", "give a mapping with kind, text and link"),
    ],
)
def test_a_bad_note_names_its_entry(entry, message: str) -> None:
    with pytest.raises(NotesError) as err:
        parse_notes({"schema": 1, "drivers": {"d": {"DRA-CORE-001": entry}}}, "n.yaml")
    assert str(err.value).startswith("n.yaml: drivers.d.DRA-CORE-001: ")
    assert message in str(err.value)


@pytest.mark.parametrize(
    "data, message",
    [
        ([], "give a mapping with `schema: 1`"),
        ({"schema": 2, "drivers": {}}, "give a mapping with `schema: 1`"),
        ({"schema": 1, "drivers": {"d": {"DRA-CORE-001": {}}}}, "kind 'missing'; one of"),
        (
            {"schema": 1, "drivers": {"d": {"core-1": {"kind": "suite-bug", "text": "x"}}}},
            "drivers.d.core-1: not a requirement ID",
        ),
        ({"schema": 1, "drivers": {"d": []}}, "drivers.d must map requirement IDs"),
        ({"schema": 1, "extra": 1}, "unknown key 'extra'"),
    ],
)
def test_a_bad_notes_file_says_what_is_wrong(data, message: str) -> None:
    with pytest.raises(NotesError, match=message):
        parse_notes(data, "n.yaml")


def _main(capsys, *argv: str) -> tuple[int, list[str]]:
    code = app.main(["matrix", *argv])
    err = capsys.readouterr().err
    return code, err.splitlines()


def test_bad_notes_yaml_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    notes = tmp_path / "notes.yaml"
    notes.write_text("schema: 1\ndrivers: {a: [\n")
    out = tmp_path / "m.md"
    code, lines = _main(capsys, str(tmp_path), "--notes", str(notes), "--markdown", str(out))
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"dra-conformance: error: --notes {notes}: not YAML at line ")
    assert not out.exists()


def test_every_bad_report_is_refused_on_its_line_and_nothing_is_written(
    tmp_path: Path, capsys
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "m.html"
    code, lines = _main(capsys, str(tmp_path / "gone"), str(empty), "--html", str(out))
    assert code == 2 and not out.exists()
    assert lines == [
        f"dra-conformance: error: {tmp_path / 'gone'}: refused, {tmp_path / 'gone'}: no such "
        "report directory; give a run's directory (reports/<run>)",
        f"dra-conformance: error: {empty}: refused, {empty / 'summary.json'}: missing; a report "
        "directory holds summary.json and junit.xml",
    ]


def test_an_unreadable_key_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    code, lines = _main(capsys, str(tmp_path), "--key", str(tmp_path / "no.pem"))
    assert code == 2 and lines[0].startswith(f"dra-conformance: error: --key {tmp_path}/no.pem")


def test_help_names_the_options(capsys) -> None:
    with pytest.raises(SystemExit) as done:
        app.main(["matrix", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert done.value.code == 0
    for word in ("--markdown FILE", "--html FILE", "--notes NOTES.yaml", "--allow-unsigned"):
        assert word in text
    assert "a report that does not verify is refused" in text


def test_docs_drivers_md_is_the_commands_output_and_its_notes_load() -> None:
    text = (SUITE_ROOT / "docs/drivers.md").read_text()
    assert text.splitlines()[:2] == [MARKER, TITLE]
    notes = load_notes(SUITE_ROOT / "docs/drivers-notes.yaml")
    catalog = {r.id for r in load_catalog(DEFAULT_CATALOG).requirements}
    assert notes and all(set(by_id) <= catalog for by_id in notes.values())
    tables = [line for line in text.splitlines() if line.startswith("| ")]
    assert any(line.startswith("| **verdict** |") for line in tables)
