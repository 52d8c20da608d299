"""Mixed-kind type promotion as NumPy 2 (issue 22): bool with numbers, integers with floats,
integers/bools with complex, uint64 with int64, weak Python scalars and strong 0-d arrays.

The Array API standard leaves mixed-kind promotion to the implementation; lazysparse follows
NumPy 2 for it. Differences kept on purpose (docs/api.md, "Type promotion"): ordering
functions (``maximum``, ``less`` ...) reject complex operands (the standard's real-valued
kinds), and float-only functions compute integers and bools in float64 (no float16).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lazysparse as xp
from tests.conftest import examples, slow_except

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64", "complex64", "complex128"]
ORDERING = ("maximum", "less")  # the standard's real-valued functions: no complex operands

NUMPY: dict[str, Callable[..., Any]] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "maximum": np.maximum, "equal": np.equal, "less": np.less, "matmul": np.matmul,
    "where": lambda a, b: np.where(_COND[: a.shape[0], : a.shape[1]], a, b),
}
LAZY: dict[str, Callable[..., Any]] = {
    "add": xp.add, "subtract": xp.subtract, "multiply": xp.multiply, "divide": xp.divide,
    "maximum": xp.maximum, "equal": xp.equal, "less": xp.less, "matmul": xp.matmul,
    "where": lambda a, b: xp.where(xp.asarray(_COND[: a.shape[0], : a.shape[1]]), a, b),
}
OPS = list(NUMPY)
_COND = np.array([[True, False, True, False], [False, False, True, True],
                  [True, True, False, False]])


def _expected_dtype(name: str, d1: str, d2: str) -> np.dtype | None:
    """NumPy 2's result dtype of ``name`` on arrays of ``d1`` and ``d2`` (None: an error in
    NumPy, or for an ordering function, a complex operand: a TypeError in lazysparse)."""
    if name in ORDERING and "complex" in d1 + d2:
        return None
    a, b = np.ones((2, 2), d1), np.ones((2, 2), d2)
    try:
        return NUMPY[name](a, b).dtype
    except TypeError:
        return None


@contextmanager
def _executor(name: str) -> Iterator[None]:
    old = os.environ.get("LAZYSPARSE_EXECUTOR")
    os.environ["LAZYSPARSE_EXECUTOR"] = name
    try:
        yield
    finally:
        if old is None:
            del os.environ["LAZYSPARSE_EXECUTOR"]
        else:
            os.environ["LAZYSPARSE_EXECUTOR"] = old


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    d = np.dtype(dtype)
    if d.kind == "b":
        a = rng.random(shape) < 0.5
    elif d.kind in "iu":
        a = rng.integers(0 if d.kind == "u" else -4, 5, size=shape).astype(d)
    elif d.kind == "f":
        a = rng.standard_normal(shape).astype(d)
    else:
        a = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(d)
    return np.where(rng.random(shape) < 0.6, a, np.zeros((), d))


def _make(a: np.ndarray, fmt: str) -> xp.LazyArray:
    return xp.asarray(sp.csr_array(a) if fmt == "csr" else a)


def _check_values(got: Any, expected: np.ndarray) -> None:
    got = np.asarray(got)
    assert got.dtype == expected.dtype
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


# --- result dtypes: every pair, lazily (nothing computed) ------------------------------------

@pytest.mark.parametrize("name", OPS)
def test_result_dtype_of_every_pair_follows_numpy(name: str) -> None:
    for d1 in DTYPES:
        for d2 in DTYPES:
            x = xp.asarray(np.ones((3, 4), d1))
            y = xp.asarray(np.ones((4, 4) if name == "matmul" else (3, 4), d2))
            want = _expected_dtype(name, d1, d2)
            if want is None:
                with pytest.raises(TypeError):
                    LAZY[name](x, y)
                continue
            assert LAZY[name](x, y).dtype == want, (name, d1, d2)


# --- values: hypothesis draws the pair, formats and executor ---------------------------------

@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(OPS), st.sampled_from(DTYPES), st.sampled_from(DTYPES),
       st.sampled_from(["dense", "csr"]), st.sampled_from(["dense", "csr"]),
       st.sampled_from(["compiled", "reference"]), st.integers(0, 2**31))
def test_values_follow_numpy(name: str, d1: str, d2: str, f1: str, f2: str, executor: str,
                             seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = _values(rng, (3, 4), d1)
    b = _values(rng, (4, 2) if name == "matmul" else (3, 4), d2)
    if name == "divide":  # no 0 / 0: an implicit 0 numerator annihilates (docs/api.md)
        b = np.where((a == 0) & (b == 0), np.ones((), b.dtype), b)
    x, y = _make(a, f1), _make(b, f2)
    want = _expected_dtype(name, d1, d2)
    if want is None:
        with pytest.raises(TypeError):
            LAZY[name](x, y)
        return
    with np.errstate(all="ignore"):
        expected = np.asarray(NUMPY[name](a, b))
    out = LAZY[name](x, y)
    assert out.dtype == expected.dtype == want
    with _executor(executor):
        _check_values(xp.compute(out), expected)


@pytest.mark.parametrize("executor", ["compiled", "reference"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sparse_mask_annihilates_multiply(executor: str, dtype: str) -> None:
    """``X * (X > t)``: a bool mask (fill False) keeps X's pattern, as scipy's multiply."""
    s = sp.random(60, 40, density=0.1, format="csr", random_state=3, dtype=dtype)
    x = xp.asarray(s)
    with _executor(executor):
        for t in (0.3, 0.7):
            for r in (x * (x > t), (x > t) * x, xp.multiply(x, x > t)):
                assert r.dtype == np.dtype(dtype) and r.fill_value == 0.0
                got = xp.to_scipy(xp.compute(r))
                ref = s.multiply(s > t)
                assert got.nnz <= s.nnz
                assert got.nnz == ref.nnz
                np.testing.assert_array_equal(got.toarray(), ref.toarray())


def test_bool_array_operators() -> None:
    m = np.array([[True, False], [True, True]])
    f = np.array([[1.5, -2.0], [0.0, 4.0]], np.float32)
    i = np.array([[1, -2], [3, 0]], np.int8)
    i1 = np.where(i, i, 1)
    mx, fx, ix, i1x = xp.asarray(m), xp.asarray(f), xp.asarray(i), xp.asarray(i1)
    with np.errstate(all="ignore"):
        cases = ((fx * mx, f * m), (mx * fx, m * f), (ix + mx, i + m), (mx - ix, m - i),
                 (fx / mx, f / m), (mx // i1x, m // i1), (mx % i1x, m % i1), (mx + mx, m + m),
                 (mx * mx, m * m), (mx // mx, m // m), (mx < fx, m < f), (mx == ix, m == i),
                 (xp.maximum(mx, ix), np.maximum(m, i)), (xp.minimum(mx, mx), np.minimum(m, m)),
                 (mx ** mx, m ** m), (fx ** mx, f ** m), (xp.hypot(mx, fx), np.hypot(m, f)),
                 (xp.atan2(fx, mx), np.arctan2(f, m)), (xp.copysign(mx, fx), np.copysign(m, f)))
        for got, want in cases:
            _check_values(got, np.asarray(want))


@pytest.mark.parametrize("call", [
    lambda m, i: m - m,
    lambda m, i: xp.subtract(m, True),
    lambda m, i: -m,
    lambda m, i: xp.negative(m),
    lambda m, i: xp.bitwise_and(m, xp.asarray(np.ones(2))),
    lambda m, i: xp.bitwise_left_shift(m, i),
    lambda m, i: xp.bitwise_or(i, 1.5),
    lambda m, i: xp.maximum(m, xp.asarray(np.ones(2, np.complex64))),
    lambda m, i: m < 1j,
])
def test_what_stays_an_error(call: Callable[..., Any]) -> None:
    m = xp.asarray(np.array([True, False]))
    i = xp.asarray(np.array([1, 2], np.int8))
    with pytest.raises(TypeError):
        call(m, i)


def test_logical_functions_take_any_dtype_as_numpy() -> None:
    """``logical_*`` test truthiness of any dtype (as NumPy and the standard's bool cast)."""
    m = np.array([True, False, True])
    f = np.array([0.0, 2.0, 0.5])
    got = xp.logical_and(xp.asarray(m), xp.asarray(f))
    _check_values(got, np.logical_and(m, f))


# --- Python scalars (weak, NEP 50) and 0-d arrays (strong) -----------------------------------

SCALARS = [True, False, 2, 2.5, 1j]
SCALAR_OPS = ["add", "subtract", "multiply", "divide", "maximum", "equal", "less"]


@pytest.mark.parametrize("name", SCALAR_OPS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_python_scalars_are_weak_as_numpy(name: str, dtype: str) -> None:
    a = np.array([[1, 0], [1, 1]]).astype(dtype)
    x = xp.asarray(a)
    for s in SCALARS:
        for args, lazy_args in (((a, s), (x, s)), ((s, a), (s, x))):
            if name in ORDERING and ("complex" in dtype or isinstance(s, complex)):
                with pytest.raises(TypeError):
                    LAZY[name](*lazy_args)
                continue
            try:
                with np.errstate(all="ignore"):
                    expected = np.asarray(NUMPY[name](*args))
            except TypeError:
                with pytest.raises(TypeError):
                    LAZY[name](*lazy_args)
                continue
            out = LAZY[name](*lazy_args)
            assert out.dtype == expected.dtype, (name, dtype, s)
            with np.errstate(all="ignore"):
                _check_values(out, expected)


@pytest.mark.parametrize(("d1", "d2"), [
    ("int8", "float32"), ("int64", "float32"), ("int16", "float32"), ("bool", "float32"),
    ("uint64", "int64"), ("int8", "complex64"), ("int32", "complex64"), ("bool", "complex64"),
    ("uint8", "int8"), ("float32", "complex128"),
])
def test_zero_d_arrays_are_strong(d1: str, d2: str) -> None:
    """NumPy 2 (NEP 50): a 0-d array promotes like any array (int8 * 0-d float32 is float32,
    int64 with 0-d float32 is float64)."""
    a = np.array([1, 2, 3], d1)
    z = np.array(2, d2)
    out = xp.asarray(a) * xp.asarray(z)
    assert out.dtype == (a * z).dtype
    out = xp.asarray(z) + xp.asarray(a)
    assert out.dtype == (z + a).dtype
    _check_values(out, z + a)
    assert xp.result_type(xp.asarray(a), xp.asarray(z)) == np.result_type(a, z)


def test_uint64_with_int64_is_float64() -> None:
    u = np.array([1, 2**63], np.uint64)
    i = np.array([-1, 3], np.int64)
    out = xp.asarray(u) + xp.asarray(i)
    assert out.dtype == np.float64 == (u + i).dtype
    _check_values(out, u + i)
    assert xp.result_type(xp.uint64, xp.int64) == np.float64


PRODUCT_PAIRS = [("bool", "float32"), ("bool", "int64"), ("bool", "bool"), ("int8", "float32"),
                 ("uint64", "int64"), ("int16", "complex64"), ("bool", "complex128")]


@pytest.mark.parametrize(("d1", "d2"), slow_except(PRODUCT_PAIRS, [
    ("bool", "float32"), ("uint64", "int64"), ("int16", "complex64")]))
def test_products_follow_numpy(d1: str, d2: str) -> None:
    rng = np.random.default_rng(1)
    a = _values(rng, (3, 4), d1)
    b = _values(rng, (4, 5), d2)
    v = _values(rng, (4,), d2)
    for fa in ("dense", "csr"):
        x = _make(a, fa)
        _check_values(x @ xp.asarray(b), a @ b)
        _check_values(xp.tensordot(x, xp.asarray(b), axes=1), np.tensordot(a, b, axes=1))
        _check_values(xp.vecdot(x, xp.asarray(v)), np.vecdot(a, v))
        _check_values(xp.einsum("ij,jk->ik", x, xp.asarray(b)), np.einsum("ij,jk->ik", a, b))
        _check_values(xp.linalg.outer(xp.asarray(a[0]), xp.asarray(v)), np.outer(a[0], v))


@pytest.mark.parametrize(("d1", "d2"), [
    ("bool", "int8"), ("int8", "float32"), ("int64", "float32"), ("uint64", "int64"),
    ("bool", "complex64"), ("uint32", "float32"),
])
def test_where_concat_stack_follow_numpy(d1: str, d2: str) -> None:
    rng = np.random.default_rng(2)
    a, b = _values(rng, (3, 4), d1), _values(rng, (3, 4), d2)
    c = rng.random((3, 4)) < 0.5
    for fa in ("dense", "csr"):
        x, y = _make(a, fa), xp.asarray(b)
        _check_values(xp.where(xp.asarray(c), x, y), np.where(c, a, b))
        _check_values(xp.where(xp.asarray(c), y, x), np.where(c, b, a))
        _check_values(xp.concat([x, y]), np.concatenate([a, b]))
        _check_values(xp.stack([x, y]), np.stack([a, b]))
