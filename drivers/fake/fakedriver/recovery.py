"""What a driver puts right at start, from its checkpoint: CDI specs of claims it does not know
are removed, and lost specs of claims it does know are written again."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from fakedriver.cdi import CdiSpecStore
from fakedriver.checkpoint import PreparedClaim
from fakedriver.metadata import MetadataStore

log = logging.getLogger(__name__)


def remove_orphan_specs(
    cdi: CdiSpecStore, metadata: MetadataStore | None, prepared: Mapping[str, PreparedClaim]
) -> list[str]:
    """Remove the CDI specs of claims the checkpoint does not know: garbage of a crash between
    spec write and checkpoint save, as real drivers remove at start. With a lost checkpoint
    this removes the specs of running containers too, so they cannot start again - what a
    checkpoint is for. The removed specs, by claim UID or file name."""
    removed = [uid for uid in cdi.claim_uids() if uid not in prepared]
    for uid in removed:
        cdi.remove(uid)
    known = {Path(c.cdi_spec) for c in prepared.values()}
    for path in cdi.device_named():
        if path not in known:
            path.unlink(missing_ok=True)
            removed.append(path.name)
    for uid, paths in (metadata.spec_uids() if metadata else {}).items():
        if uid not in prepared:
            for path in paths:
                path.unlink(missing_ok=True)
                removed.append(path.name)
    return removed


def lost_specs(prepared: Mapping[str, PreparedClaim]) -> tuple[list[PreparedClaim], dict]:
    """The claims whose CDI spec is gone (a reboot emptied /run, the checkpoint survived) and
    the lost device metadata specs, by path."""
    lost = [c for c in prepared.values() if not Path(c.cdi_spec).exists()]
    lost_metadata = {
        path: spec
        for claim in prepared.values()
        for path, spec in claim.metadata_specs.items()
        if not Path(path).exists()
    }
    return lost, lost_metadata


def rewrite_specs(cdi: CdiSpecStore, lost: list[PreparedClaim], lost_metadata: dict) -> list[str]:
    """Write the lost specs again: a container of a running pod that restarts gets no new
    prepare, the runtime resolves the claim's CDI devices from these files alone."""
    rewritten = []
    for claim in lost:
        if claim.cdi_document is None:  # a checkpoint older than the stored spec
            log.warning("cannot write the lost CDI spec of %s: not checkpointed", claim.uid)
            continue
        cdi.write_to(Path(claim.cdi_spec), claim.cdi_document)
        rewritten.append(claim.uid)
    for path, spec in lost_metadata.items():
        cdi.write_to(Path(path), spec)
        rewritten.append(Path(path).name)
    if rewritten:
        log.info("wrote the lost CDI spec(s) of %s again", ", ".join(rewritten))
    return rewritten
