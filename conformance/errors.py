"""Errors the CLI turns into a clear message: what is wrong, and what to do next."""

from __future__ import annotations


class ConformanceError(Exception):
    """Base class: `problem` says what is wrong, `remedy` what the user should do."""

    def __init__(self, problem: str, remedy: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.remedy = remedy

    def __str__(self) -> str:
        return f"{self.problem}\n  -> {self.remedy}" if self.remedy else self.problem


class HostError(ConformanceError):
    """The machine lacks something (engine, tool, permission)."""


class BuildError(ConformanceError):
    """A build stage failed; `problem` names the stage and carries a log excerpt."""


class ClusterError(ConformanceError):
    """The cluster could not be created, reached or used."""
