"""The field manager every object the harness writes carries: `dra-conformance`.

Two layers. Each write passes `field_manager=FIELD_MANAGER` (server-side apply, create, patch);
and every API client the harness makes sends the User-Agent `dra-conformance/<version>`, from
which the API server names the manager of a write that passes none (the user agent up to its
first "/"), so a call that forgets the argument is still ours and never the client library's
default `OpenAPI-Generator`, which a vendor's tooling could not tell from its own scripts.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

FIELD_MANAGER = "dra-conformance"


def _version() -> str:
    try:
        return importlib.metadata.version("dra-conformance")
    except importlib.metadata.PackageNotFoundError:
        return "dev"


USER_AGENT = f"{FIELD_MANAGER}/{_version()} (python)"


def identify(api_client: Any) -> Any:
    """`api_client` sending the harness's User-Agent (returned for chaining)."""
    api_client.user_agent = USER_AGENT
    return api_client
