"""Differential tests against the reference interpreter (lazysparse.logic.interpret)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import F, acc, agg, compute, dense, mj, plan, spmv_plan, tensor

from lazysparse.kernels.backends import execute_plan
from lazysparse.logic import check_normal_form, interpret
from lazysparse.logic.nodes import Reorder

RNG = np.random.default_rng(3)


def sprand(shape, density=0.3, fill=0.0):
    return np.where(RNG.random(shape) < density, RNG.random(shape), fill)


def _plans():
    A, B = sprand((14, 11)), sprand((14, 11))
    An = sprand((14, 11), fill=np.nan)
    C = sprand((11, 9))
    T = sprand((6, 7, 8), 0.15)
    U, V = RNG.random((7, 3)), RNG.random((8, 3))
    yield "spmv", spmv_plan(tensor(A, "csr"), tensor(sprand((11,), 0.5), "coo"), "coo")
    yield "spgemm", plan({"A": tensor(A, "csr"), "B": tensor(C, "csr")}, compute(
        "out", "csr", 2, agg("add", 0.0, Reorder(mj("multiply", acc("A", "i", "j"),
                                                     acc("B", "j", "k")), F("i", "j", "k")), "j")))
    yield "add", plan({"A": tensor(A, "coo"), "B": tensor(B, "csr")}, compute(
        "out", "coo", 2, Reorder(mj("add", acc("A", "i", "j"), acc("B", "i", "j")), F("i", "j"))))
    yield "nan-max", plan({"A": tensor(An, "csr", np.nan)}, compute(
        "out", "dense", 1, agg("maximum", -np.inf, Reorder(acc("A", "i", "j"), F("i", "j")),
                               "i")))
    yield "nan-add", plan({"A": tensor(An, "csr", np.nan), "B": tensor(B, "csr")}, compute(
        "out", "csr", 2, Reorder(mj("add", acc("A", "i", "j"), acc("B", "i", "j")), F("i", "j"))))
    yield "mttkrp", plan({"T": tensor(T, "csf"), "U": tensor(U), "V": tensor(V)}, compute(
        "out", "dense", 2, agg("add", 0.0, Reorder(mj(
            "multiply", acc("T", "i", "j", "k"), acc("U", "j", "r"), acc("V", "k", "r")),
            F("i", "j", "k", "r")), "j", "k")))


@pytest.mark.parametrize("name,p", list(_plans()), ids=lambda v: v if isinstance(v, str) else "")
def test_matches_interpreter(name, p):
    check_normal_form(p)
    got = execute_plan(p)
    want = interpret(p)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        assert g.dtype == w.dtype
        np.testing.assert_allclose(dense(g), dense(w), equal_nan=True)
        np.testing.assert_equal(np.asarray(g.fill_value), np.asarray(w.fill_value))
