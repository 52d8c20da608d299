"""LazyArray's operators are defined on its class (``api/array/array_operators.py``), generated from
the operator registry when the class body runs: no ``setattr`` patching, no import cycle
closed inside a function, no class recognised by its name (issue 26 item 3). And they
behave as before: in-place updates, write-through views, reflected operands,
``NotImplemented`` for foreign types, NumPy's deferral to ``__array_ufunc__``."""

from __future__ import annotations

import ast
import importlib.util
import operator
import sys
from pathlib import Path

import numpy as np
import pytest

import lazysparse as xp
from lazysparse.api.array import array_operators
from lazysparse.api.array.array_operators import ArrayOperators, DunderKind
from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.logic.operators import ELEMENTWISE_FUNCTIONS
from tests.conftest import slow_except
from tests.test_local_imports import cycle_closing_local_imports

API = Path(array_operators.__file__).parent
REGISTRY_DUNDERS = {d for ef in ELEMENTWISE_FUNCTIONS.values() for d in ef.dunders}


def test_registry_declares_the_operators() -> None:
    assert len(REGISTRY_DUNDERS) == 46
    assert {"__add__", "__radd__", "__iadd__", "__eq__", "__neg__", "__invert__"} <= \
        REGISTRY_DUNDERS


def test_class_body_defines_every_registry_dunder(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh execution of the module (a class nobody else has touched) has them all in
    its own class dict: they exist at class definition, not patched in later."""
    spec = importlib.util.spec_from_file_location("fresh_array_operators",
                                                  API / "array_operators.py")
    assert spec is not None and spec.loader is not None
    fresh = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, fresh)  # dataclasses look their module up
    spec.loader.exec_module(fresh)
    own = vars(fresh.ArrayOperators)
    assert REGISTRY_DUNDERS <= set(own)
    assert {"__getitem__", "__setitem__", "__matmul__", "__rmatmul__", "__imatmul__", "T",
            "mT"} <= set(own)


def test_lazy_array_resolves_operators_to_the_mixin() -> None:
    for dunder in sorted(REGISTRY_DUNDERS):
        owner = next(c for c in LazyArray.__mro__ if dunder in vars(c))
        assert owner is ArrayOperators, dunder
    assert LazyArray.__hash__ is object.__hash__  # __eq__ builds an array; hash by identity


def _calls(tree: ast.AST, name: str) -> list[int]:
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name) and n.func.id == name]


def _is_type_name(node: ast.AST) -> bool:
    """Whether ``node`` is ``type(x).__name__`` (a class recognised by its name)."""
    return (isinstance(node, ast.Attribute) and node.attr == "__name__"
            and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "type")


def test_no_setattr_and_no_class_names_in_api() -> None:
    for path in sorted(API.glob("*.py")):
        tree = ast.parse(path.read_text())
        assert _calls(tree, "setattr") == [], path.name
        names = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Compare)
                 and any(_is_type_name(s) for s in [n.left, *n.comparators])]
        assert names == [], f"{path.name}: class recognised by name at lines {names}"


def test_no_cycle_closing_local_import_in_api() -> None:
    assert [f for f in cycle_closing_local_imports() if ".api." in f.split(" -> ")[0]] == []


@pytest.mark.parametrize(("dunder", "nargs", "kind"), [
    ("__neg__", 1, DunderKind.UNARY), ("__add__", 2, DunderKind.FORWARD),
    ("__radd__", 2, DunderKind.REFLECTED), ("__iand__", 2, DunderKind.IN_PLACE),
    ("__rshift__", 2, DunderKind.FORWARD), ("__rrshift__", 2, DunderKind.REFLECTED),
    ("__irshift__", 2, DunderKind.IN_PLACE), ("__eq__", 2, DunderKind.FORWARD)])
def test_dunder_kinds(dunder: str, nargs: int, kind: DunderKind) -> None:
    assert DunderKind.of(dunder, nargs) is kind


BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
          operator.mod, operator.pow, operator.eq, operator.ne, operator.lt, operator.le,
          operator.gt, operator.ge]
INT_BINARY = [operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift]


def _data(dtype: str) -> np.ndarray:
    a = np.array([[0, 1, 2], [3, 0, 5]], dtype=dtype)
    return a


# the fast tier: one arithmetic, division, comparison and bitwise operator and a shift
@pytest.mark.parametrize("fn", slow_except(BINARY + INT_BINARY, (
    operator.add, operator.truediv, operator.lt, operator.and_, operator.lshift)))
def test_forward_and_reflected_against_numpy(fn: object) -> None:
    dtype = "int64" if fn in INT_BINARY else "float64"
    a = _data(dtype)
    b = (a + 1).astype(dtype)
    x, y = xp.asarray(a, format="csr"), xp.asarray(b)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(np.asarray(fn(x, y)), fn(a, b))
        np.testing.assert_array_equal(np.asarray(fn(x, 2)), fn(a, 2))  # scalar operand
        np.testing.assert_array_equal(np.asarray(fn(2, y)), fn(2, b))  # reflected
        np.testing.assert_array_equal(np.asarray(fn(x, b)), fn(a, b))  # NumPy operand


@pytest.mark.parametrize(("fn", "dtype"), [(operator.neg, "float32"), (operator.pos, "int64"),
                                           (abs, "float64"), (operator.invert, "bool"),
                                           (operator.invert, "int32")])
def test_unary_against_numpy(fn: object, dtype: str) -> None:
    a = _data(dtype) if dtype != "bool" else _data("int64") > 1
    out = fn(xp.asarray(a, format="coo"))
    assert out.dtype == fn(a).dtype
    np.testing.assert_array_equal(np.asarray(out), fn(a))


def test_in_place_keeps_the_object_and_dtype() -> None:
    a = _data("float64")
    x = xp.asarray(a, format="csr")
    ident = id(x)
    x += 1
    x *= 2
    x -= np.ones(3)  # broadcast operand, not the target
    assert id(x) == ident and x.dtype == np.float64
    np.testing.assert_array_equal(np.asarray(x), (a + 1) * 2 - 1)
    i = xp.asarray(np.array([1, 2, 3], dtype=np.int32))
    i += 1
    assert i.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(i), [2, 3, 4])


def test_in_place_errors() -> None:
    x = xp.asarray(np.zeros(3))
    with pytest.raises(ValueError, match="__iadd__"):
        x += np.ones((2, 3))  # would broadcast the target
    b = xp.asarray(np.array([True, False]))
    with pytest.raises(TypeError):
        b += 1.5  # float result cannot be stored in bool


def test_in_place_writes_through_a_view() -> None:
    a = _data("float64")
    x = xp.asarray(a.copy())
    row = x[1]
    row += 10
    expected = a.copy()
    expected[1] += 10
    np.testing.assert_array_equal(np.asarray(x), expected)
    np.testing.assert_array_equal(np.asarray(row), expected[1])


@pytest.mark.parametrize("fmt", ["dense", "coo"])
def test_matmul_in_place_writes_through_a_view(fmt: str) -> None:
    """``v @= m`` on a view reaches its array, as ``v += 1`` does (NumPy's shared memory)."""
    a = np.arange(8.0).reshape(2, 2, 2)
    a[1, 0, 1] = 0.0
    x = xp.asarray(a.copy(), format=fmt)
    m = np.array([[2.0, 1.0], [0.0, 3.0]])
    v = x[0]
    v @= m
    expected = a.copy()
    w = expected[0]
    w @= m
    np.testing.assert_array_equal(np.asarray(x), expected)
    np.testing.assert_array_equal(np.asarray(v), expected[0])
    with pytest.raises(ValueError, match="@="):
        v @= np.ones((2, 3))  # would change the view's shape


def test_foreign_operands_return_not_implemented() -> None:
    x = xp.asarray(np.ones(3))
    assert x.__add__("a") is NotImplemented
    assert x.__radd__([1, 2, 3]) is NotImplemented
    assert x.__iadd__(object()) is NotImplemented
    assert x.__eq__(None) is NotImplemented
    assert x.__matmul__("a") is NotImplemented
    with pytest.raises(TypeError):
        x + "a"  # noqa: B018
    with pytest.raises(TypeError):
        x @= object()  # type: ignore[operator]


def test_numpy_left_operand_defers_to_lazysparse() -> None:
    a = np.arange(6.0).reshape(2, 3)
    x = xp.asarray(a, format="csr")
    for out, ref in ((a + x, a + a), (a < x, a < a), (np.float64(2) * x, 2 * a),
                     (a.T @ x, a.T @ a)):
        assert isinstance(out, LazyArray)
        np.testing.assert_array_equal(np.asarray(out), ref)


def test_empty_and_zero_d() -> None:
    e = xp.asarray(np.zeros((0, 3)))
    assert (e + 1).shape == (0, 3)
    z = xp.asarray(np.float64(3.0))
    assert float(-z) == -3.0 and bool(z == 3.0)
    nan = xp.full((2, 2), np.nan)
    np.testing.assert_array_equal(np.asarray(nan != nan), np.full((2, 2), True))
