"""pytest plugin entry point (placeholder while the harness is written; inert)."""
