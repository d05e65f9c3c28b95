"""The fake driver's fixtures (tests/unit/fakedriver/conftest.py) for its API-server tests."""

from unit.fakedriver.conftest import catalog, harness, short_tmp  # noqa: F401 - found by name
