"""Readiness marker: written once the kubelet registered the plugin and the
first ResourceSlices were published. `ReadinessServer` answers the DaemonSet's HTTP
readiness probe from it (GET /readyz), and its liveness probe from a check of the plugin's
sockets when given one (GET /livez, fakedriver.liveness); ``python3 -m fakedriver.ready``
checks the marker by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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


READY_PATH = "/readyz"
LIVE_PATH = "/livez"

Check = Callable[[], tuple[bool, str]]


class ReadinessServer:
    """GET /readyz: 200 while the marker says registered and published, else 503 with the
    reason. An HTTP probe costs the kubelet one request where an exec probe started a process
    in the container, so the DaemonSet can probe every second and a restarted plugin counts as
    ready about a second after it is, not up to a probe period later. GET /livez (with
    `liveness`): 200 while that check passes, else 503 with its one-line reason."""

    def __init__(
        self, port: int, ready_file: str | Path, host: str = "", liveness: Check | None = None
    ) -> None:
        marker = Path(ready_file)
        routes: dict[str, Check] = {READY_PATH: lambda: check(marker)}
        if liveness is not None:
            routes[LIVE_PATH] = liveness

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server hook's name
                probe = routes.get(self.path.split("?", 1)[0])
                if probe is None:
                    self._answer(404, f"not found; the probe paths are {', '.join(routes)}")
                    return
                ok, message = probe()
                self._answer(200 if ok else 503, message)

            def _answer(self, code: int, message: str) -> None:
                body = (message + "\n").encode()
                self.send_response(code)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass  # one probe a second would drown the driver's log

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> ReadinessServer:
        threading.Thread(target=self._server.serve_forever, name="readyz", daemon=True).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


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
