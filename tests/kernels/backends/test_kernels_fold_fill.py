"""Reductions whose unstored entries do not vanish: the kernel iterates stored entries,
counts them per output entry and folds the fill value in for the rest (registry algebra:
idempotent ops once, ``Operator.repeat`` otherwise; no repeat form: the dense loop)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import F, acc, agg, compute, dense, mj, plan, tensor

from lazysparse.kernels.backends import compile_query, execute_plan
from lazysparse.kernels.compile.planning.coiterate import LoopKind
from lazysparse.logic import check_normal_form, interpret
from lazysparse.logic.internal_ops import astype_op
from lazysparse.logic.nodes import Immediate, MapJoin, Reorder
from lazysparse.logic.operators import get_operator
from tests.conftest import rotation, slow_except

RNG = np.random.default_rng(5)

REDUCTIONS = [("add", 0), ("multiply", 1), ("maximum", None), ("minimum", None),
              ("logical_or", False), ("logical_and", True)]
ORDERS = {"csr": ("i", "j"), "csc": ("j", "i"), "coo": ("i", "j")}


def _matrix(dtype, fill, shape=(13, 9), density=0.25):
    vals = RNG.integers(-3, 4, shape) if np.dtype(dtype).kind in "iu" else \
        np.round(RNG.standard_normal(shape), 2)
    if np.dtype(dtype).kind == "b":
        vals = RNG.random(shape) < 0.5
    a = np.where(RNG.random(shape) < density, vals, fill).astype(dtype)
    a[2, :] = fill  # an empty row
    a[:, 3] = fill  # an empty column
    return a


def _init(op, dtype):
    o = get_operator(op)
    return o.init_for(dtype)


def _run(p):
    check_normal_form(p)
    (g,), (w,) = execute_plan(p), interpret(p)
    assert g.shape == w.shape and g.dtype == w.dtype
    np.testing.assert_allclose(dense(g), dense(w), rtol=1e-6, equal_nan=True)
    return g


@pytest.mark.parametrize("fmt", slow_except(["csr", "csc", "coo"], ["csr", "coo"]))
@pytest.mark.parametrize("op", [r[0] for r in REDUCTIONS])
@pytest.mark.parametrize("fill", slow_except([0.0, 1.0, np.nan], [0.0, np.nan]))
@pytest.mark.parametrize("red", [("i",), ("j",), ("i", "j")], ids=["col", "row", "full"])
def test_fold_matches_interpreter(fmt, op, fill, red):
    if op.startswith("logical"):
        dtype, fill = np.bool_, bool(fill == 1.0)
    else:
        dtype = np.float64
    a = _matrix(dtype, fill)
    A = tensor(a, fmt, fill)
    body = agg(op, _init(op, np.dtype(dtype)), Reorder(acc("A", "i", "j"), F(*ORDERS[fmt])),
               *red)
    _run(plan({"A": A}, compute("out", "dense", 2 - len(red), body)))


@pytest.mark.parametrize("dtype, op", rotation(
    [np.int8, np.uint8, np.int64, np.float32, np.complex128], ["add", "multiply"],
    ["int8", "uint8", "int64", "float32", "complex128"]))
def test_repeat_forms_by_dtype(dtype, op):
    """sum/prod with fill 1 (prod stays small): integer wrap-around matches repeated ops."""
    a = _matrix(dtype, 1 if op == "add" else 1)
    if op == "multiply":
        a = np.where(a == 1, a, np.asarray(2 if np.dtype(dtype).kind in "iuc" else 1.5,
                                           dtype=a.dtype)).astype(dtype)
    for red in (("i",), ("j",), ("i", "j")):
        body = agg(op, _init(op, np.dtype(dtype)), Reorder(acc("A", "i", "j"), F("i", "j")),
                   *red)
        _run(plan({"A": tensor(a, "csr", a.dtype.type(1))},
                  compute("out", "dense", 2 - len(red), body)))


def test_count_nonzero_uses_the_constant_at_run_time():
    """sum(astype(A != c)) with the constant c a kernel argument: c = 0 and c = 1 share
    one kernel, and each folds its own skipped value."""
    a = _matrix(np.float64, 0.0)
    A = tensor(a, "csr", 0.0)
    keys = set()
    for c in (0.0, 1.0, 0.5):
        nz = MapJoin(Immediate(astype_op("int64")),
                     (mj("not_equal", acc("A", "i", "j"), Immediate(c)),))
        body = agg("add", 0, Reorder(nz, F("i", "j")), "i")
        p = plan({"A": A}, compute("out", "dense", 1, body))
        g = _run(p)
        np.testing.assert_array_equal(dense(g), (a != c).sum(axis=0))
        keys.add(compile_query(p.bodies[1], {p.bodies[0].lhs: A}).key)
    assert len(keys) == 1


def test_fold_visits_only_stored_entries():
    """The folded kernel's column loop is driven by A (not a dense range)."""
    a = _matrix(np.float64, 0.0)
    A = tensor(a, "csr", 0.0)
    body = agg("maximum", -np.inf, Reorder(acc("A", "i", "j"), F("i", "j")), "i")
    p = plan({"A": A}, compute("out", "dense", 1, body))
    k = compile_query(p.bodies[1], {p.bodies[0].lhs: A})
    assert k.lowered.fold is not None
    assert k.lowered.plans[1].kind is LoopKind.DRIVER
    _run(p)


