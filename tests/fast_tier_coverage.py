"""Which source modules the fast tier leaves unexercised (CONTRIBUTING.md, "Test tiers").

The fast tier (``-m "not slow"``) must run code of every module of ``src/lazysparse``, not
only import it. This script runs the tier once in one process under coverage.py and lists the
modules where no line inside a function body ran; its exit status is 1 when there is one.
coverage.py is not a test dependency: install it into a throwaway environment, or a folder put
on ``PYTHONPATH`` (never into the project's venv)::

    pip install --target /tmp/covpkg coverage
    PYTHONPATH=src:/tmp/covpkg python -m tests.fast_tier_coverage               # run, check
    PYTHONPATH=src:/tmp/covpkg python -m tests.fast_tier_coverage --data FILE   # check FILE

With ``--data`` an existing data file is checked, without running the tests again. A
module without functions that run in Python (a package ``__init__``; helpers all under a
Numba decorator, whose bodies coverage never sees) needs only to have been imported.
Subprocesses the tests start are not measured.
"""

from __future__ import annotations

import argparse
import ast
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "lazysparse"
#: decorators whose functions run compiled: their bodies never show in coverage
COMPILED_DECORATORS = frozenset({"njit", "jit", "helper_jit", "vectorize", "generated_jit"})
#: modules the fast tier runs only in a child process, which coverage does not follow:
#: the module, and the fast tests that run it
CHILD_ONLY = {"lazysparse.__main__": "tests/test_warm.py (python -m lazysparse warm with an "
                                     "unknown operation)"}


def _decorator_name(node: ast.expr) -> str:
    """The bare name of a decorator (``numba.njit(cache=True)`` -> ``njit``)."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _compiled_decorators(tree: ast.Module) -> set[str]:
    """Numba's decorators and the module-level names bound to one of them
    (``_jit = njit(cache=False)``)."""
    names = set(COMPILED_DECORATORS)
    for node in tree.body:
        if isinstance(node, ast.Assign) and _decorator_name(node.value) in COMPILED_DECORATORS:
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def body_lines(source: str) -> tuple[set[int], bool]:
    """The first lines of the statements inside function bodies of ``source``, and whether
    it defines a function at all that runs in Python (not under a Numba decorator)."""
    lines: set[int] = set()
    python_functions = False
    tree = ast.parse(source)
    compiled = _compiled_decorators(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if {_decorator_name(d) for d in node.decorator_list} & compiled:
            continue
        python_functions = True
        for stmt in node.body:
            lines.update(s.lineno for s in ast.walk(stmt) if isinstance(s, ast.stmt))
    return lines, python_functions


def module_name(path: Path, root: Path) -> str:
    """``lazysparse.a.b`` for ``root/a/b.py`` (a package's ``__init__`` is the package)."""
    parts = (root.name,) + path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unexercised(executed: Mapping[Path, Iterable[int]], root: Path = SRC) -> list[str]:
    """The modules under ``root`` with no function-body line in ``executed`` (the lines run,
    by resolved file path); a module without Python functions needs only to have run, an
    empty one (no statement) has nothing to run."""
    missing = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if not ast.parse(text).body:
            continue
        ran = set(executed.get(path.resolve(), ()))
        lines, python_functions = body_lines(text)
        if not (ran & lines if python_functions else ran):
            missing.append(module_name(path, root))
    return missing


def _executed(data_file: Path) -> dict[Path, set[int]]:
    """The lines a coverage data file records as run, by resolved source path."""
    import coverage  # not a test dependency: only this script needs it

    data = coverage.CoverageData(basename=str(data_file))
    data.read()
    return {Path(f).resolve(): set(data.lines(f) or ()) for f in data.measured_files()}


def _run_fast_tier(data_file: Path, pytest_args: list[str]) -> int:
    """Run the fast tier in this process under coverage of ``src/lazysparse``."""
    import coverage
    import pytest

    cov = coverage.Coverage(data_file=str(data_file), source=[str(SRC)], branch=False)
    cov.start()
    try:
        status = pytest.main(["-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                              "-m", "not slow", str(ROOT / "tests"), *pytest_args])
    finally:
        cov.stop()
        cov.save()
    return int(status)


def main(argv: list[str] | None = None) -> int:
    """Run (or read) a fast-tier coverage run and report the unexercised modules."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, help="check this coverage data file, run nothing")
    ap.add_argument("pytest_args", nargs="*", help="more pytest arguments for the run")
    args = ap.parse_args(argv)
    data_file = args.data or Path(tempfile.gettempdir()) / "lazysparse-fast-tier.coverage"
    if args.data is None:
        status = _run_fast_tier(data_file, args.pytest_args)
        if status not in (0, 1):
            print(f"the fast tier did not complete (pytest status {status})")
            return 2
    missing = [m for m in unexercised(_executed(data_file)) if m not in CHILD_ONLY]
    for name, where in CHILD_ONLY.items():
        print(f"run in a child process only (not measured): {name}: {where}")
    for name in missing:
        print(f"not exercised by the fast tier: {name}")
    print(f"{len(missing)} of {len(list(SRC.rglob('*.py')))} modules unexercised")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
