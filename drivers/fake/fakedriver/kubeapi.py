"""Plain JSON REST calls through the official kubernetes client.

The driver works on raw camelCase dicts (what the API server sends) rather
than the pydantic models of kubernetes 37.x: it only needs a handful of fields,
and raw dicts survive new API fields without a client upgrade. Authentication,
TLS and token refresh still come from the client's ApiClient.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator, Mapping
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

log = logging.getLogger(__name__)

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"


class ApiError(Exception):
    """A non-2xx answer; ``status`` is the HTTP code (0 if none)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        return self.status == 409


def load_api_client(kubeconfig: str | None = None) -> client.ApiClient:
    """In-cluster config when running in a pod, else a kubeconfig."""
    if kubeconfig:
        config.load_kube_config(config_file=kubeconfig)
    else:
        try:
            config.load_incluster_config()
        except config.ConfigException:
            config.load_kube_config()
    return client.ApiClient()


def _error_from(exc: ApiException) -> ApiError:
    message = exc.reason or ""
    body = exc.body
    if body:
        try:
            message = json.loads(body).get("message", message)
        except (ValueError, AttributeError):
            message = str(body)[:500]
    return ApiError(int(exc.status or 0), message)


class KubeRest:
    """Minimal JSON REST access: request() for calls, stream() for watches."""

    def __init__(
        self, api_client: client.ApiClient, timeout: float = 30.0, connect_timeout: float = 1.0
    ) -> None:
        self._api = api_client
        # Connecting has a short timeout of its own: right after a node restart the service
        # address of the API server drops packets until kube-proxy has rewritten its rules, and
        # one connect that waited out the whole read timeout (30 s) held the plugin's first
        # publish that long; a fresh connection a second later gets through (on a healthy
        # network a connect takes milliseconds: the kernel answers it, however busy the server).
        self._timeout = (connect_timeout, timeout)
        self._connect_timeout = connect_timeout

    def _send(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None,
        body: Any,
        content_type: str,
        timeout: Any,
    ) -> Any:
        headers = {"Accept": JSON}
        if body is not None:
            headers["Content-Type"] = content_type
        params = [
            (k, str(v).lower() if isinstance(v, bool) else v) for k, v in (query or {}).items()
        ]
        method, url, headers, body, _ = self._api.param_serialize(
            method=method,
            resource_path=path,
            query_params=params,
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        try:
            response = self._api.call_api(
                method, url, header_params=headers, body=body, _request_timeout=timeout
            )
        except ApiException as exc:
            raise _error_from(exc) from exc
        if not 200 <= response.status <= 299:
            response.read()
            text = response.data.decode("utf-8", "replace") if response.data else ""
            with contextlib.suppress(ValueError, AttributeError):
                text = json.loads(text).get("message", text)
            raise ApiError(response.status, text)
        return response

    def request(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = JSON,
    ) -> dict[str, Any]:
        response = self._send(method, path, query, body, content_type, self._timeout)
        response.read()
        return json.loads(response.data) if response.data else {}

    def get(self, path: str, query: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return self.request("GET", path, query)

    def stream(self, path: str, query: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        """Yield the JSON events of a watch request until the server ends it."""
        server_timeout = float(query.get("timeoutSeconds", 300))
        # Read timeout a little above the server-side watch timeout, so a
        # silent connection is noticed without cutting healthy watches short.
        response = self._send(
            "GET", path, query, None, JSON, (self._connect_timeout, server_timeout + 30.0)
        )
        try:
            for line in iter_resp_lines(response.response):
                if line.strip():
                    yield json.loads(line)
        finally:
            response.response.release_conn()
