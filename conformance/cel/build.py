"""The selector helper as a Go component: our `helper/main.go` built against
k8s.io/dynamic-resource-allocation from the Go module proxy, cached under
`<cache>/bin/dra-cel-<version>-<key>/` (the key covers main.go's content)."""

from __future__ import annotations

import os
from pathlib import Path

from conformance import gobuild
from conformance.errors import BuildError, HostError
from conformance.progress import Progress

# The dynamic-resource-allocation module of Kubernetes v1.37.2, the release the suite targets.
DRA_MODULE = "k8s.io/dynamic-resource-allocation"
DRA_MODULE_VERSION = "v0.37.2"
BINARY = "dra-cel"
MAIN_SOURCE = Path(__file__).parent / "helper" / "main.go"
# A helper built elsewhere (the suite's image carries one: a pod has no Go toolchain).
PREBUILT_ENV = "DRA_CEL_HELPER"


def helper_component() -> gobuild.GoComponent:
    return gobuild.GoComponent(
        name=BINARY,
        version=DRA_MODULE_VERSION,
        module=DRA_MODULE,
        packages=(".",),
        binaries=(BINARY,),
        main_source=MAIN_SOURCE,
    )


def helper_binary(progress: Progress) -> Path:
    """The built helper, building it on first use (cold: a few minutes on 2 cores);
    `$DRA_CEL_HELPER` when set."""
    prebuilt = os.environ.get(PREBUILT_ENV)
    if prebuilt:
        if not Path(prebuilt).is_file():
            raise HostError(
                f"${PREBUILT_ENV} names {prebuilt}, which is not a file",
                f"unset {PREBUILT_ENV} to build the helper with Go, or point it at the binary",
            )
        return Path(prebuilt)
    component = helper_component()
    try:
        return gobuild.build(component, progress) / BINARY
    except (BuildError, HostError) as exc:
        first = exc.problem.strip().splitlines()[0] if exc.problem.strip() else type(exc).__name__
        raise HostError(
            f"cannot build the selector evaluator ({DRA_MODULE}@{DRA_MODULE_VERSION}) with Go "
            f"from the Go module proxy: {first}",
            "install Go >= 1.26 on PATH and make the Go module proxy reachable (GOPROXY), "
            "then retry",
        ) from exc
