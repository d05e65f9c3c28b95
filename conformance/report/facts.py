"""What the report says about the run's driver and cluster, and the run's identity.

The conformance plugin fills a `RunFacts` once per run (after it has read the profile and the
cluster) with `set_run_facts(config, facts)`; the report only reads it. Every field is optional:
a report written without facts (unit tests, a run that failed before reaching the cluster) simply
says "unknown".
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

RUN_FACTS_KEY = pytest.StashKey["RunFacts"]()
RUN_ID_KEY = pytest.StashKey[str]()

# Keys in xdist's `workerinput` (controller -> workers).
WORKERINPUT_RUN_ID = "dra_run_id"
WORKERINPUT_RUN_DIR = "dra_run_dir"
WORKERINPUT_RUN_FACTS = "dra_run_facts"

RUN_ID_ENV = "DRA_CONFORMANCE_RUN_ID"


@dataclass(frozen=True)
class RunFacts:
    """Driver and cluster facts of one run, read once by the plugin."""

    driver_name: str = ""
    profile_path: str = ""
    profile_digest: str = ""  # "sha256:<hex>" of the profile file; computed if left empty
    cluster_provider: str = ""  # "kind" | "existing"
    cluster_name: str = ""
    kubernetes_version: str = ""  # server gitVersion, e.g. "v1.37.2"
    # each at least {"name": ...}; read from the cluster: devices, kubelet_version,
    # container_runtime_version, os_image, kernel_version, node_image (kind: ref, image_id,
    # repo_digests, built_here)
    nodes: tuple[dict[str, Any], ...] = ()
    nodes_error: str = ""  # why a node's facts are missing ("" when none is)
    feature_gates: dict[str, bool] = field(default_factory=dict)
    served_dra_apis: tuple[str, ...] = ()  # e.g. ("resource.k8s.io/v1", "resource.k8s.io/v1beta2")
    # How a cluster built here differs from upstream's build (a refused module stood in for).
    build_notes: tuple[str, ...] = ()
    capabilities: tuple[str, ...] = ()  # the profile's capability names
    fault_kinds: tuple[str, ...] = ()  # the fault kinds the profile can inject
    extra: dict[str, Any] = field(default_factory=dict)
    setup_problem: str = ""  # what kept the run from testing the driver (e.g. never ready)
    # What the report names as the driver it certified (conformance/plugin/driver_identity.py).
    # Each {container, image, image_id, digest, pods[]} the driver's pods run, as the kubelet
    # reports it (conformance/kube/driver_images.py):
    driver_images: tuple[dict[str, Any], ...] = ()
    driver_images_error: str = ""  # why `driver_images` is empty ("" when it is not)
    # {"method": "helm", chart, version, image, applied} | {"method": "manifests", image,
    # manifests[] {path, sha256}, applied} | {"method": "preinstalled"}; empty when unknown.
    # applied: from what the run's install applied (conformance/install/installer.py)
    driver_install: dict[str, Any] = field(default_factory=dict)
    profile_text: str = ""  # the profile as read, credentials redacted

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["nodes"] = [dict(n) for n in self.nodes]
        data["served_dra_apis"] = list(self.served_dra_apis)
        data["build_notes"] = list(self.build_notes)
        data["capabilities"] = list(self.capabilities)
        data["fault_kinds"] = list(self.fault_kinds)
        data["driver_images"] = [dict(i) for i in self.driver_images]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunFacts:
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        if "nodes" in values:
            values["nodes"] = tuple(
                n if isinstance(n, dict) else {"name": str(n)} for n in values["nodes"] or ()
            )
        for name in ("served_dra_apis", "build_notes", "capabilities", "fault_kinds"):
            if name in values:
                values[name] = tuple(values[name] or ())
        if "feature_gates" in values:
            values["feature_gates"] = dict(values["feature_gates"] or {})
        if "driver_images" in values:
            values["driver_images"] = tuple(dict(i) for i in values["driver_images"] or ())
        if "driver_install" in values:
            values["driver_install"] = dict(values["driver_install"] or {})
        return cls(**values)

    def with_profile_digest(self) -> RunFacts:
        """The same facts, with `profile_digest` computed from the file when it is missing."""
        if self.profile_digest or not self.profile_path:
            return self
        try:
            digest = hashlib.sha256(Path(self.profile_path).read_bytes()).hexdigest()
        except OSError:
            return self
        return dataclasses.replace(self, profile_digest=f"sha256:{digest}")


def set_run_facts(config: pytest.Config, facts: RunFacts) -> None:
    """Store the run's facts (called by the conformance plugin, on every process)."""
    config.stash[RUN_FACTS_KEY] = facts


def get_run_facts(config: pytest.Config) -> RunFacts | None:
    """The run's facts from the stash, `config._dra_run_facts` or xdist's workerinput; or None."""
    facts: Any = config.stash.get(RUN_FACTS_KEY, None)
    if facts is None:
        facts = getattr(config, "_dra_run_facts", None)
    if facts is None:
        facts = getattr(config, "workerinput", {}).get(WORKERINPUT_RUN_FACTS)
    if facts is None:
        return None
    if isinstance(facts, dict):
        facts = RunFacts.from_dict(facts)
    if not isinstance(facts, RunFacts):
        return None
    return facts.with_profile_digest()


def new_run_id() -> str:
    """A sortable, unique run id: `20261202-101500-3fa2c1`."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def get_run_id(config: pytest.Config) -> str:
    """The run id, the same in the controller and every xdist worker.

    Order: already chosen for this config; xdist workerinput (set by the controller);
    the `--dra-run-id` option if a plugin defines it; `$DRA_CONFORMANCE_RUN_ID`; a new id.
    """
    run_id = config.stash.get(RUN_ID_KEY, None)
    if run_id:
        return run_id
    run_id = getattr(config, "workerinput", {}).get(WORKERINPUT_RUN_ID)
    if not run_id:
        try:
            run_id = config.getoption("dra_run_id", None)
        except ValueError:
            run_id = None
    run_id = run_id or os.environ.get(RUN_ID_ENV) or new_run_id()
    config.stash[RUN_ID_KEY] = run_id
    return run_id
