"""pytest plugin for bench/lease_books.py: the run keeps its device leases in the file book
(`tests/helpers/file_lease_book.py`, the book of the runs before the cluster's) instead of
the cluster's ConfigMaps. Loaded with `-p file_book_plugin`, bench/ on PYTHONPATH.

The book's directory is $DRA_BENCH_FILE_BOOK if set, else one in the run's harness directory.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

# the double lives with the project's tests, imported the way their conftest imports it
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from helpers.file_lease_book import FileLeaseBook  # noqa: E402

DIR_ENV = "DRA_BENCH_FILE_BOOK"


def book_directory(context: Any) -> Path:
    given = os.environ.get(DIR_ENV)
    return Path(given) if given else Path(context.harness_dir) / "file-lease-book"


def pytest_dra_lease_book(config: pytest.Config, context: Any) -> FileLeaseBook:
    return FileLeaseBook(book_directory(context))
