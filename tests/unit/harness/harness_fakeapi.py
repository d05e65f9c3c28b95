"""A tiny in-memory Kubernetes API server for unit tests of code that talks to the real
`kubernetes` client: generic list/get/create/delete/patch over JSON objects, equality label
selectors, `spec.driver`/`involvedObject.*` field selectors, `dryRun`, and hooks to inject
responses. Not a Kubernetes: it validates nothing it is not told to.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from kubernetes import client as k8s

from conformance.kube.client import K8sClients, clients_for

# path -> (group/version prefix, namespace, resource, name)
_PATH_RE = re.compile(
    r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
    r"(?:/namespaces/(?P<ns>[^/]+))?/(?P<resource>[a-z]+)(?:/(?P<name>[^/]+))?/?$"
)
_KINDS = {
    "namespaces": "Namespace",
    "pods": "Pod",
    "nodes": "Node",
    "events": "Event",
    "resourceclaims": "ResourceClaim",
    "resourceclaimtemplates": "ResourceClaimTemplate",
    "resourceslices": "ResourceSlice",
    "deviceclasses": "DeviceClass",
    "devicetaintrules": "DeviceTaintRule",
    "priorityclasses": "PriorityClass",
    "daemonsets": "DaemonSet",
    "deployments": "Deployment",
    "poddisruptionbudgets": "PodDisruptionBudget",
}

Handler = Callable[[str, str, dict[str, list[str]], Any], tuple[int, Any] | None]


def _get(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = obj.get(part) if isinstance(obj, dict) else None
    return obj


def _matches(obj: dict[str, Any], query: dict[str, list[str]]) -> bool:
    for selector_key, source in (("labelSelector", "labels"), ("fieldSelector", "fields")):
        for term in (query.get(selector_key, [""])[0] or "").split(","):
            if not term:
                continue
            if term.startswith("!"):  # label must be absent
                if term[1:] in (obj.get("metadata", {}).get("labels") or {}):
                    return False
                continue
            key, _, value = term.partition("=")
            actual = (
                (obj.get("metadata", {}).get("labels") or {}).get(key)
                if source == "labels"
                else _get(obj, key)
            )
            if actual != value:
                return False
    return True


class FakeAPI:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str | None, str], dict[str, Any]] = {}
        self.handlers: list[Handler] = []
        self.requests: list[tuple[str, str]] = []
        self.delete_hook: Callable[[dict[str, Any]], bool] | None = None  # True: keep (terminating)
        self.raw: dict[str, tuple[int, str]] = {  # path -> (status, body) for non-REST paths
            "/version": (200, '{"major": "1", "minor": "37", "gitVersion": "v1.37.2"}'),
        }
        api = self

        class _Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _body(self) -> Any:
                length = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(length)) if length else None

            def _send(self, status: int, body: Any) -> None:
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                ctype = "text/plain" if isinstance(body, str) else "application/json"
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str) -> None:
                url = urlparse(self.path)
                query = parse_qs(url.query)
                body = self._body() if method in ("POST", "PATCH", "PUT") else None
                api.requests.append((method, self.path))
                for handler in api.handlers:
                    answer = handler(method, url.path, query, body)
                    if answer is not None:
                        self._send(*answer)
                        return
                if url.path in api.raw:
                    self._send(*api.raw[url.path])
                    return
                self._send(*api.rest(method, url.path, query, body))

            def do_GET(self) -> None:  # noqa: N802
                self._handle("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._handle("POST")

            def do_DELETE(self) -> None:  # noqa: N802
                self._handle("DELETE")

            def do_PATCH(self) -> None:  # noqa: N802
                self._handle("PATCH")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def clients(self) -> K8sClients:
        configuration = k8s.Configuration()
        configuration.host = self.url
        return clients_for(k8s.ApiClient(configuration))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- the store ---------------------------------------------------------------------

    def add(self, resource: str, obj: dict[str, Any], gv: str = "v1") -> dict[str, Any]:
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", f"uid-{meta['name']}")
        meta.setdefault("resourceVersion", "1")
        self.objects[(gv, resource, meta.get("namespace"), meta["name"])] = obj
        return obj

    def get(
        self, resource: str, name: str, namespace: str | None = None, gv: str = "v1"
    ) -> dict[str, Any] | None:
        return self.objects.get((gv, resource, namespace, name))

    @staticmethod
    def _status(code: int, reason: str, message: str) -> tuple[int, Any]:
        return code, {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "reason": reason,
            "message": message,
            "code": code,
        }

    def rest(
        self, method: str, path: str, query: dict[str, list[str]], body: Any
    ) -> tuple[int, Any]:
        m = _PATH_RE.match(path)
        if not m:
            return self._status(404, "NotFound", f"no route {path}")
        gv = "v1" if m["core"] else f"{m['group']}/{m['version']}"
        resource, ns, name = m["resource"], m["ns"], m["name"]
        key = (gv, resource, ns, name)
        if method == "GET" and name is None:
            items = [
                o
                for (g, r, n, _), o in sorted(self.objects.items(), key=lambda kv: kv[0][3])
                if g == gv and r == resource and (ns is None or n == ns) and _matches(o, query)
            ]
            return 200, {
                "kind": _KINDS.get(resource, "X") + "List",
                "apiVersion": gv,
                "metadata": {"resourceVersion": "1"},
                "items": items,
            }
        if method == "GET":
            obj = self.objects.get(key)
            return (
                (200, obj) if obj else self._status(404, "NotFound", f"{resource} {name} not found")
            )
        if method == "POST":
            meta = body.setdefault("metadata", {})
            if "generateName" in meta and "name" not in meta:
                meta["name"] = meta["generateName"] + "x1"
            if ns:
                meta["namespace"] = ns
            if "dryRun" in query:
                return 201, body
            if (gv, resource, ns, meta["name"]) in self.objects:
                return self._status(409, "AlreadyExists", f"{resource} {meta['name']} exists")
            return 201, self.add(resource, body, gv)
        if method == "DELETE":
            obj = self.objects.get(key)
            if obj is None:
                return self._status(404, "NotFound", f"{resource} {name} not found")
            if self.delete_hook and self.delete_hook(obj):
                obj["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:00Z"
            else:
                del self.objects[key]
                if resource == "namespaces":  # a namespace takes its objects with it
                    for other in [k for k in self.objects if k[2] == name]:
                        del self.objects[other]
            return 200, {"kind": "Status", "apiVersion": "v1", "status": "Success"}
        if method == "PATCH":
            obj = self.objects.get(key)
            if obj is None:
                return self._status(404, "NotFound", f"{resource} {name} not found")
            _merge(obj, body)
            return 200, obj
        return self._status(405, "MethodNotAllowed", method)


def _merge(target: dict[str, Any], patch: dict[str, Any]) -> None:
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        elif isinstance(v, dict) and isinstance(target.get(k), dict):
            _merge(target[k], v)
        else:
            target[k] = v


def node(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}}}


def namespace(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": labels or {}},
    }


def device_class(name: str, *expressions: str, extended: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": e}} for e in expressions]}
    if extended:
        spec["extendedResourceName"] = extended
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": spec,
    }


def resource_slice(
    name: str,
    driver: str,
    node_name: str,
    devices: list[dict[str, Any]],
    generation: int = 1,
    pool: str | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": driver,
            "nodeName": node_name,
            "pool": {"name": pool or node_name, "generation": generation, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def slice_device(name: str, domain: str, **attributes: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    capacity: dict[str, Any] = {}
    for key, value in attributes.items():
        if key == "memory":
            capacity[f"{domain}/memory"] = {"value": value}
        elif isinstance(value, bool):
            attrs[f"{domain}/{key}"] = {"bool": value}
        elif isinstance(value, int):
            attrs[f"{domain}/{key}"] = {"int": value}
        else:
            attrs[f"{domain}/{key}"] = {"string": value}
    return {"name": name, "attributes": attrs, "capacity": capacity}
