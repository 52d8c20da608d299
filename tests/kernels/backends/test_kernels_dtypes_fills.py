"""Reductions with every registered reduction operator, dtypes, fill values, edge shapes."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import F, acc, agg, compute, dense, mj, plan, tensor
from hypothesis import given, settings
from hypothesis import strategies as st

from lazysparse.kernels.backends import STATS, execute_plan
from lazysparse.logic.nodes import Immediate, Reorder
from tests.conftest import examples, rotation, slow_except

RNG = np.random.default_rng(11)

REDUCTIONS = {
    "add": (np.sum, 0.0), "multiply": (np.prod, 1.0), "maximum": (np.max, -np.inf),
    "minimum": (np.min, np.inf),
}


def with_fill(shape, fill, density=0.3, dtype=np.float64):
    a = (RNG.random(shape) * 4 - 2).astype(dtype)
    return np.where(RNG.random(shape) < density, a, np.asarray(fill, dtype=dtype))


# the fast tier: each reduction and fill with one of the axes in turn
@pytest.mark.parametrize("red, fill, axes", rotation(
    [(r, f) for r in sorted(REDUCTIONS) for f in (0.0, np.nan, 1.0)],
    [(("j",),), (("i",),), (("i", "j"),)]))
def test_reductions_over_csr(red, fill, axes):
    npf, init = REDUCTIONS[red]
    A = with_fill((13, 9), fill)
    A[3, :] = fill  # an empty row
    body = agg(red, init, Reorder(acc("A", "i", "j"), F("i", "j")), *axes)
    ndim = 2 - len(axes)
    out = execute_plan(plan({"A": tensor(A, "csr", fill)}, compute("out", "dense", ndim, body)))[0]
    axis = {("j",): 1, ("i",): 0, ("i", "j"): None}[axes]
    np.testing.assert_allclose(dense(out), npf(A, axis=axis), equal_nan=True)


@pytest.mark.parametrize("red,npf", [("logical_or", np.any), ("logical_and", np.all)])
@pytest.mark.parametrize("fill", [False, True])
@pytest.mark.parametrize("axes", [("j",), ("i",)])
def test_any_all_over_bool_coo(red, npf, fill, axes):
    A = np.where(RNG.random((11, 8)) < 0.3, RNG.random((11, 8)) < 0.5, fill)
    body = agg(red, not (red == "logical_or"), Reorder(acc("A", "i", "j"), F("i", "j")), *axes)
    out = execute_plan(plan({"A": tensor(A, "coo", fill)},
                            compute("out", "dense", 1, body)))[0]
    np.testing.assert_array_equal(dense(out), npf(A, axis=1 if axes == ("j",) else 0))


@pytest.mark.parametrize("dtype", slow_except(["int8", "uint16", "int64", "float32", "complex64",
                                               "complex128"], ["int8", "complex64"]))
def test_add_and_spmv_over_dtypes(dtype):
    A = (with_fill((12, 10), 0, 0.4) * 3).astype(dtype)
    B = (with_fill((12, 10), 0, 0.4) * 3).astype(dtype)
    if np.dtype(dtype).kind == "c":
        A = (A + 1j * (A != 0)).astype(dtype)
    body = Reorder(mj("add", acc("A", "i", "j"), acc("B", "i", "j")), F("i", "j"))
    out = execute_plan(plan({"A": tensor(A, "csr"), "B": tensor(B, "csr")},
                            compute("out", "csr", 2, body)))[0]
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(dense(out), A + B, rtol=1e-5)
    x = (RNG.random(10) * 3).astype(dtype)
    sbody = agg("add", np.zeros((), dtype)[()], Reorder(
        mj("multiply", acc("A", "i", "j"), acc("x", "j")), F("i", "j")), "j")
    y = execute_plan(plan({"A": tensor(A, "csr"), "x": tensor(x)},
                          compute("out", "dense", 1, sbody)))[0]
    np.testing.assert_allclose(dense(y), (A @ x).astype(dtype), rtol=1e-4)


@pytest.mark.parametrize("fill", [np.nan, 1.0])
def test_union_and_intersection_with_nonzero_fill(fill):
    A, B = with_fill((10, 12), fill), with_fill((10, 12), fill)
    for op, npop in [("add", np.add), ("multiply", np.multiply)]:
        body = Reorder(mj(op, acc("A", "i", "j"), acc("B", "i", "j")), F("i", "j"))
        out = execute_plan(plan({"A": tensor(A, "csr", fill), "B": tensor(B, "csr", fill)},
                                compute("out", "csr", 2, body)))[0]
        np.testing.assert_allclose(dense(out), npop(A, B), equal_nan=True)
        assert np.asarray(out.fill_value).dtype == np.float64


def test_constants_are_arguments_not_new_kernels():
    A = with_fill((9, 7), 0)
    results = []
    before = None
    for c in (3.0, 4.0):
        body = Reorder(mj("multiply", acc("A", "i", "j"), Immediate(np.float64(c))), F("i", "j"))
        out = execute_plan(plan({"A": tensor(A, "csr")}, compute("out", "csr", 2, body)))[0]
        results.append(dense(out))
        if before is None:
            before = STATS["generated"]
    assert STATS["generated"] == before
    np.testing.assert_allclose(results[0], A * 3)
    np.testing.assert_allclose(results[1], A * 4)


def test_field_as_value_and_scalar_operand():
    A = with_fill((6, 5), 0)
    s = tensor(np.asarray(2.5), "dense")
    body = Reorder(mj("multiply", mj("multiply", acc("A", "i", "j"), acc("s")),
                      mj("add", F("j")[0], Immediate(np.int64(1)))), F("i", "j"))
    out = execute_plan(plan({"A": tensor(A, "csr"), "s": s}, compute("out", "csr", 2, body)))[0]
    np.testing.assert_allclose(dense(out), A * 2.5 * (np.arange(5) + 1))


@pytest.mark.parametrize("shape", [(0, 5), (4, 0), (0, 0)])
def test_empty_shapes(shape):
    A = np.zeros(shape)
    x = np.ones(shape[1])
    body = agg("add", 0.0, Reorder(mj("multiply", acc("A", "i", "j"), acc("x", "j")),
                                   F("i", "j")), "j")
    out = execute_plan(plan({"A": tensor(A, "csr"), "x": tensor(x)},
                            compute("out", "coo", 1, body)))[0]
    np.testing.assert_allclose(dense(out), A @ x)
    body = Reorder(mj("add", acc("A", "i", "j"), acc("A", "i", "j")), F("i", "j"))
    out = execute_plan(plan({"A": tensor(A, "csr")}, compute("out", "csr", 2, body)))[0]
    assert dense(out).shape == shape


@settings(max_examples=examples(15), deadline=None)
@given(n=st.integers(1, 12), m=st.integers(1, 12), da=st.floats(0, 1), db=st.floats(0, 1),
       seed=st.integers(0, 2**16))
def test_random_add_multiply_spmv(n, m, da, db, seed):
    rng = np.random.default_rng(seed)
    A = np.where(rng.random((n, m)) < da, rng.random((n, m)), 0.0)
    B = np.where(rng.random((n, m)) < db, rng.random((n, m)), 0.0)
    ta, tb = tensor(A, "csr"), tensor(B, "coo")
    for op, npop in [("add", np.add), ("multiply", np.multiply)]:
        body = Reorder(mj(op, acc("A", "i", "j"), acc("B", "i", "j")), F("i", "j"))
        out = execute_plan(plan({"A": ta, "B": tb}, compute("out", "csr", 2, body)))[0]
        np.testing.assert_allclose(dense(out), npop(A, B))
    x = rng.random(m)
    body = agg("add", 0.0, Reorder(mj("multiply", acc("A", "i", "j"), acc("x", "j")),
                                   F("i", "j")), "j")
    y = execute_plan(plan({"A": ta, "x": tensor(x)}, compute("out", "dense", 1, body)))[0]
    np.testing.assert_allclose(dense(y), A @ x)
