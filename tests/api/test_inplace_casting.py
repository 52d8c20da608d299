"""Casting on writes, against NumPy on the dense equivalent.

In-place operators (``+= … >>=``, ``@=``) follow NumPy's ``same_kind`` rule: a result that
cannot be stored (``int_arr /= 1.5``, ``float_arr += 1j``) is a TypeError and nothing is
written, neither into the array nor into the array it is a view of. ``__setitem__`` casts
as NumPy's assignment does, scalars and arrays alike; where NumPy would only warn
(``ComplexWarning``: complex into a real array) lazysparse raises a TypeError.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import lazysparse as xp
from tests.conftest import slow_except

DTYPES = ["bool", "int8", "int64", "uint8", "float32", "float64", "complex128"]
SCALARS: list[Any] = [True, 2, 2.5, 1j]
OPS: dict[str, Callable[[Any, Any], Any]] = {
    "+=": operator.iadd, "-=": operator.isub, "*=": operator.imul,
    "/=": operator.itruediv, "//=": operator.ifloordiv, "%=": operator.imod,
    "**=": operator.ipow, "@=": operator.imatmul, "&=": operator.iand, "|=": operator.ior,
    "^=": operator.ixor, "<<=": operator.ilshift, ">>=": operator.irshift,
}
SPARSE = ["csr", "coo", "csf"]

# targets hold zeros (sparse storage has something to skip); operands never do (no division
# by zero) and are small (no overflowing powers or shifts)
TARGET = np.array([[1, 0], [3, 2]])
BASE = np.array([[5, 0], [1, 0], [3, 2]])  # a view is BASE[1:3], the values of TARGET
OPERAND = np.array([[2, 1], [1, 3]])


def _cast(a: np.ndarray, dtype: str) -> np.ndarray:
    return a.astype(dtype)


def _operand(spec: Any, ndim: int) -> Any:
    """An operand: a Python scalar, or a NumPy array of dtype ``spec`` (as given to both)."""
    if not isinstance(spec, str):
        return spec
    return _cast(OPERAND if ndim == 2 else OPERAND[1, 1], spec)


_ERRORS = (TypeError, ValueError, OverflowError)


def _error_class(e: BaseException) -> type[BaseException]:
    """The builtin class of NumPy's exception (``UFuncTypeError`` is a TypeError)."""
    return next(c for c in _ERRORS if isinstance(e, c))


