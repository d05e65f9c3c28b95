"""The in-cluster account of deploy/chart/ rendered by helm for chosen suites (`helm template`),
as the documents a test applies."""

from __future__ import annotations

import subprocess
from typing import Any

import yaml

from conformance.install.helm import helm_tool
from conformance.progress import Progress
from conformance.suite_root import SUITE_ROOT

CHART = SUITE_ROOT / "deploy/chart"


def render_account(
    namespace: str,
    suites: tuple[str, ...],
    *,
    account: str | None = None,
    create_namespace: bool = False,
) -> list[dict[str, Any]]:
    name = account or namespace
    command = [helm_tool(Progress()), "template", name, str(CHART), "--namespace", namespace]
    command += ["--set", f"suites={{{','.join(suites)}}}"]
    command += ["--set", f"serviceAccount={account}"] if account else []
    command += ["--set", "createNamespace=true"] if create_namespace else []
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"helm template {CHART}: {done.stderr}"
    return [d for d in yaml.safe_load_all(done.stdout) if d]
