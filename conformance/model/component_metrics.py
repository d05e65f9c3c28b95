"""What lets the API server's pod proxy read kube-scheduler's and kube-controller-manager's
/metrics: the kind clusters the suite creates run both with these arguments, and a report of
another cluster names them where it could not read a component.

kubeadm starts both with --bind-address=127.0.0.1 (the proxy's connection to the pod's address
is refused) and authorizes every path but the health checks through a SubjectAccessReview. The
proxy forwards no credentials, so the request is anonymous: their delegated authentication
always admits anonymous requests (k8s.io/apiserver DelegatingAuthenticationOptions.ApplyTo),
and listing /metrics among the paths that skip authorization is all it takes.
"""

from __future__ import annotations

# The defaults of --authorization-always-allow-paths, kept: kubeadm's probes read them.
ALWAYS_ALLOWED = ("/healthz", "/readyz", "/livez", "/metrics")

READABLE_METRICS_ARGS: dict[str, str] = {
    "bind-address": "0.0.0.0",
    "authorization-always-allow-paths": ",".join(ALWAYS_ALLOWED),
}


def enable_hint() -> str:
    """What the operator runs a component with so that a run can measure it."""
    flags = " and ".join(f"--{name}={value}" for name, value in READABLE_METRICS_ARGS.items())
    return f"to measure it, run it with {flags}"
