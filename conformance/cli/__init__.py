"""The `dra-conformance` command (`python -m conformance.cli` runs it too).

| module            | owns                                                              |
|-------------------|-------------------------------------------------------------------|
| `app`             | the parser, `main`, and the `cluster` subcommands                 |
| `driver_commands` | `driver`, `profile` and `run`: the commands that need a profile   |
| `run_verdict`     | `run`'s last line and exit code: this run's verdict, or none; signing |
| `sealed_run`      | what `run` hands pytest: refused options, paths and environment   |
| `gate_command`    | `gate`: two runs (two versions, or one and a baseline) compared   |
| `cleanup`         | `cleanup`: what a dead run left on the cluster                    |
| `verify_command`  | `verify`: re-check a published report (conformance/report/verify) |
| `argv`            | parsing (unknown arguments to pytest), dispatch (one error line, exit 2) |
| `image_command`   | `image`: build the suite's own image |
| `sonobuoy_command` | `sonobuoy-plugin`: the Sonobuoy plugin's process, its JUnit file |
| `matrix_command` | `matrix`: verified reports side by side, Markdown and HTML |
| `bundle_command` | `bundle save|load`: what a run builds, carried in one file |
"""

from conformance.cli.app import main

__all__ = ["main"]
