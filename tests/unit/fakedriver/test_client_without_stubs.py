"""The harness side of the fake driver (its control client and fault injector) imports where
the generated gRPC stubs are not installed: an installed suite ships no stubs."""

from __future__ import annotations

import subprocess
import sys

BLOCK_STUBS = """
import sys
class NoStubs:
    def find_spec(self, name, path=None, target=None):
        if name == "fakedriver._gen" or name.startswith("fakedriver._gen."):
            raise ImportError("no generated stubs here")
sys.meta_path.insert(0, NoStubs())
import fakedriver.client.faults, fakedriver.controls
print("imported")
"""


def test_the_client_imports_without_the_generated_stubs() -> None:
    result = subprocess.run(
        [sys.executable, "-c", BLOCK_STUBS], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0 and "imported" in result.stdout, result.stderr[-3000:]