def _numpy_in_place(fn: Callable[[Any, Any], Any], target: np.ndarray, y: Any
                    ) -> type[BaseException] | None:
    """Apply ``fn`` to NumPy ``target`` in place; the exception class it raises, if any."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            out = fn(target, y)
    except _ERRORS as e:
        return _error_class(e)
    assert out is target or out.base is target
    return None


def _lazy_operand(y: Any) -> Any:
    return xp.asarray(y) if isinstance(y, np.ndarray) else y


def _check_in_place(opname: str, dtype: str, spec: Any, fmt: str, mode: str) -> None:
    """``x {op}= y`` on lazysparse (``fmt``, ``mode``) and on NumPy: same raise or not;
    on success the same values and dtype (the view's base too); on refusal nothing
    written."""
    if opname in ("<<=", ">>=") and spec in ("bool", True):
        pytest.skip("shifts take integers only (the standard's kinds; NumPy takes bools)")
    fn = OPS[opname]
    if mode == "0-d":
        base_np, target_np = None, np.array(TARGET[1, 0]).astype(dtype)
        x = xp.asarray(target_np.copy())
        y = _operand(spec, 0)
    elif mode == "view":
        base_np = _cast(BASE, dtype)
        base = xp.asarray(base_np.copy(), format=fmt)
        target_np = base_np[1:3]
        x = base[1:3]
        y = _operand(spec, 2)
    else:
        base_np, target_np = None, _cast(TARGET, dtype)
        x = xp.asarray(target_np.copy(), format=fmt)
        y = _operand(spec, 2)
    before = target_np.copy()
    base_before = None if base_np is None else base_np.copy()
    raised = _numpy_in_place(fn, target_np, y)
    obj = x
    if raised is not None:
        with pytest.raises(raised):
            fn(x, _lazy_operand(y))
        assert x.dtype == before.dtype
        np.testing.assert_array_equal(np.asarray(x), before)  # nothing written
        if base_np is not None:
            np.testing.assert_array_equal(np.asarray(base), base_before)
        return
    out = fn(x, _lazy_operand(y))
    assert out is obj and out.dtype == target_np.dtype
    np.testing.assert_allclose(np.asarray(out), target_np, rtol=1e-6)
    if base_np is not None:
        np.testing.assert_allclose(np.asarray(base), base_np, rtol=1e-6)


# --- in-place operators: every dtype pair and operator on dense arrays -------------------

@pytest.mark.parametrize("mode", ["plain", "view"])
@pytest.mark.parametrize("spec", DTYPES + SCALARS, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("opname", list(OPS))
def test_in_place_dense_matches_numpy(opname: str, dtype: str, spec: Any, mode: str) -> None:
    if opname == "@=" and not isinstance(spec, str):
        pytest.skip("a scalar operand of @= is an error in both, of different classes")
    _check_in_place(opname, dtype, spec, "dense", mode)


@pytest.mark.parametrize("spec", DTYPES + SCALARS, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("opname", [o for o in OPS if o != "@="])
def test_in_place_zero_d_matches_numpy(opname: str, dtype: str, spec: Any) -> None:
    _check_in_place(opname, dtype, spec, "dense", "0-d")


# --- sparse formats: the pairs that decide the rule, every operator --------------------

# (target dtype, operand): refused (float into int, complex into float, signed into
# unsigned) and stored (narrowed within a kind, weak scalars keeping the array's dtype)
SPARSE_PAIRS = [("int64", "float64"), ("int64", 2.5), ("float64", 1j), ("uint8", "int8"),
                ("bool", 2), ("int8", "int64"), ("float32", "float64"), ("float32", 2.5),
                ("bool", "bool")]


# each format plainly and through a view, without every combination (kernels compile)
SPARSE_MODES = [("csr", "plain"), ("csr", "view"), ("coo", "plain"), ("csf", "view")]
# the fast tier: a view and a plain array, each kind of cast (int->float, complex, narrowing)
FAST_MODES = [("csr", "view"), ("coo", "plain")]
FAST_PAIRS = [("int64", "float64"), ("float64", 1j), ("uint8", "int8"), ("bool", 2),
              ("float32", 2.5)]


@pytest.mark.parametrize(("fmt", "mode"), slow_except(SPARSE_MODES, FAST_MODES), ids=str)
@pytest.mark.parametrize(("dtype", "spec"), slow_except(SPARSE_PAIRS, FAST_PAIRS), ids=str)
@pytest.mark.parametrize("opname", list(OPS))
def test_in_place_sparse_matches_numpy(opname: str, dtype: str, spec: Any, fmt: str,
                                       mode: str) -> None:
    if opname == "@=" and not isinstance(spec, str):
        pytest.skip("a scalar operand of @= is an error in both, of different classes")
    _check_in_place(opname, dtype, spec, fmt, mode)


@pytest.mark.parametrize("fmt", ["dense", *SPARSE, "csc", "dcsr"])
def test_refusal_names_operator_and_dtypes_and_writes_nothing(fmt: str) -> None:
    """The issue's cases: ``/= 1.5`` and ``+= 1.5`` on ints, ``+= 1j`` on floats, through
    an integer view ``c[0]`` too (its base keeps its values)."""
    x = xp.asarray(np.array([[2, 4], [0, 6]]), format=fmt)
    with pytest.raises(TypeError, match=r"/=.*float64.*int64.*same_kind"):
        x /= 1.5
    with pytest.raises(TypeError, match=r"\+=.*float64.*int64"):
        x += 1.5
    np.testing.assert_array_equal(np.asarray(x), [[2, 4], [0, 6]])
    f = xp.asarray(np.array([[1.0, 0.0], [0.0, 2.0]]), format=fmt)
    with pytest.raises(TypeError, match=r"complex128.*float64"):
        f += 1j
    np.testing.assert_array_equal(np.asarray(f), [[1.0, 0.0], [0.0, 2.0]])
    c = xp.asarray(np.array([[1, 0], [3, 2]]), format=fmt)
    v = c[0]
    with pytest.raises(TypeError, match=r"\+=.*float64.*int64"):
        v += 1.5
    np.testing.assert_array_equal(np.asarray(v), [1, 0])
    np.testing.assert_array_equal(np.asarray(c), [[1, 0], [3, 2]])
    v += 2  # a weak Python int keeps int64, written through
    np.testing.assert_array_equal(np.asarray(c), [[3, 2], [3, 2]])


def test_weak_scalars_keep_the_array_dtype() -> None:
    f32 = xp.asarray(np.array([1.0, 2.0], dtype=np.float32))
    f32 += 1.0
    f32 *= 3
    assert f32.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(f32), np.array([6.0, 9.0], dtype=np.float32))
    i8 = xp.asarray(np.array([1, 2], dtype=np.int8))
    i8 += 2
    assert i8.dtype == np.int8
    with pytest.raises(OverflowError, match="300"):
        i8 += 300  # out of range for int8 (NumPy 2 raises too)
    np.testing.assert_array_equal(np.asarray(i8), [3, 4])


# --- __setitem__: NumPy's assignment casts, scalars and arrays alike -------------------

SET_SCALARS: list[Any] = [True, 2, 300, -1, 2.7, -1.5, 1j, 1 + 0j, float("nan"),
                          float("inf"), np.float64(1.5), np.complex128(1j), np.int8(-1)]
KEYS: dict[str, Any] = {"item": (0, 1), "slice": (slice(None), 1),
                        "mask": np.array([[False, True], [True, False]])}


def _numpy_setitem(a: np.ndarray, key: Any, value: Any) -> type[BaseException] | None:
    """``a[key] = value`` in NumPy, a ComplexWarning counted as the TypeError lazysparse
    raises instead; the exception class, if any."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", np.exceptions.ComplexWarning)
            a[key] = value
    except np.exceptions.ComplexWarning:
        return TypeError
    except _ERRORS as e:
        return _error_class(e)
    return None


