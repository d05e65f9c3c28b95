"""The repository's root conftest: deliberately empty.

Nothing is shared between the project's own tests (`tests/`) and the scenario suites
(`scenarios/`), and nothing should be: the scenarios are the product (a wheel carries them, and
this file, under conformance/_suite), `tests/` is not shipped, and a fixture here would be seen
by both and tie one to the other.

The plugin is not registered here either. The `pytest11` entry point `dra_conformance`
(pyproject.toml) registers `conformance.plugin` once, in every environment the package is
installed in (a checkout's editable install, a wheel, a vendor's CI), for runs in this
repository and outside it alike; inert without `--dra-profile`. Naming it here as well, in
`pytest_plugins`, makes pytest stop at start-up ("Plugin already registered under a different
name"). tests/unit/plugin/test_registration.py checks both.

Where things live instead:

| file                    | what it holds                                    | loaded for          |
|-------------------------|--------------------------------------------------|---------------------|
| `conformance/plugin/`   | `--dra-*` options, `dra_*` markers, set-up,      | every pytest run    |
|                         | collection, fixtures (`dra_context`, `k8s`,      | of an environment   |
|                         | `build`, `test_namespace`, `device_lease`, ...)  | that has the suite  |
| `scenarios/conftest.py` | what scenario tests share: `workload`, `profile` | the scenario suites |
| `tests/conftest.py`     | the test API server, CEL evaluator and tallies   | the project's tests |
"""
