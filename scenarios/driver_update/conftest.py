"""Fixtures of the driver-update suite: change the pod template of the driver's kubelet-plugin
DaemonSet (profile readiness.daemonSet), follow the rollout node by node, and always put the
original template back, waiting until it is rolled out and the driver is ready again. The
fields the change took from the DaemonSet's managers (the image Helm applied) go back to them,
so the vendor's next `helm upgrade` or server-side apply meets no conflict with the harness.

Lease: a rolling update replaces the plugin pod of every node, so the tests lease the cluster
whole (`dra_devices(..., exclusive=True)`: run last, alone); a node lease would leave other
tests' claims to be prepared by a plugin that is being replaced.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from conformance.kube import rollout
from conformance.kube.client import K8sClients
from conformance.kube.daemonsets import wait_driver_ready
from conformance.kube.waits import wait_until
from conformance.model.outcome import not_run
from conformance.observe.steps import step
from conformance.run.context import RunContext

UPDATE_ANNOTATION = "dra-conformance.io/update"


class DriverUpdates:
    """Pod-template changes of the profile's kubelet-plugin DaemonSet; `restore()` undoes them."""

    def __init__(self, context: RunContext, k8s: K8sClients) -> None:
        readiness = context.profile.readiness
        if not (readiness.daemonset_name and readiness.daemonset_namespace):
            not_run(
                "the profile names no readiness.daemonSet, so the driver's kubelet plugin "
                "cannot be updated",
                "set readiness.daemonSet {namespace, name} in the profile (docs/profile.md)",
            )
        self.context = context
        self.k8s = k8s
        self.namespace: str = readiness.daemonset_namespace
        self.name: str = readiness.daemonset_name
        self.ref = f"DaemonSet {self.namespace}/{self.name}"
        daemonset = rollout.read_daemonset(k8s, self.namespace, self.name)
        strategy = rollout.update_strategy(daemonset)
        if strategy != "RollingUpdate":
            not_run(
                f"{self.ref} has spec.updateStrategy.type {strategy}: a template change is not "
                "rolled out by the DaemonSet controller",
                "run the driver with updateStrategy RollingUpdate for this requirement",
            )
        self.original: dict[str, Any] = daemonset["spec"]["template"]
        self.original_owners = rollout.managed_fields(daemonset)
        self.changed = False
        self.changes = 0

    def container(self) -> str:
        """The plugin container an image change goes to: the profile's, else the first."""
        return (
            self.context.profile.readiness.update_container
            or self.original["spec"]["containers"][0]["name"]
        )

    def start(
        self, what: str, *, image: str | None = None, pull_policy: str | None = None
    ) -> rollout.RolloutWatch:
        """Change the template (a fresh annotation, and `image`/`pull_policy` on the plugin
        container if given); returns the watch that follows the rollout it starts."""
        self.changes += 1
        template = rollout.changed_template(
            self.original,
            annotations={UPDATE_ANNOTATION: f"{self.context.run_id}-{self.changes}"},
            container=self.container(),
            image=image,
            pull_policy=pull_policy,
        )
        watch = rollout.RolloutWatch.before(self.k8s, self.namespace, self.name)
        with step(f"update {self.ref}: {what}"):
            self.changed = True
            watch.start(rollout.set_template(self.k8s, self.namespace, self.name, template))
        return watch

    def wait_rolled_out(self, watch: rollout.RolloutWatch, what: str) -> rollout.RolloutWatch:
        return wait_until(
            watch.observe,
            lambda w: w.done,
            describe=f"the rollout of {self.ref} ({what}) to finish on every node",
            timeout=self.context.timeout("driverReady"),
            interval=0.5,
            show=lambda w: w.summary(),
        )

    def restore(self) -> None:
        """The original template back, rolled out, and the driver ready (slices on every node)."""
        with step(f"restore the original pod template of {self.ref}"):
            watch = rollout.RolloutWatch.before(self.k8s, self.namespace, self.name)
            watch.start(rollout.set_template(self.k8s, self.namespace, self.name, self.original))
            # At once, so a rollout that never finishes still leaves the vendor's tooling free.
            rollout.give_back_ownership(self.k8s, self.namespace, self.name, self.original_owners)
            self.wait_rolled_out(watch, "the original template")
            wait_driver_ready(
                self.k8s, self.context.profile, timeout=self.context.timeout("driverReady")
            )
            self.changed = False  # else the fixture's teardown tries again


def new_plugin_nodes(watch: rollout.RolloutWatch) -> Mapping[str, rollout.NodeRollout]:
    """The nodes whose plugin pod the rollout replaced."""
    return {n: s for n, s in watch.nodes.items() if s.ready_at is not None}


@pytest.fixture
def driver_updates(
    dra_context: RunContext, k8s: K8sClients, device_lease: Any
) -> Iterator[DriverUpdates]:
    updates = DriverUpdates(dra_context, k8s)
    try:
        yield updates
    finally:
        if updates.changed:
            updates.restore()