def _value(spec: Any, ndim: int) -> Any:
    """An assigned value: a scalar, or an ``ndim``-d array (one element) of dtype ``spec``
    holding 1.5 (1.5+1j complex), broadcast over the selection."""
    if not isinstance(spec, str):
        return spec
    v = 1.5 + 1j if spec.startswith("complex") else 1.5
    return np.full((1,) * ndim, v).astype(spec)


def _check_setitem(dtype: str, spec: Any, keyname: str, fmt: str, mode: str) -> None:
    """``x[key] = value`` on lazysparse and NumPy: same raise or not, same values after
    (the view's base too), nothing written on refusal."""
    key = KEYS[keyname]
    value = _value(spec, 0 if keyname == "item" or mode == "0-d" else 1)
    base = base_np = None
    if mode == "0-d":
        target_np = np.array(TARGET[1, 0]).astype(dtype)
        x = xp.asarray(target_np.copy())
        key = ()
    elif mode == "view":
        base_np = _cast(BASE, dtype)
        base = xp.asarray(base_np.copy(), format=fmt)
        target_np, x = base_np[1:3], base[1:3]
    elif mode == "lazy":
        target_np = _cast(TARGET, dtype)
        x = xp.asarray(target_np.copy(), format=fmt)
        x = (x | False) if dtype == "bool" else x + 0  # an uncomputed plan, same values
        assert x.result is None
    else:
        target_np = _cast(TARGET, dtype)
        x = xp.asarray(target_np.copy(), format=fmt)
    before = target_np.copy()
    base_before = None if base_np is None else base_np.copy()
    raised = _numpy_setitem(target_np, key, value)
    lazy_value = xp.asarray(value) if isinstance(value, np.ndarray) else value
    if keyname == "mask" and mode != "0-d":
        key = xp.asarray(key)
    if raised is not None:
        with pytest.raises(raised):
            x[key] = lazy_value
        np.testing.assert_array_equal(np.asarray(x), before)
        if base_np is not None:
            np.testing.assert_array_equal(np.asarray(base), base_before)
        return
    x[key] = lazy_value
    assert x.dtype == target_np.dtype
    np.testing.assert_array_equal(np.asarray(x), target_np)
    if base_np is not None:
        np.testing.assert_array_equal(np.asarray(base), base_np)


@pytest.mark.parametrize("mode", ["plain", "view", "lazy"])
@pytest.mark.parametrize("keyname", list(KEYS))
@pytest.mark.parametrize("spec", DTYPES + SET_SCALARS, ids=repr)
@pytest.mark.parametrize("dtype", DTYPES)
def test_setitem_dense_matches_numpy(dtype: str, spec: Any, keyname: str, mode: str) -> None:
    _check_setitem(dtype, spec, keyname, "dense", mode)


@pytest.mark.parametrize("spec", DTYPES + SET_SCALARS, ids=repr)
@pytest.mark.parametrize("dtype", DTYPES)
def test_setitem_zero_d_matches_numpy(dtype: str, spec: Any) -> None:
    _check_setitem(dtype, spec, "item", "dense", "0-d")


@pytest.mark.parametrize("mode", ["plain", "view"])
@pytest.mark.parametrize("fmt", SPARSE)
@pytest.mark.parametrize("keyname", list(KEYS))
@pytest.mark.parametrize(("dtype", "spec"), [
    ("int64", 2.7), ("int64", "float64"), ("int8", 300), ("uint8", -1), ("int64", float("nan")),
    ("float64", 1j), ("float64", "complex128"), ("bool", 1j), ("bool", "complex128"),
    ("int8", "int64"), ("float32", np.float64(1.5)), ("complex128", 2.5),
], ids=repr)
def test_setitem_sparse_matches_numpy(dtype: str, spec: Any, keyname: str, fmt: str,
                                      mode: str) -> None:
    _check_setitem(dtype, spec, keyname, fmt, mode)


def test_setitem_scalar_and_array_cast_alike() -> None:
    """The issue's pair: ``x[0] = 1.1`` and ``x[:] = asarray([1.1])`` both store 1."""
    x = xp.asarray(np.array([5, 6]))
    x[0] = 1.1
    np.testing.assert_array_equal(np.asarray(x), [1, 6])
    x[:] = xp.asarray([1.1])
    np.testing.assert_array_equal(np.asarray(x), [1, 1])
    f = xp.asarray(np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match=r"complex128.*float64"):
        f[:] = xp.asarray([1j])
    with pytest.raises(TypeError, match="complex"):
        f[0] = 1j
    np.testing.assert_array_equal(np.asarray(f), [1.0, 2.0])
