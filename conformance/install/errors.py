"""The error every install step raises: what failed, and what to do about it."""

from __future__ import annotations

from conformance.errors import ConformanceError


class InstallError(ConformanceError):
    """The driver could not be installed, or did not become ready."""