def test_no_repeat_form_falls_back_to_dense_loop():
    """A non-commutative reduction (overwrite) cannot fold: every coordinate is visited."""
    a = _matrix(np.float64, 0.0)
    A = tensor(a, "csr", 0.0)
    body = agg("overwrite", 0.0, Reorder(acc("A", "i", "j"), F("i", "j")), "j")
    p = plan({"A": A}, compute("out", "dense", 1, body))
    k = compile_query(p.bodies[1], {p.bodies[0].lhs: A})
    assert k.lowered.fold is None and k.lowered.plans[1].kind is LoopKind.RANGE
    _run(p)


def test_fold_with_partials_and_chunks():
    """A long reduced outer loop (per-chunk partials under threads) still counts right."""
    a = _matrix(np.float64, np.nan, shape=(5000, 4), density=0.3)
    A = tensor(a, "csr", np.nan)
    body = agg("add", 0.0, Reorder(acc("A", "i", "j"), F("i", "j")), "i", "j")
    _run(plan({"A": A}, compute("out", "dense", 0, body)))
    body = agg("maximum", -np.inf, Reorder(acc("A", "i", "j"), F("i", "j")), "i")
    _run(plan({"A": A}, compute("out", "dense", 1, body)))


def test_fold_over_a_product_with_a_dense_operand():
    """max(A * x) along i with A fill 1: outside A's pattern the value is x (data), so the
    loop stays dense; with the product's fill known it folds."""
    a = _matrix(np.float64, 1.0)
    x = RNG.standard_normal(9)
    body = agg("maximum", -np.inf, Reorder(mj("multiply", acc("A", "i", "j"), acc("x", "j")),
                                           F("i", "j")), "i")
    _run(plan({"A": tensor(a, "csr", 1.0), "x": tensor(x)}, compute("out", "dense", 1, body)))
    body = agg("minimum", np.inf, Reorder(mj("add", acc("A", "i", "j"), Immediate(2.0)),
                                          F("i", "j")), "j")
    _run(plan({"A": tensor(a, "coo", 1.0)}, compute("out", "dense", 1, body)))


def test_float_prod_over_fill_zero_keeps_the_dense_loop():
    """prod over fill 0 where the stored entries alone overflow: folding would give
    inf * 0 = NaN; the dense loop meets a 0 first, as NumPy does."""
    a = np.zeros((6, 5), np.float32)
    a[0, 1:] = 1e30
    a[1:, 0] = 1e30
    A = tensor(a, "csr", np.float32(0))
    body = agg("multiply", np.float32(1), Reorder(acc("A", "i", "j"), F("i", "j")), "i", "j")
    p = plan({"A": A}, compute("out", "dense", 0, body))
    k = compile_query(p.bodies[1], {p.bodies[0].lhs: A})
    assert k.lowered.fold is None
    (g,) = execute_plan(p)
    assert dense(g)[()] == 0.0
