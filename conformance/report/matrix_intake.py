"""Which reports may enter the matrix: each is checked with `verify`'s own code first.

A report enters signed when one of the given public keys verifies it (exit 0 of `verify`),
unsigned when its files agree with each other and the suite but no given key signed it (exit 3
of `verify`: anyone editing them consistently could have written it), and only when the caller
allows unsigned reports. A report that does not verify never enters, nor does one whose
signature fails with a key that signed it: that is a report changed after signing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.report.matrix import SIGNED, UNSIGNED
from conformance.report.signing import ATTESTATION_FILE
from conformance.report.verify import (
    UNSIGNED_EXIT,
    VERIFIED_EXIT,
    ReportInputError,
    load_report,
    selection_scope,
    verify_report,
)

OTHER_KEY = "signed with a different key"


@dataclass(frozen=True)
class Accepted:
    path: Path
    summary: Mapping[str, Any]
    trust: str  # SIGNED | UNSIGNED
    scope: str  # verify's: whole suite, partial (...), narrowed selection (...)


@dataclass(frozen=True)
class Refused:
    path: Path
    reason: str  # one line

    @property
    def line(self) -> str:
        return f"{self.path}: refused, {self.reason}"


def check_report(
    path: Path, keys: Sequence[bytes] = (), allow_unsigned: bool = False
) -> Accepted | Refused:
    try:
        for key in keys if (Path(path) / ATTESTATION_FILE).is_file() else ():
            result = verify_report(path, public_key=key)
            if result.exit_code == VERIFIED_EXIT:
                return _accepted(path, SIGNED)
            if OTHER_KEY not in result.line:
                return Refused(path, result.line)
        result = verify_report(path)
    except ReportInputError as exc:
        return Refused(path, exc.problem)
    if result.exit_code != UNSIGNED_EXIT:
        return Refused(path, result.line)
    if not allow_unsigned:
        signed = " with no --key given" if not keys else " by none of the --key given"
        return Refused(
            path,
            f"unsigned{signed}: its files only agree with each other; give the signer's "
            "public key with --key, or accept it marked unsigned with --allow-unsigned",
        )
    return _accepted(path, UNSIGNED)


def _accepted(path: Path, trust: str) -> Accepted:
    summary = load_report(path).summary
    return Accepted(path, summary, trust, selection_scope(summary))


def check_reports(
    paths: Sequence[Path], keys: Sequence[bytes] = (), allow_unsigned: bool = False
) -> tuple[list[Accepted], list[Refused]]:
    """Every report checked (all refusals are reported at once); one given twice is refused."""
    accepted: list[Accepted] = []
    refused: list[Refused] = []
    runs: dict[str, Path] = {}
    for path in paths:
        result = check_report(Path(path), keys, allow_unsigned)
        if isinstance(result, Refused):
            refused.append(result)
            continue
        run_id = str((result.summary.get("run") or {}).get("id") or "")
        if run_id in runs:
            refused.append(Refused(result.path, f"the same run as {runs[run_id]}; give it once"))
            continue
        runs[run_id] = result.path
        accepted.append(result)
    return accepted, refused
