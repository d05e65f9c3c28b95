"""Where the suite's own files are: scenarios/, drivers/fake/ and the runs' pytest config."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
# A wheel (`pip install .` without -e) carries them in conformance/_suite (pyproject.toml,
# [tool.setuptools]); a checkout, and an editable install of it, has them next to the package.
SUITE_ROOT = _PACKAGE / "_suite" if (_PACKAGE / "_suite").is_dir() else _PACKAGE.parent


def bundled(path: str) -> str:
    """`path` as given when it exists, else the suite's own file of that name if there is one:
    `--profile drivers/fake/profile.yaml` works outside a checkout too."""
    if Path(path).exists() or Path(path).is_absolute() or not (SUITE_ROOT / path).is_file():
        return path
    return str(SUITE_ROOT / path)
