"""Loop fields no access indexes (axes added by expand_dims/keepdims) have extent 1."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import F, acc, agg, compute, dense, mj, plan, tensor

from lazysparse.kernels.backends import compile_query, execute_plan
from lazysparse.logic import check_normal_form, interpret
from lazysparse.logic.nodes import Field, Immediate, Reorder
from tests.conftest import rotation, slow_except

RNG = np.random.default_rng(11)


def sprand(shape, density=0.3, fill=0.0):
    return np.where(RNG.random(shape) < density, RNG.random(shape), fill)


def _check(p):
    check_normal_form(p)
    got, want = execute_plan(p), interpret(p)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        assert g.dtype == w.dtype
        np.testing.assert_allclose(dense(g), dense(w), equal_nan=True)
        np.testing.assert_equal(np.asarray(g.fill_value), np.asarray(w.fill_value))
    return got


@pytest.mark.parametrize("fmt, ofmt", rotation(["csr", "coo", "csc"], ["dense", "csr", "coo"],
                                              slow_cases=["dense"]))
def test_keepdims_sum(fmt, ofmt):
    """sum(A, axis=1, keepdims=True): the kept axis k is indexed by nothing."""
    A = tensor(sprand((23, 17)), fmt)
    order = ("j", "i", "k") if fmt == "csc" else ("i", "k", "j")
    body = agg("add", 0.0, Reorder(acc("A", "i", "j"), F(*order)), "j")
    (out,) = _check(plan({"A": A}, compute("out", ofmt, 2, body)))
    assert out.shape == (23, 1)


@pytest.mark.parametrize("fmt", slow_except(["dense", "csr", "coo"], ["csr"]))
def test_expand_dims_map(fmt):
    """A[None, :, :] * 2 and A[:, None, :] with a sparse result."""
    A = tensor(sprand((9, 13)), fmt)
    for order in (("k", "i", "j"), ("i", "k", "j")):
        body = Reorder(mj("multiply", acc("A", "i", "j"), Immediate(2.0)), F(*order))
        (out,) = _check(plan({"A": A}, compute("out", "coo", 3, body)))
        assert out.shape == ((1, 9, 13) if order[0] == "k" else (9, 1, 13))


def test_unindexed_field_reduced_and_as_value():
    """An extent-1 field may be reduced, and used as a value (it is always 0). The
    interpreter cannot size a value-only field, so NumPy is the oracle here."""
    a = sprand((30, 8))
    A = tensor(a, "csr")
    body = agg("add", 0.0, Reorder(acc("A", "i", "j"), F("k", "i", "j")), "k", "j")
    (out,) = _check(plan({"A": A}, compute("out", "dense", 1, body)))
    assert out.shape == (30,)
    body = agg("maximum", -np.inf, Reorder(mj("add", acc("A", "i", "j"), Field("k")),
                                           F("k", "i", "j")), "k")
    (out,) = execute_plan(plan({"A": A}, compute("out", "csr", 2, body)))
    np.testing.assert_allclose(dense(out), a)


def test_size_one_input_axis_distinct_from_unindexed():
    """A (1, n) input (field indexed, extent 1) and an unindexed field share no kernel
    with a same-shaped result built the other way round."""
    a = sprand((1, 40))
    p1 = plan({"A": tensor(a, "csr")}, compute(
        "out", "dense", 2, Reorder(acc("A", "i", "j"), F("i", "j"))))
    p2 = plan({"x": tensor(a[0], "coo")}, compute(
        "out", "dense", 2, Reorder(acc("x", "j"), F("i", "j"))))
    r1, r2 = _check(p1)[0], _check(p2)[0]
    np.testing.assert_allclose(dense(r1), dense(r2))
    k1 = compile_query(p1.bodies[1], {p1.bodies[0].lhs: p1.bodies[0].rhs.tns.val})
    k2 = compile_query(p2.bodies[1], {p2.bodies[0].lhs: p2.bodies[0].rhs.tns.val})
    assert k1.key != k2.key


def test_index_dtype_shares_the_kernel_and_stays_correct():
    """int32 and int64 index arrays: one kernel (Numba specializes per signature), both
    right; the index dtype is not part of the structure, so it cannot cause a wrong hit."""
    from lazysparse.formats.levels import Compressed, Dense
    from lazysparse.formats.tensor import Tensor

    a = sprand((12, 10))
    t32 = tensor(a, "csr")
    lv = t32.levels[1]
    t64 = Tensor(a.shape, [Dense(12), Compressed(10, lv.ptr.astype(np.int64),
                                                  lv.idx.astype(np.int64))],
                 (0, 1), t32.values, 0.0)
    keys = set()
    for t in (t32, t64):
        body = agg("maximum", -np.inf, Reorder(acc("A", "i", "j"), F("i", "j")), "i")
        p = plan({"A": t}, compute("out", "dense", 1, body))
        (out,) = _check(p)
        np.testing.assert_allclose(dense(out), a.max(axis=0))
        keys.add(compile_query(p.bodies[1], {p.bodies[0].lhs: t}).key)
    assert len(keys) == 1
