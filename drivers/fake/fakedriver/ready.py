"""Readiness marker: written once the kubelet registered the plugin and the
first ResourceSlices were published; ``python3 -m fakedriver.ready`` checks it
(the DaemonSet's readiness probe).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

DEFAULT_READY_FILE = "/tmp/fake-dra-ready.json"


def write_marker(path: str | Path, registered: bool, published: bool) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(
        json.dumps({"registered": registered, "published": published, "time": time.time()})
    )
    tmp.replace(path)


def clear_marker(path: str | Path) -> None:
    Path(path).unlink(missing_ok=True)


def check(path: str | Path) -> tuple[bool, str]:
    try:
        state = json.loads(Path(path).read_text())
    except FileNotFoundError:
        return False, f"{path} does not exist: not registered or nothing published yet"
    except (OSError, ValueError) as exc:
        return False, f"{path} unreadable: {exc}"
    missing = [k for k in ("registered", "published") if not state.get(k)]
    if missing:
        return False, f"not ready: {', '.join(missing)} pending"
    return True, "ready: registered with the kubelet and slices published"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m fakedriver.ready", description=__doc__)
    parser.add_argument(
        "--ready-file", default=os.environ.get("FAKE_DRA_READY_FILE", DEFAULT_READY_FILE)
    )
    args = parser.parse_args(argv)
    ok, message = check(args.ready_file)
    print(message)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
