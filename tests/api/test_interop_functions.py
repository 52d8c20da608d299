"""Interop in every function (api/array/operands.py): NumPy arrays, scipy.sparse arrays and Python
scalars as operands of contractions, ``where``, ``clip``, elementwise functions, comparisons
and ``concat``/``stack``, converted without copying; clear TypeErrors otherwise; scipy's
and array-api-extra's array-API paths on lazysparse arrays. Values against NumPy on the
dense equivalent."""

from __future__ import annotations

import json
import operator
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import array_api_compat
import numpy as np
import pytest
import scipy.sparse as sp
import scipy.stats
from hypothesis import example, given, settings
from hypothesis import strategies as st

import lazysparse as xp
from lazysparse.formats import Tensor
from lazysparse.logic.nodes import Table
from tests.api.compute_helpers import (
    assert_same,
    fills_for,
    reference_executor,  # noqa: F401 - autouse fixture
    sample,
)
from tests.api.compute_helpers import lazy as _lazy
from tests.conftest import examples

FORMATS = ("dense", "csr", "csc", "coo")
DTYPES = ("float64", "float32", "int32", "complex128")
SCIPY_FORMATS = (sp.csr_array, sp.csc_array, sp.coo_array, sp.csr_matrix)


def lazy(a: Any, fmt: str = "dense", fill: Any = 0) -> xp.LazyArray:
    """``a`` stored in ``fmt`` with ``fill`` (csc only for 2-D: coo otherwise)."""
    return _lazy(a, "coo" if fmt == "csc" and np.ndim(a) != 2 else fmt, fill)


def leaf_tensors(x: xp.LazyArray) -> list[Tensor]:
    """The stored tensors an expression reads (its ``Table`` leaves)."""
    out, stack = [], [x.expr]
    while stack:
        node = stack.pop()
        if isinstance(node, Table):
            out.append(node.tns.val)
        stack.extend(node.children)
    return out


def reads_memory_of(x: xp.LazyArray, arr: np.ndarray) -> bool:
    """Whether some leaf of ``x`` shares memory with ``arr`` (converted without a copy)."""
    return any(np.shares_memory(t.values, arr) for t in leaf_tensors(x))


# name, lazysparse function, NumPy reference, operand shapes
CONTRACTIONS: list[tuple[str, Callable[..., Any], Callable[..., Any], tuple[int, ...],
                         tuple[int, ...]]] = [
    ("matmul", xp.matmul, np.matmul, (3, 4), (4, 2)),
    ("matmul", xp.matmul, np.matmul, (3, 4), (4,)),
    ("matmul", xp.matmul, np.matmul, (4,), (4, 3)),
    ("matmul", xp.matmul, np.matmul, (2, 3, 4), (4, 2)),
    ("linalg.matmul", xp.linalg.matmul, np.matmul, (3, 4), (4, 2)),
    ("tensordot", lambda a, b: xp.tensordot(a, b, axes=1),
     lambda a, b: np.tensordot(a, b, axes=1), (3, 4), (4, 2)),
    ("linalg.tensordot", lambda a, b: xp.linalg.tensordot(a, b, axes=([0], [1])),
     lambda a, b: np.tensordot(a, b, axes=([0], [1])), (3, 4), (2, 3)),
    ("vecdot", xp.vecdot, np.vecdot, (3, 4), (3, 4)),
    ("vecdot", xp.vecdot, np.vecdot, (3, 4), (4,)),
    ("linalg.vecdot", lambda a, b: xp.linalg.vecdot(a, b, axis=-2),
     lambda a, b: np.vecdot(a, b, axis=-2), (3, 4), (3, 4)),
    ("linalg.outer", xp.linalg.outer, np.outer, (3,), (4,)),
    ("linalg.cross", xp.linalg.cross, np.cross, (2, 3), (2, 3)),
    ("einsum", lambda a, b: xp.einsum("ij,jk->ik", a, b),
     lambda a, b: np.einsum("ij,jk->ik", a, b), (3, 4), (4, 2)),
    ("einsum", lambda a, b: xp.einsum("ij,ij->i", a, b),
     lambda a, b: np.einsum("ij,ij->i", a, b), (3, 4), (3, 4)),
]
CONTRACTION_IDS = [f"{c[0]}-{c[3]}-{c[4]}" for c in CONTRACTIONS]


