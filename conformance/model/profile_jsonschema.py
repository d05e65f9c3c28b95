"""The profile's JSON Schema (docs/profile.schema.json), generated from its typed schema so an
editor can check a profile as it is written:

    # yaml-language-server: $schema=<path or URL of docs/profile.schema.json>

`python -m conformance.model.profile_jsonschema` (or `dra-conformance profile schema`) prints
it; a unit test keeps the committed file current. The schema checks the form of each field;
what it cannot say (a path that must exist, a capability that needs its section, a regular
expression that must compile) only `dra-conformance profile check` reports.
"""

from __future__ import annotations

import json
from typing import Any

from conformance.model.profile_parse import ProfileDocument

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def profile_schema() -> dict[str, Any]:
    schema = ProfileDocument.model_json_schema(by_alias=True, mode="validation")
    return {"$schema": DIALECT, **schema}


def render() -> str:
    return json.dumps(profile_schema(), indent=2) + "\n"


def main() -> None:
    print(render(), end="")


if __name__ == "__main__":
    main()
