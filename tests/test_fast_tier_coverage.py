"""The fast tier's module check (``tests/fast_tier_coverage.py``) on a small package: a
module counts as exercised only when a line of one of its Python function bodies ran."""

from __future__ import annotations

from pathlib import Path

from tests.fast_tier_coverage import SRC, body_lines, module_name, unexercised

MOD = '''"""A module."""
import math

CONST = 1


def used(x):
    """Runs."""
    y = x + 1
    return y


class Thing:
    def method(self):
        return 2
'''
COMPILED = '''from numba import njit


@njit(cache=True)
def kernel(x):
    return x + 1
'''


def _package(tmp_path: Path) -> Path:
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text('"""The package."""\n')
    (root / "sub" / "__init__.py").write_text("")
    (root / "a.py").write_text(MOD)
    (root / "b.py").write_text(MOD)
    (root / "sub" / "c.py").write_text(COMPILED)
    return root


def test_body_lines_are_the_function_statements_only() -> None:
    lines, python_functions = body_lines(MOD)
    assert python_functions
    assert lines == {8, 9, 10, 15}  # docstring, y = ..., return y; the method's return
    assert body_lines(COMPILED) == (set(), False)


def test_import_alone_does_not_count_a_body_line_does(tmp_path: Path) -> None:
    root = _package(tmp_path)
    a, b = (root / "a.py").resolve(), (root / "b.py").resolve()
    imported = [1, 2, 4, 7, 13, 14]  # what running the module's top level records
    executed = {a: [*imported, 9], b: imported, (root / "__init__.py").resolve(): [1]}
    # b only imported, the compiled module never; the empty sub/__init__ has nothing to run
    assert unexercised(executed, root) == ["pkg.b", "pkg.sub.c"]
    executed[(root / "sub" / "c.py").resolve()] = [1, 4]
    executed[b] = [*imported, 15]
    assert unexercised(executed, root) == []


def test_a_name_bound_to_njit_is_a_compiled_decorator() -> None:
    aliased = ("from numba import njit\n\n_jit = njit(cache=False)\n\n\n"
               "@_jit\ndef f(a):\n    return a\n")
    assert body_lines(aliased) == (set(), False)


def test_module_names_follow_the_package() -> None:
    assert module_name(SRC / "__init__.py", SRC) == "lazysparse"
    assert module_name(SRC / "kernels" / "compile" / "__init__.py", SRC) == \
        "lazysparse.kernels.compile"
    assert module_name(SRC / "api" / "lazy_array.py", SRC) == "lazysparse.api.lazy_array"