@pytest.mark.parametrize("case", CONTRACTIONS, ids=CONTRACTION_IDS)
@pytest.mark.parametrize("numpy_side", (0, 1))
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_contractions_take_numpy_in_each_position(case: Any, numpy_side: int, fmt: str,
                                                  dtype: str) -> None:
    _, fn, ref, s1, s2 = case
    rng = np.random.default_rng(len(s1) * 7 + len(s2))
    for fill in fills_for(dtype):
        a, b = sample(s1, dtype, rng, fill=fill), sample(s2, dtype, rng, fill=fill)
        x1 = a if numpy_side == 0 else lazy(a, fmt, fill)
        x2 = b if numpy_side == 1 else lazy(b, fmt, fill)
        got = fn(x1, x2)
        assert isinstance(got, xp.LazyArray)
        assert_same(got, ref(a, b))


@pytest.mark.parametrize("case", [c for c in CONTRACTIONS if len(c[3]) == len(c[4]) == 2],
                         ids=[i for c, i in zip(CONTRACTIONS, CONTRACTION_IDS, strict=True)
                              if len(c[3]) == len(c[4]) == 2])
@pytest.mark.parametrize("scipy_side", (0, 1))
@pytest.mark.parametrize("to_scipy", SCIPY_FORMATS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", ("float64", "int32"))
def test_contractions_take_scipy_sparse(case: Any, scipy_side: int, to_scipy: Any,
                                        dtype: str) -> None:
    _, fn, ref, s1, s2 = case
    rng = np.random.default_rng(3)
    a, b = sample(s1, dtype, rng), sample(s2, dtype, rng)
    x1 = to_scipy(a) if scipy_side == 0 else lazy(a, "csr")
    x2 = to_scipy(b) if scipy_side == 1 else lazy(b, "dense")
    assert_same(fn(x1, x2), ref(a, b))


@pytest.mark.parametrize("fmt", FORMATS)
def test_matmul_operators_with_numpy_and_scipy(fmt: str) -> None:
    rng = np.random.default_rng(5)
    a = sample((5, 4), "float64", rng)
    v, w, m = rng.standard_normal(4), rng.standard_normal(5), rng.standard_normal((4, 3))
    x = lazy(a, fmt)
    assert_same(x @ v, a @ v)
    assert_same(w @ x, w @ a)           # NumPy defers: LazyArray.__array_ufunc__ is None
    assert_same(m.T @ x.T, m.T @ a.T)
    assert_same(x @ m, a @ m)
    assert_same(x @ sp.csr_array(m), a @ m)
    assert_same(x.T @ np.asfortranarray(a), a.T @ a)
    y = lazy(np.eye(4), fmt)
    y @= m[:, :1].repeat(4, axis=1)
    assert_same(y, m[:, :1].repeat(4, axis=1))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", ("float64", "int32", "complex128"))
def test_where_takes_numpy_in_every_position(fmt: str, dtype: str) -> None:
    rng = np.random.default_rng(7)
    for fill in fills_for(dtype):
        c = rng.random((3, 4)) < 0.5
        a, b = sample((3, 4), dtype, rng, fill=fill), sample((4,), dtype, rng, fill=fill)
        for mask in range(8):
            args = [c, a, b]
            lazies = [lazy(c, fmt), lazy(a, fmt, fill), lazy(b, fmt, fill)]
            for k in range(3):
                if mask >> k & 1:
                    args[k] = lazies[k]
            assert_same(xp.where(*args), np.where(c, a, b))


@pytest.mark.parametrize("fmt", FORMATS)
def test_where_scalars_follow_the_standard(fmt: str) -> None:
    rng = np.random.default_rng(8)
    c = rng.random((3, 4)) < 0.5
    for dtype, s in (("float32", 2.5), ("int8", 3), ("complex64", 1j), ("bool", True)):
        a = sample((3, 4), dtype, rng)
        x = lazy(a, fmt)
        expected = np.where(c, a, np.asarray(s, dtype=dtype))
        assert_same(xp.where(c, x, s), expected)                       # weak: x's dtype
        assert_same(xp.where(lazy(c, fmt), s, x), np.where(c, np.asarray(s, dtype), a))
    assert_same(xp.where(True, lazy(np.arange(3.0), fmt), 0.0), np.arange(3.0))
    assert_same(xp.where(sp.csr_array(c), 1.0, np.full((3, 4), 2.0)), np.where(c, 1.0, 2.0))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", ("float64", "int16"))
def test_clip_bounds_may_be_numpy_or_scalars(fmt: str, dtype: str) -> None:
    rng = np.random.default_rng(9)
    a = sample((3, 4), dtype, rng)
    lo, hi = np.full(4, -1, dtype=dtype), np.full((3, 1), 2, dtype=dtype)
    x = lazy(a, fmt)
    assert_same(xp.clip(x, lo, hi), np.clip(a, lo, hi))
    assert_same(xp.clip(x, min=0), np.clip(a, 0, None))
    assert_same(xp.clip(x, max=lazy(hi, fmt)), np.clip(a, None, hi))
    assert_same(xp.clip(a, -1, 1), np.clip(a, -1, 1))


BINARY = ("add", "subtract", "multiply", "maximum", "minimum", "hypot", "atan2", "copysign",
          "logaddexp", "equal", "not_equal", "less", "greater_equal")


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("fmt", FORMATS)
def test_elementwise_functions_take_numpy_either_side(name: str, fmt: str) -> None:
    rng = np.random.default_rng(10)
    fn, ref = getattr(xp, name), getattr(np, name)
    for fill in (0, 1, np.nan):
        a, b = sample((3, 4), "float64", rng, fill=fill), sample((4,), "float64", rng)
        with np.errstate(all="ignore"):
            assert_same(fn(lazy(a, fmt, fill), b), ref(a, b))
            assert_same(fn(b, lazy(a, fmt, fill)), ref(b, a))
            assert_same(fn(lazy(a, fmt, fill), 0.5), ref(a, 0.5))


OPERATORS = (operator.add, operator.sub, operator.mul, operator.truediv, operator.lt,
             operator.ge, operator.eq, operator.ne, operator.pow)


@pytest.mark.parametrize("op", OPERATORS, ids=lambda o: o.__name__)
@pytest.mark.parametrize("fmt", FORMATS)
def test_operators_and_comparisons_with_numpy_and_scipy(op: Any, fmt: str) -> None:
    rng = np.random.default_rng(11)
    a = np.abs(sample((3, 4), "float64", rng)) + 0.5
    b = np.abs(sample((3, 4), "float64", rng)) + 0.5
    x = lazy(a, fmt)
    with np.errstate(all="ignore"):
        assert_same(op(x, b), op(a, b))
        assert_same(op(b, x), op(b, a))     # NumPy defers to the reflected operator
        assert_same(op(x, b[0]), op(a, b[0]))
        assert_same(op(x, sp.csr_array(b)), op(a, b))


@pytest.mark.parametrize("op", (operator.add, operator.sub, operator.ne),
                         ids=lambda o: o.__name__)
def test_scipy_sparse_on_the_left_defers_to_lazysparse(op: Any) -> None:
    a, b = np.eye(3), np.arange(9.0).reshape(3, 3)
    got = op(sp.csr_array(a), lazy(b, "csr"))
    assert isinstance(got, xp.LazyArray)
    assert_same(got, op(a, b))


@pytest.mark.parametrize("fmt", FORMATS)
def test_concat_and_stack_of_a_mix(fmt: str) -> None:
    rng = np.random.default_rng(12)
    a, b, c = (sample((2, 3), "float64", rng) for _ in range(3))
    assert_same(xp.concat([lazy(a, fmt), b, sp.csr_array(c)]), np.concatenate([a, b, c]))
    assert_same(xp.concat((b, lazy(a, fmt)), axis=1), np.concatenate((b, a), axis=1))
    assert_same(xp.stack([a, lazy(b, fmt)], axis=1), np.stack([a, b], axis=1))
    assert_same(xp.concat([sp.csr_array(a), sp.csc_array(c)]), np.concatenate([a, c]))
    i8 = sample((2, 3), "int8", rng)
    assert_same(xp.concat([lazy(i8, fmt), a]), np.concatenate([i8, a]))


def test_pydata_sparse_operands() -> None:
    sparse = pytest.importorskip("sparse")
    a = np.arange(9.0).reshape(3, 3)
    s = sparse.COO.from_numpy(np.eye(3) * 2.0)
    x = lazy(a, "csr")
    assert_same(x @ s, a @ (np.eye(3) * 2.0))
    assert_same(s + x, a + np.eye(3) * 2.0)
    assert_same(xp.where(s > 0, x, 0.0), np.where(np.eye(3) > 0, a, 0.0))


def test_other_functions_take_numpy_arrays() -> None:
    a = np.array([[3.0, 0.0, 1.0], [0.0, 2.0, 0.0]])
    assert_same(xp.sum(a, axis=0), a.sum(axis=0))
    assert_same(xp.broadcast_arrays(a, lazy(np.ones(3), "coo"))[1], np.ones((2, 3)))
    assert_same(xp.searchsorted(lazy(np.arange(5.0)), np.array([1.5, 3.0])),
                np.searchsorted(np.arange(5.0), [1.5, 3.0]))
    assert_same(xp.diff(lazy(a, "csr"), axis=1, prepend=a[:, :1]),
                np.diff(a, axis=1, prepend=a[:, :1]))
    assert_same(xp.repeat(lazy(a[0]), np.array([1, 0, 2])), np.repeat(a[0], [1, 0, 2]))
    assert_same(xp.astype(a, xp.int32), a.astype(np.int32))
    assert_same(xp.isin(lazy(a, "csr"), np.array([2.0, 3.0])), np.isin(a, [2.0, 3.0]))
    assert_same(xp.isin(a, 1.0), np.isin(a, 1.0))
    assert_same(xp.zeros_like(a), np.zeros_like(a))
    assert_same(xp.tril(a), np.tril(a))
    assert_same(xp.take(a, np.array([2, 0]), axis=1), np.take(a, [2, 0], axis=1))
    assert_same(xp.meshgrid(np.arange(3.0), lazy(np.arange(2.0)))[0],
                np.meshgrid(np.arange(3.0), np.arange(2.0))[0])
    assert xp.asformat(a, "csr").format == "csr"
    assert xp.to_scipy(a).nnz == 3


def test_numpy_operands_are_not_copied() -> None:
    a = np.arange(12.0).reshape(3, 4)
    v, c = np.arange(4.0), a > 4
    x = lazy(a, "csr")
    assert reads_memory_of(x @ v, v)
    assert reads_memory_of(a[1] @ x.T, a)               # a row of a is a view of it
    assert reads_memory_of(xp.where(c, a, 0.0), c) and reads_memory_of(xp.where(c, a, 0.0), a)
    assert reads_memory_of(xp.add(x, a), a) and reads_memory_of(a - x, a)
    assert reads_memory_of(a.T @ x, a)                 # a Fortran-ordered view stays a view
    assert reads_memory_of(xp.einsum("ij,j->i", x, v), v)
    s = sp.csr_array(a)
    got = x.T @ s
    assert any(np.shares_memory(t.values, s.data) for t in leaf_tensors(got))
    # the leaf is the user's buffer: a change before the compute is seen, as with asarray
    r = x @ v
    v[:] = 1.0
    assert_same(r, a @ np.ones(4))


def test_scalars_where_the_standard_allows_none() -> None:
    x = lazy(np.ones((2, 2)), "csr")
    cases: list[tuple[Callable[[], Any], str]] = [
        (lambda: xp.matmul(x, 2.0), "matmul: x2 must be an array"),
        (lambda: xp.matmul(3, x), "matmul: x1 must be an array"),
        (lambda: x @ 2.0, "matmul: x2 must be an array"),
        (lambda: 2 @ x, "matmul: x1 must be an array"),
        (lambda: xp.tensordot(x, 1.0), "tensordot: x2"),
        (lambda: xp.vecdot(True, x), "vecdot: x1"),
        (lambda: xp.linalg.outer(x, 1j), "outer: x2"),
        (lambda: xp.linalg.cross(1, x), "cross: x1"),
        (lambda: xp.einsum("ij,->ij", x, 2.0), "einsum: operand 1"),
        (lambda: xp.concat([x, 1.0]), r"concat: arrays\[1\] must be an array"),
        (lambda: xp.stack([2, x]), r"stack: arrays\[0\] must be an array"),
        (lambda: xp.clip(1.0, 0, 2), "clip: x must be an array"),
    ]
    for call, message in cases:
        with pytest.raises(TypeError, match=message):
            call()


def test_lists_and_other_objects_are_rejected_clearly() -> None:
    x = lazy(np.ones(3), "coo")
    cases: list[tuple[Callable[[], Any], str]] = [
        (lambda: xp.add(x, [1.0, 2.0, 3.0]), r"add: unsupported operand type 'list' for x2.*"
                                              r"xp\.asarray"),
        (lambda: xp.matmul((1.0, 2.0, 3.0), x), "matmul: unsupported operand type 'tuple' "
                                                 "for x1"),
        (lambda: xp.where([True, False, True], x, 0.0), "where: .* for condition"),
        (lambda: xp.where(x > 0, "a", x), "where: unsupported operand type 'str' for x1"),
        (lambda: xp.clip(x, min=[0.0]), "clip: .* for min"),
        (lambda: xp.concat([x, [1.0]]), r"concat: .* for arrays\[1\]"),
        (lambda: xp.einsum("i,i", x, {1: 2}), "einsum: .* for operand 1"),
        (lambda: xp.where(1, x, x), "where: condition must have a boolean dtype"),
        (lambda: xp.where(np.ones(3), x, x), "where: condition must have a boolean dtype"),
        (lambda: x + [1.0], "unsupported operand"),
        (lambda: x @ [1.0, 2.0, 3.0], "unsupported operand"),
    ]
    for call, message in cases:
        with pytest.raises(TypeError, match=message):
            call()


def test_mixed_dtypes_follow_promotion() -> None:
    a32 = np.arange(6, dtype=np.float32).reshape(2, 3)
    v64 = np.arange(3.0)
    assert_same(lazy(a32, "csr") @ v64, a32 @ v64)             # float32 @ float64 -> float64
    i8 = np.arange(6, dtype=np.int8).reshape(2, 3)
    assert_same(xp.maximum(lazy(i8, "coo"), 2), np.maximum(i8, np.int8(2)))  # weak scalar
    assert_same(xp.where(i8 > 2, lazy(i8), np.int16(7)), np.where(i8 > 2, i8, np.int16(7)))


def test_iterative_loop_with_numpy_vectors() -> None:
    """Power iteration and a damped update written with NumPy vectors, as users write it."""
    rng = np.random.default_rng(13)
    n = 30
    dense = sample((n, n), "float64", rng, density=0.2)
    dense = np.abs(dense) + np.eye(n)
    A = xp.asarray(sp.csr_array(dense))
    v, ref = np.ones(n), np.ones(n)
    for _ in range(8):
        v = A @ v
        v = v / float(xp.linalg.vector_norm(v))
        ref = dense @ ref
        ref = ref / np.linalg.norm(ref)
    np.testing.assert_allclose(np.asarray(v), ref, rtol=1e-10)
    b = rng.standard_normal(n)
    fixed = rng.random(n) < 0.2
    x, xr = np.zeros(n), np.zeros(n)
    for _ in range(5):
        x = xp.where(fixed, b, 0.5 * x + (A @ x) / n + b)
        x = xp.compute(x)
        xr = np.where(fixed, b, 0.5 * xr + (dense @ xr) / n + b)
    np.testing.assert_allclose(np.asarray(x), xr, rtol=1e-10)


@settings(max_examples=examples(25), deadline=None)
@given(n=st.integers(1, 5), k=st.integers(0, 5), m=st.integers(1, 4),
       fmt=st.sampled_from(FORMATS), fill=st.sampled_from((0.0, 1.0, np.nan)),
       numpy_left=st.booleans(), seed=st.integers(0, 2**16))
@example(n=1, k=1, m=1, fmt="dense", fill=np.nan, numpy_left=True, seed=1)  # found by CI
def test_random_matmul_and_where_with_numpy(n: int, k: int, m: int, fmt: str, fill: float,
                                            numpy_left: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = sample((n, k), "float64", rng, fill=fill), sample((k, m), "float64", rng)
    x1, x2 = (a, lazy(b, fmt)) if numpy_left else (lazy(a, fmt, fill), b)
    # a sparse operand's implicit 0 annihilates the dense NaN it meets (scipy's
    # convention, docs/api.md "The fill rule"): scipy's product is the reference; a dense
    # operand has no implicit region, so NumPy's IEEE product is (NaN * 0 is NaN)
    sparse_right = numpy_left and fmt != "dense"
    want = np.asarray((sp.csr_array(b).T @ a.T).T) if sparse_right else a @ b
    assert_same(x1 @ x2, want)
    c = rng.random((n, k)) < 0.5
    assert_same(xp.where(c, lazy(a, fmt, fill), -1.0), np.where(c, a, -1.0))


def test_compiled_path_with_numpy_and_fortran_operands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAZYSPARSE_EXECUTOR", "compiled")
    rng = np.random.default_rng(14)
    a = sample((6, 5), "float64", rng)
    m = np.asfortranarray(rng.standard_normal((5, 6)))
    x = lazy(a, "csr")
    assert_same(x @ m, a @ m)
    assert_same(m @ x, m @ a)
    assert_same(xp.where(a > 0, m.T, 0.0), np.where(a > 0, m.T, 0.0))


def test_array_api_compat_sees_lazysparse() -> None:
    x = lazy(np.ones((2, 2)), "csr")
    assert array_api_compat.array_namespace(x) is xp
    assert array_api_compat.array_namespace(x @ np.ones(2), x) is xp
    assert array_api_compat.is_array_api_obj(x)


@pytest.mark.parametrize("fmt", FORMATS)
def test_array_api_extra_functions(fmt: str) -> None:
    xpx = pytest.importorskip("array_api_extra")
    a = np.arange(12.0).reshape(3, 4) - 5.0
    a[0, 1] = 0.0
    b = a.copy()
    b[0, 2] = 7.0
    assert_same(xpx.at(lazy(a, fmt), (0, 2)).set(7.0), b)
    assert_same(xpx.at(lazy(a, fmt), lazy(a, fmt) > 0).add(1.0), np.where(a > 0, a + 1, a))
    with np.errstate(invalid="ignore"):
        expected = np.where(a > 0, np.sqrt(a), 0.0)
    assert_same(xpx.apply_where(lazy(a, fmt) > 0, lazy(a, fmt), xp.sqrt, fill_value=0.0),
                expected)
    assert_same(xpx.cov(lazy(a, fmt)), np.cov(a))
    assert_same(xpx.kron(lazy(a, fmt), xp.asarray(np.eye(2))), np.kron(a, np.eye(2)))
    assert_same(xpx.pad(lazy(a, fmt), 1), np.pad(a, 1))


_SCIPY_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np, scipy.sparse as sp, scipy.stats as st
    import lazysparse as xp
    a = np.array(json.loads(sys.argv[1]))
    out = {}
    for fmt in ("dense", "csr"):
        x = xp.asarray(a if fmt == "dense" else sp.csr_array(a))
        r = st.pearsonr(x[0], x[1])
        out[fmt] = {
            "zscore": np.asarray(st.zscore(x, axis=1, ddof=1)).tolist(),
            "tmean": float(st.tmean(x)),
            "pearsonr": [float(r.statistic), float(r.pvalue)],
            "types": [type(st.zscore(x, axis=1, ddof=1)).__name__,
                      type(r.statistic).__name__],
        }
    print(json.dumps(out))
""")


def test_scipy_stats_array_api_paths() -> None:
    """``SCIPY_ARRAY_API=1`` (read by scipy at import: a subprocess) on lazysparse input."""
    rng = np.random.default_rng(15)
    a = rng.standard_normal((3, 6))
    a[a < -0.5] = 0.0
    env = {**os.environ, "SCIPY_ARRAY_API": "1"}
    proc = subprocess.run([sys.executable, "-c", _SCIPY_SCRIPT, json.dumps(a.tolist())],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    mean = a.mean(axis=1, keepdims=True)
    zscore = (a - mean) / a.std(axis=1, ddof=1, keepdims=True)
    r = np.corrcoef(a[0], a[1])[0, 1]
    pvalue = scipy.stats.pearsonr(a[0], a[1]).pvalue  # scipy on NumPy input
    for fmt in ("dense", "csr"):
        res = got[fmt]
        np.testing.assert_allclose(res["zscore"], zscore, rtol=1e-10)
        np.testing.assert_allclose(res["tmean"], a.mean(), rtol=1e-10)
        np.testing.assert_allclose(res["pearsonr"][0], r, rtol=1e-10)
        np.testing.assert_allclose(res["pearsonr"][1], pvalue, rtol=1e-8)
        assert res["types"] == ["LazyArray", "LazyArray"]
