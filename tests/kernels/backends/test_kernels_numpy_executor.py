"""The NumPy executor of small dense kernels: values vs NumPy and the reference interpreter
across reduction operators, dtypes and fill values; one vectorized call per tree node (no
Python loop per element); what it cannot vectorize goes to the compiled kernels."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from helpers import F, acc, agg, compute, dense, mj, plan, tensor
from hypothesis import given, settings
from hypothesis import strategies as st

from lazysparse.kernels.backends import STATS, execute_plan
from lazysparse.kernels.backends.numpy_reducers import KeepReducer, UfuncReducer, reducer_for
from lazysparse.kernels.compile.planning.analysis import analyze_query
from lazysparse.kernels.compile.planning.runners import NUMPY_MAX_ITERATIONS, numpy_eligible
from lazysparse.logic import interpret
from lazysparse.logic.nodes import Alias, Field, Immediate, Reorder
from lazysparse.logic.operators import Operator, get_operator
from tests.conftest import examples

RNG = np.random.default_rng(5)
AXES = {(): None, ("j",): 1, ("i",): 0, ("i", "j"): (0, 1)}


def sample(shape, dtype, fill=0):
    """Values of ``dtype`` (about a third equal to ``fill``) for a dense operand."""
    d = np.dtype(dtype)
    if d.kind == "b":
        return RNG.random(shape) < 0.5
    if d.kind in "iu":
        lo = 0 if d.kind == "u" else -5
        a = RNG.integers(lo, 6, size=shape).astype(d)
    else:
        a = (RNG.random(shape) * 4 - 2).astype(d)
        if d.kind == "c":
            a = a + 1j * (RNG.random(shape) * 2 - 1)
    return np.where(RNG.random(shape) < 0.3, np.asarray(fill).astype(d), a).astype(d)


def run(plan_, *, numpy_runs: bool = True):
    """Execute, checking whether the NumPy executor ran the query."""
    before = STATS["numpy"]
    out = execute_plan(plan_)[0]
    assert STATS["numpy"] == before + int(numpy_runs)
    return out


def check(out, want, oracle):
    """``out`` equals NumPy's ``want`` and the interpreter's value, dtype and fill value."""
    got = dense(out)
    assert got.dtype == dense(oracle).dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
    np.testing.assert_allclose(got, dense(oracle), rtol=1e-5, atol=1e-6, equal_nan=True)
    np.testing.assert_array_equal(np.asarray(out.fill_value), np.asarray(oracle.fill_value))


REDUCTIONS = [
    ("add", np.sum, 0, "numeric"), ("multiply", np.prod, 1, "numeric"),
    ("maximum", np.max, None, "real"), ("minimum", np.min, None, "real"),
    ("logical_or", np.any, False, "any"), ("logical_and", np.all, True, "any"),
    ("bitwise_xor", np.bitwise_xor.reduce, 0, "integral"),
    ("bitwise_or", np.bitwise_or.reduce, 0, "integral"),
]
DTYPES = ["bool", "int8", "uint16", "int64", "float32", "float64", "complex128"]
KINDS = {"numeric": "iufc", "real": "iuf", "any": "biufc", "integral": "iu"}


@pytest.mark.parametrize("red,npf,init,kind", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axes", list(AXES), ids=["none", "j", "i", "ij"])
def test_reductions_match_numpy_and_interpreter(red, npf, init, kind, dtype, axes):
    d = np.dtype(dtype)
    if d.kind not in KINDS[kind]:
        pytest.skip(f"{red} does not take {dtype}")
    for fill in (0, 1) if d.kind != "f" else (0, np.nan, 1):
        A = sample((7, 5), d, fill)
        if red == "multiply":
            A = np.where(np.abs(A) > 1.5, 1, A).astype(d)  # keep int products small
        start = (get_operator(red).init_for(d) if init is None else np.asarray(init)[()])
        body = agg(red, start, Reorder(acc("A", "i", "j"), F("i", "j")), *axes)
        p = plan({"A": tensor(A, "dense", fill)}, compute("out", "dense", 2 - len(axes), body))
        out = run(p)
        want = (np.asarray(get_operator(red).numpy(start, A)) if not axes  # op(init, a)
                else np.asarray(npf(A, axis=AXES[axes])))
        check(out, want.astype(dense(out).dtype), interpret(p)[0])


@pytest.mark.parametrize("fill", [0.0, np.nan, 1.0])
def test_sum_of_a_product_of_a_long_vector(fill):
    """``sum(v * 2.0)`` on 10,000 entries: one NumPy call per node, never one per entry."""
    v = sample(10_000, "float64", fill)
    body = agg("add", 0.0, Reorder(mj("multiply", acc("v", "i"), Immediate(2.0)), F("i")),
               "i")
    p = plan({"v": tensor(v, "dense", fill)}, compute("out", "dense", 0, body))
    calls = []
    real = Operator.apply_as  # what Operator.apply runs too

    def counted(self, *args):
        calls.append(self.name)
        return real(self, *args)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Operator, "apply_as", counted)
        out = run(p)
    assert len(calls) < 10, f"{len(calls)} operator calls for one pointwise node"
    np.testing.assert_allclose(float(dense(out)), np.sum(v * 2.0), equal_nan=True)


@pytest.mark.parametrize("dtype", ["int16", "float32", "complex64"])
@pytest.mark.parametrize("fill", [0, 1])
def test_pointwise_with_fields_constants_and_transposed_output(dtype, fill):
    A, x = sample((6, 4), dtype, fill), sample(4, dtype, fill)
    body = Reorder(mj("add", mj("multiply", acc("A", "i", "j"), acc("x", "j")),
                      mj("multiply", Field("j"), Immediate(3))), F("i", "j"))
    p = plan({"A": tensor(A, "dense", fill), "x": tensor(x, "dense", fill)},
             compute("out", "dense", 2, body, mode_order=(1, 0)))
    out = run(p)
    assert out.mode_order == (1, 0)
    check(out, A * x + np.arange(4) * 3, interpret(p)[0])


def test_result_never_shares_an_input_buffer():
    a = np.arange(12.0).reshape(3, 4)
    t = tensor(a)
    out = run(plan({"A": t}, compute("out", "dense", 2, Reorder(acc("A", "i", "j"),
                                                                F("i", "j")))))
    np.testing.assert_array_equal(dense(out), a)
    assert not np.shares_memory(out.values, t.values)


def test_broadcast_loop_field_and_three_axes():
    """A field only some operands index; a reduction over the middle of three fields."""
    A, B = sample((3, 4), "float64"), sample((4, 5), "float64")
    body = agg("add", 0.0, Reorder(mj("multiply", acc("A", "i", "j"), acc("B", "j", "k")),
                                   F("i", "j", "k")), "j")
    p = plan({"A": tensor(A), "B": tensor(B)}, compute("out", "dense", 2, body))
    check(run(p), A @ B, interpret(p)[0])


@pytest.mark.parametrize("shape,axes", [((0, 4), ("i",)), ((3, 0), ("j",)), ((0, 0), ("i", "j")),
                                        ((0, 3), ("j",))])
@pytest.mark.parametrize("red,init", [("add", 2.5), ("maximum", -1.0), ("overwrite", 7.0)])
def test_empty_axes_give_init(shape, axes, red, init):
    A = np.zeros(shape)
    body = agg(red, init, Reorder(acc("A", "i", "j"), F("i", "j")), *axes)
    p = plan({"A": tensor(A)}, compute("out", "dense", 2 - len(axes), body))
    out, oracle = run(p), interpret(p)[0]
    np.testing.assert_array_equal(dense(out), dense(oracle))
    assert dense(out).shape == tuple(n for n, f in zip(shape, "ij", strict=True)
                                     if f not in axes)


@pytest.mark.parametrize("loop,want", [(("i", "j"), lambda A: A[:, -1]),
                                       (("j", "i"), lambda A: A[-1, :])])
def test_keep_one_reductions_follow_the_loop_order(loop, want):
    """``overwrite`` keeps the last value visited, ``first`` the accumulator (init)."""
    A = sample((4, 6), "int32")
    red_field = loop[1]
    mode = (0, 1) if loop == ("i", "j") else (1, 0)
    body = agg("overwrite", -1, Reorder(acc("A", "i", "j"), F(*loop)), red_field)
    p = plan({"A": tensor(A, mode_order=mode)}, compute("out", "dense", 1, body))
    np.testing.assert_array_equal(dense(run(p)), want(A))
    body = agg("first", -1, Reorder(acc("A", "i", "j"), F(*loop)), red_field)
    p = plan({"A": tensor(A, mode_order=mode)}, compute("out", "dense", 1, body))
    np.testing.assert_array_equal(dense(run(p)), dense(interpret(p)[0]))


def test_non_commutative_ufunc_folds_in_order_from_init():
    A = sample((5, 6), "float64")
    body = agg("subtract", 100.0, Reorder(acc("A", "i", "j"), F("i", "j")), "j")
    p = plan({"A": tensor(A)}, compute("out", "dense", 1, body))
    want = [functools.reduce(lambda a, b: a - b, row, 100.0) for row in A]
    np.testing.assert_allclose(dense(run(p)), want)


def test_reducers_chosen_per_operator_and_dtypes():
    f8, b1 = np.dtype("float64"), np.dtype("bool")
    assert reducer_for(get_operator("add"), f8, np.dtype("int32")) == UfuncReducer(np.add)
    assert reducer_for(get_operator("overwrite"), f8, f8) == KeepReducer(True)
    assert reducer_for(get_operator("isequal"), b1, b1) is None  # no ufunc
    assert reducer_for(get_operator("equal"), b1, f8) is None  # operands are not the acc


def test_unvectorizable_reduction_runs_compiled():
    """``isequal`` has no ufunc: the query goes to the compiled kernel, same values."""
    A = RNG.random((6, 5)) < 0.5
    body = agg("isequal", True, Reorder(acc("A", "i", "j"), F("i", "j")), "j")
    p = plan({"A": tensor(A, fill=False)}, compute("out", "dense", 1, body))
    want = [functools.reduce(lambda a, b: a == b, row, True) for row in A]
    np.testing.assert_array_equal(dense(run(p, numpy_runs=False)), want)


def test_large_or_sparse_queries_are_not_eligible():
    n = NUMPY_MAX_ITERATIONS + 1
    body = Reorder(mj("add", acc("A", "i"), Immediate(1.0)), F("i"))
    q = compute("out", "dense", 1, body)
    big = analyze_query(q, {Alias("A"): tensor(np.ones(n))})
    small = analyze_query(q, {Alias("A"): tensor(np.ones(n - 1))})
    sparse = analyze_query(q, {Alias("A"): tensor(np.ones(8), "coo")})
    assert numpy_eligible(*small) and not numpy_eligible(*big)
    assert not numpy_eligible(*sparse)


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(1, 9), st.integers(1, 9), st.sampled_from(["add", "maximum", "minimum"]),
       st.sampled_from(["int32", "float32", "float64"]), st.sampled_from([0.0, 1.0, np.nan]),
       st.sampled_from(list(AXES)))
def test_random_sizes_against_interpreter(m, n, red, dtype, fill, axes):
    d = np.dtype(dtype)
    fill = 0 if (d.kind == "i" and np.isnan(fill)) else fill
    A, B = sample((m, n), d, fill), sample((m, n), d, fill)
    init = get_operator(red).init_for(d)
    body = agg(red, init, Reorder(mj("multiply", mj("add", acc("A", "i", "j"), acc("B", "i", "j")),
                                     Immediate(0.5)), F("i", "j")), *axes)
    p = plan({"A": tensor(A, "dense", fill), "B": tensor(B, "dense", fill)},
             compute("out", "dense", 2 - len(axes), body))
    out, oracle = run(p), interpret(p)[0]
    assert dense(out).dtype == dense(oracle).dtype
    np.testing.assert_allclose(dense(out), dense(oracle), rtol=1e-5, equal_nan=True)
