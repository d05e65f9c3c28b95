"""The differential tier of the CEL evaluator: one corpus of selectors (corpus.yaml, written
by generate.py), the API server's compile verdicts (dry-run creates) and the scheduler's
match verdicts (claims allocated on nodes that hold copies of real slices), compared with
what `conformance.cel` says.

| module | job |
|---|---|
| corpus | load corpus.yaml |
| compare | the comparisons (pure): agreements, and one line per disagreement |
| apiserver | the API server's compile verdict of each selector (server-side dry run) |
| scheduler | the scheduler's verdict of each selector on each node (real allocations) |
"""
