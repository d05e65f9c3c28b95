"""Objects the real-API-server tests write: a driver's plugin DaemonSet, as a vendor ships it."""

from __future__ import annotations

from typing import Any

PLUGIN_LABELS = {"app": "plugin"}


def plugin_daemonset(namespace: str, image: str) -> dict[str, Any]:
    """A DaemonSet named `plugin` with one container `plugin` running `image`."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "plugin", "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": PLUGIN_LABELS},
            "template": {
                "metadata": {"labels": PLUGIN_LABELS},
                "spec": {
                    "containers": [
                        {"name": "plugin", "image": image, "imagePullPolicy": "IfNotPresent"}
                    ]
                },
            },
        },
    }
