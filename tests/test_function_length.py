"""No function over 60 lines anywhere in src/lazysparse (issue 26 for kernels/, issue 37
for the rest): long functions were each a pass, a printer or a solver doing several
things; they are split by what they do."""

from __future__ import annotations

import ast
from pathlib import Path

import lazysparse

ROOT = Path(lazysparse.__file__).parent
# the stages scanned must all be there: a moved or renamed one would silently scan less
STAGES = ("api", "engine", "optimizer", "logic", "formats", "kernels/compile",
          "kernels/backends", "sparse_linalg", "dask")
MAX_LINES = 60


def _long_in(source: str) -> list[tuple[str, int]]:
    """Functions (methods and nested ones too) over ``MAX_LINES`` lines, with their length."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines = node.end_lineno - node.lineno + 1  # type: ignore[operator]
            if lines > MAX_LINES:
                out.append((node.name, lines))
    return out


def _sources() -> list[Path]:
    """The modules scanned: every one under the package (each of ``STAGES`` must exist)."""
    missing = [f for f in STAGES if not (ROOT / f).is_dir()]
    assert not missing, f"stages to scan are gone: {missing}"
    return sorted(ROOT.rglob("*.py"))


def _long_functions() -> set[tuple[str, str, int]]:
    return {(path.relative_to(ROOT).as_posix(), name, lines)
            for path in _sources()
            for name, lines in _long_in(path.read_text())}


def test_no_long_functions_in_src() -> None:
    sources = _sources()
    for stage in STAGES:  # every stage is scanned, the top-level modules too
        assert any(p.parent.is_relative_to(ROOT / stage) for p in sources), stage
    assert ROOT / "__init__.py" in sources and len(sources) > 150
    found = _long_functions()
    assert not found, f"functions over {MAX_LINES} lines: {sorted(found)}"


def test_the_scan_finds_long_methods_and_nested_functions() -> None:
    body = "        x = 1\n" * MAX_LINES
    src = f"class C:\n    def m(self):\n{body}\ndef outer():\n    def inner():\n{body}"
    assert sorted(_long_in(src)) == [("inner", MAX_LINES + 1), ("m", MAX_LINES + 1),
                                     ("outer", MAX_LINES + 2)]
    assert _long_in("def f():\n" + "    x = 1\n" * (MAX_LINES - 1)) == []
