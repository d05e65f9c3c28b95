"""Device selectors evaluated exactly as Kubernetes does: a small Go helper built from
`k8s.io/dynamic-resource-allocation/cel` (the package the API server validates selectors with
and the scheduler's allocator runs), driven from Python in batches.

| module      | owns                                                                       |
|-------------|----------------------------------------------------------------------------|
| `helper/`   | `main.go`: one JSON request on stdin (compile, match), one response out    |
| `build`     | building the helper from the Go module proxy, cached like kind and helm    |
| `evaluator` | `CelEvaluator` (compile problems with position, match verdicts), cached    |
| `selection` | a profile's selectors evaluated on devices: matches, kinds, device sets |

`cel_evaluator()` builds the helper on first use (a cold cache takes minutes) and returns the
process-wide evaluator. A compile problem is worded as the API server words it; a match
evaluated with an error (a missing attribute, a type mismatch) does not match, as the
allocator never allocates such a device.
"""

from conformance.cel.evaluator import CelEvaluator, CompileProblem, MatchResult, cel_evaluator

__all__ = ["CelEvaluator", "CompileProblem", "MatchResult", "cel_evaluator"]
