# The two entry points of the README. Both bootstrap a fresh machine first (idempotent).
VENV ?= .venv
PROFILE ?= drivers/fake/profile.yaml
PYTEST_ARGS ?=
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: bootstrap conformance test lint

bootstrap:
	@bash scripts/bootstrap.sh

## Provision a kind cluster, install the fake driver, run the whole suite, write reports/<run>/
conformance: bootstrap
	$(VENV)/bin/dra-conformance run --profile $(PROFILE) -n 4

## The project's own tests: unit tests, then end-to-end tests on a real kind cluster; the
## broken-driver and chaos checks run side by side in two shards, each on a cluster of its own,
## and the upgrade gate with its in-place rehearsal (v1.36.3 -> v1.37.2), then the whole-suite
## run, in a third (scripts/run_tests.py); tests marked e2e_by_hand are left out
test: bootstrap
	$(VENV)/bin/python scripts/run_tests.py $(PYTEST_ARGS)

lint: bootstrap
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .
	PYTHONPATH=drivers/fake $(VENV)/bin/lint-imports --no-cache
