"""A tiny in-memory Kubernetes API server on 127.0.0.1 for the driver's REST paths.

It implements just what the fake driver calls (nodes get, resourceclaims get,
resourceslices list/create/update/delete, configmaps list/watch/create/patch)
with resourceVersions, field selectors and chunked watch streams, so the real
kubernetes client and the real driver process can be exercised offline.
"""

from __future__ import annotations

import copy
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

ROUTES = [
    ("node", re.compile(r"^/api/v1/nodes/(?P<name>[^/]+)$")),
    (
        "claim",
        re.compile(
            r"^/apis/resource\.k8s\.io/v1/namespaces/(?P<ns>[^/]+)/resourceclaims/(?P<name>[^/]+)$"
        ),
    ),
    ("slices", re.compile(r"^/apis/resource\.k8s\.io/v1/resourceslices$")),
    ("slice", re.compile(r"^/apis/resource\.k8s\.io/v1/resourceslices/(?P<name>[^/]+)$")),
    ("configmaps", re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/configmaps$")),
    ("configmap", re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/configmaps/(?P<name>[^/]+)$")),
]


def _field_value(obj: dict[str, Any], path: str) -> Any:
    value: Any = obj
    for part in path.split("."):
        value = (value or {}).get(part)
    return value


def _matches(obj: dict[str, Any], selector: str) -> bool:
    for term in filter(None, selector.split(",")):
        key, _, want = term.partition("=")
        if str(_field_value(obj, key)) != want:
            return False
    return True


class FakeApiServer:
    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.store: dict[str, dict[str, dict[str, Any]]] = {
            "node": {},
            "claim": {},
            "slice": {},
            "configmap": {},
        }
        self.rv = 100
        self.events: list[tuple[int, str, dict[str, Any]]] = []  # configmap events
        self.requests: list[dict[str, Any]] = []
        self.stopping = False
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self) -> FakeApiServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()

    def kubeconfig(self, path: Path, token: str = "test-token") -> Path:
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
                    "users": [{"name": "u", "user": {"token": token}}],
                    "contexts": [{"name": "c", "context": {"cluster": "fake", "user": "u"}}],
                    "current-context": "c",
                }
            )
        )
        return path

    # -- store -----------------------------------------------------------------

    def put(self, kind: str, obj: dict[str, Any], event: str | None = None) -> dict[str, Any]:
        with self.cond:
            self.rv += 1
            obj = copy.deepcopy(obj)
            meta = obj.setdefault("metadata", {})
            meta["resourceVersion"] = str(self.rv)
            meta.setdefault("uid", f"uid-{self.rv}")
            key = f"{meta.get('namespace', '')}/{meta['name']}"
            existed = key in self.store[kind]
            self.store[kind][key] = obj
            if kind == "configmap":
                self.events.append(
                    (self.rv, event or ("MODIFIED" if existed else "ADDED"), copy.deepcopy(obj))
                )
            self.cond.notify_all()
            return copy.deepcopy(obj)

    def get(self, kind: str, name: str, namespace: str = "") -> dict[str, Any] | None:
        with self.cond:
            obj = self.store[kind].get(f"{namespace}/{name}")
            return copy.deepcopy(obj) if obj else None

    def items(self, kind: str) -> list[dict[str, Any]]:
        with self.cond:
            return [copy.deepcopy(o) for o in self.store[kind].values()]

    def wait_for(self, predicate, timeout: float = 20.0) -> Any:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                value = predicate()
                if value:
                    return value
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("condition not reached in the fake API server")
                self.cond.wait(min(remaining, 0.2))

    # -- HTTP ------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _status(self, code: int, reason: str) -> None:
                self._reply(
                    code,
                    {
                        "kind": "Status",
                        "status": "Failure",
                        "code": code,
                        "reason": reason,
                        "message": reason,
                    },
                )

            def _body(self) -> dict[str, Any]:
                length = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(length)) if length else {}

            def _dispatch(self, method: str) -> None:
                url = urlparse(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                body = self._body() if method in ("POST", "PUT", "PATCH") else None
                with server.cond:
                    server.requests.append(
                        {
                            "method": method,
                            "path": url.path,
                            "query": query,
                            "authorization": self.headers.get("Authorization"),
                            "content_type": self.headers.get("Content-Type"),
                            "body": body,
                        }
                    )
                for route, pattern in ROUTES:
                    match = pattern.match(url.path)
                    if match:
                        return getattr(self, f"_{route}")(method, query, body, **match.groupdict())
                self._status(404, "NotFound")

            def do_GET(self) -> None:  # noqa: N802
                self._dispatch("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._dispatch("POST")

            def do_PUT(self) -> None:  # noqa: N802
                self._dispatch("PUT")

            def do_PATCH(self) -> None:  # noqa: N802
                self._dispatch("PATCH")

            def do_DELETE(self) -> None:  # noqa: N802
                self._dispatch("DELETE")

            def _one(self, kind: str, name: str, ns: str = "") -> None:
                obj = server.get(kind, name, ns)
                self._reply(200, obj) if obj else self._status(404, "NotFound")

            def _node(self, method, query, body, name):
                self._one("node", name)

            def _claim(self, method, query, body, ns, name):
                self._one("claim", name, ns)

            def _list(self, kind: str, query: dict[str, str], ns: str | None = None) -> None:
                items = [
                    o
                    for o in server.items(kind)
                    if (ns is None or o["metadata"].get("namespace") == ns)
                    and _matches(o, query.get("fieldSelector", ""))
                ]
                self._reply(200, {"items": items, "metadata": {"resourceVersion": str(server.rv)}})

            def _slices(self, method, query, body):
                if method == "GET":
                    return self._list("slice", query)
                if server.get("slice", body["metadata"]["name"]):
                    return self._status(409, "AlreadyExists")
                self._reply(201, server.put("slice", body))

            def _slice(self, method, query, body, name):
                current = server.get("slice", name)
                if method == "GET":
                    return self._one("slice", name)
                if current is None:
                    return self._status(404, "NotFound")
                if method == "DELETE":
                    with server.cond:
                        server.store["slice"].pop(f"/{name}", None)
                        server.cond.notify_all()
                    return self._reply(200, {"kind": "Status", "status": "Success"})
                if (
                    body["metadata"].get("resourceVersion")
                    != current["metadata"]["resourceVersion"]
                ):
                    return self._status(409, "Conflict")
                self._reply(200, server.put("slice", body))

            def _configmaps(self, method, query, body, ns):
                if method == "POST":
                    if server.get("configmap", body["metadata"]["name"], ns):
                        return self._status(409, "AlreadyExists")
                    body["metadata"]["namespace"] = ns
                    return self._reply(201, server.put("configmap", body))
                if query.get("watch") not in ("true", "1", "True"):
                    return self._list("configmap", query, ns)
                self._watch(query, ns)

            def _configmap(self, method, query, body, ns, name):
                current = server.get("configmap", name, ns)
                if method == "GET":
                    return self._one("configmap", name, ns)
                if current is None:
                    return self._status(404, "NotFound")
                if method == "PATCH":
                    current.setdefault("data", {}).update(body.get("data") or {})
                    return self._reply(200, server.put("configmap", current))
                if (
                    body["metadata"].get("resourceVersion")
                    != current["metadata"]["resourceVersion"]
                ):
                    return self._status(409, "Conflict")
                body["metadata"]["namespace"] = ns
                self._reply(200, server.put("configmap", body))

            def _chunk(self, event: dict[str, Any]) -> None:
                data = (json.dumps(event) + "\n").encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def _watch(self, query: dict[str, str], ns: str) -> None:
                since = int(query.get("resourceVersion") or 0)
                deadline = time.monotonic() + float(query.get("timeoutSeconds") or 30)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                sent = since
                try:
                    while True:
                        with server.cond:
                            pending = [
                                (rv, kind, obj)
                                for rv, kind, obj in server.events
                                if rv > sent
                                and obj["metadata"].get("namespace") == ns
                                and _matches(obj, query.get("fieldSelector", ""))
                            ]
                            if not pending:
                                if server.stopping or time.monotonic() >= deadline:
                                    break
                                server.cond.wait(0.2)
                                continue
                        for rv, kind, obj in pending:
                            self._chunk({"type": kind, "object": obj})
                            sent = rv
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True

        return Handler
