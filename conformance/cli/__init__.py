"""The `dra-conformance` command (`python -m conformance.cli` runs it too).

| module            | owns                                                              |
|-------------------|-------------------------------------------------------------------|
| `app`             | the parser, `main`, and the `cluster` subcommands                 |
| `driver_commands` | `driver`, `profile` and `run`: the commands that need a profile   |
"""

from conformance.cli.app import main

__all__ = ["main"]
