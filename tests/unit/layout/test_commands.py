"""Production code reaches Kubernetes through the Python client and Docker through the Docker
SDK: no `kubectl` or `docker` subprocess (helm, kind, go and the like stay commands). Read from
the source (pure: nothing is imported or run). The package layers are an import-linter contract
(pyproject.toml, tests/unit/layout/test_import_layers.py)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[3] / "conformance"
FORBIDDEN_COMMANDS = frozenset({"kubectl", "docker"})
SUBPROCESS_CALLS = frozenset(
    {"run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput"}
)
# Callables whose string argument names the program they return: shutil.which("docker").
PROGRAM_LOOKUPS = frozenset({"which", "tool"})


def _sources(root: Path) -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(root.rglob("*.py")):
        yield path, ast.parse(path.read_text(), filename=str(path))


def _assignments(scope: ast.AST) -> dict[str, list[ast.expr]]:
    """name -> every value assigned to it in `scope` (a module or function), for resolving
    `docker = shutil.which("docker"); subprocess.run([docker, ...])`."""
    found: dict[str, list[ast.expr]] = {}
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found.setdefault(target.id, []).append(node.value)
        elif (
            isinstance(node, ast.AnnAssign | ast.AugAssign)
            and node.value is not None
            and isinstance(node.target, ast.Name)
        ):
            found.setdefault(node.target.id, []).append(node.value)
    return found


def _programs(expr: ast.expr, names: dict[str, list[ast.expr]], depth: int = 0) -> set[str]:
    """The program names the first element of an argv expression can be."""
    if depth > 5:
        return set()
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return {Path(expr.value.split()[0] if expr.value.split() else "").name}
    if isinstance(expr, ast.List | ast.Tuple):
        return _programs(expr.elts[0], names, depth + 1) if expr.elts else set()
    if isinstance(expr, ast.Starred):
        return _programs(expr.value, names, depth + 1)
    if isinstance(expr, ast.BinOp):  # [tool] + args
        return _programs(expr.left, names, depth + 1)
    if isinstance(expr, ast.Call):
        func = expr.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if called in PROGRAM_LOOKUPS and expr.args:
            return _programs(expr.args[0], names, depth + 1)
        if called == "str" and expr.args:
            return _programs(expr.args[0], names, depth + 1)
        return set()
    if isinstance(expr, ast.Name):
        out: set[str] = set()
        for value in names.get(expr.id, ()):
            out |= _programs(value, names, depth + 1)
        return out
    return set()


def _is_subprocess_call(call: ast.Call) -> bool:
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr in SUBPROCESS_CALLS
        and isinstance(func.value, ast.Name)
        and func.value.id == "subprocess"
    )


def forbidden_commands(tree: ast.Module) -> list[str]:
    """`line N: runs docker` for every subprocess call whose argv starts with a forbidden
    program, the program resolved through literals, shutil.which/tool calls and local names."""
    module_names = _assignments(tree)
    scopes: list[ast.AST] = [
        n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    found: set[str] = set()
    for scope in [tree, *scopes]:
        names = {**module_names, **_assignments(scope)}
        for node in ast.walk(scope):
            if isinstance(node, ast.Call) and _is_subprocess_call(node):
                argv = node.args[0] if node.args else None
                for keyword in node.keywords:
                    if keyword.arg == "args":
                        argv = keyword.value
                if argv is None:
                    continue
                for program in _programs(argv, names) & FORBIDDEN_COMMANDS:
                    found.add(f"line {node.lineno}: runs {program}")
    return sorted(found)


# The checks can fail: each catches what it is for in a small sample.
@pytest.mark.parametrize(
    "source",
    [
        'import subprocess\nsubprocess.run(["kubectl", "get", "nodes"])\n',
        'import subprocess, shutil\ndef f():\n    d = shutil.which("docker")\n'
        '    subprocess.run([d, "info"])\n',
        'import subprocess\ndef f(tool):\n    cmd = [tool("kubectl"), "--kubeconfig", "k"]\n'
        '    subprocess.run([*cmd, "apply"], input="x")\n',
        'import subprocess\nsubprocess.check_output(args=["/usr/bin/docker", "ps"])\n',
    ],
)
def test_the_command_check_sees_kubectl_and_docker(source: str) -> None:
    assert forbidden_commands(ast.parse(source)) != []


def test_the_command_check_lets_other_tools_run() -> None:
    source = (
        "import subprocess\n"
        'subprocess.run(["helm", "upgrade"])\n'
        'subprocess.run([str(kind), "create", "cluster"])\n'
        'subprocess.run(["go", "build"])\n'
    )
    assert forbidden_commands(ast.parse(source)) == []


def test_no_kubectl_or_docker_subprocess_in_production_code() -> None:
    sources = list(_sources(PACKAGE))
    assert len(sources) > 50  # the walk found the package
    problems = {
        str(path.relative_to(PACKAGE.parent)): found
        for path, tree in sources
        if (found := forbidden_commands(tree))
    }
    assert problems == {}, "use the Kubernetes Python client / the Docker SDK instead"
