"""No function over 60 lines in kernels/ (compile/ and backends/, issue 26): long functions
there were each a pass or a printer doing several things; they are split by what they do."""

from __future__ import annotations

import ast
from pathlib import Path

import lazysparse

ROOT = Path(lazysparse.__file__).parent
FOLDERS = ("kernels/compile", "kernels/backends")
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
    """The modules scanned: every one under ``FOLDERS`` (each folder must exist)."""
    missing = [f for f in FOLDERS if not (ROOT / f).is_dir()]
    assert not missing, f"folders to scan are gone: {missing}"
    return [path for folder in FOLDERS for path in sorted((ROOT / folder).rglob("*.py"))]


def _long_functions() -> set[tuple[str, str, int]]:
    return {(path.relative_to(ROOT).as_posix(), name, lines)
            for path in _sources()
            for name, lines in _long_in(path.read_text())}


def test_no_long_functions_in_compile_and_backends() -> None:
    assert len(_sources()) > 50  # the whole stage: a moved folder would scan nothing
    found = _long_functions()
    assert not found, f"functions over {MAX_LINES} lines: {sorted(found)}"


def test_the_scan_finds_long_methods_and_nested_functions() -> None:
    body = "        x = 1\n" * MAX_LINES
    src = f"class C:\n    def m(self):\n{body}\ndef outer():\n    def inner():\n{body}"
    assert sorted(_long_in(src)) == [("inner", MAX_LINES + 1), ("m", MAX_LINES + 1),
                                     ("outer", MAX_LINES + 2)]
    assert _long_in("def f():\n" + "    x = 1\n" * (MAX_LINES - 1)) == []
