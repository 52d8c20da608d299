"""Differential tests: products, sums and elementwise kernels against NumPy on dense data."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import F, acc, agg, compute, dense, mj, plan, spmv_plan, tensor

from lazysparse.kernels.backends import execute_plan
from lazysparse.logic.nodes import Reorder
from tests.conftest import rotation

RNG = np.random.default_rng(7)


def sprand(shape, density=0.25, dtype=np.float64, fill=0):
    a = RNG.random(shape)
    mask = RNG.random(shape) < density
    vals = (a * 10).astype(dtype) if np.dtype(dtype).kind in "iu" else a.astype(dtype)
    return np.where(mask, vals, np.asarray(fill).astype(dtype))


def run(p):
    (out,) = execute_plan(p)
    return out


@pytest.mark.parametrize("afmt, xfmt, ofmt", rotation(
    ["csr", "coo", "dense", "dcsr"],
    [("dense", "dense"), ("coo", "dense"), ("dense", "coo"), ("coo", "coo")]))
def test_spmv_and_spmspv(afmt, xfmt, ofmt):
    A, x = sprand((23, 17)), sprand((17,), 0.4)
    out = run(spmv_plan(tensor(A, afmt), tensor(x, xfmt), ofmt))
    assert out.spec.name == ofmt
    np.testing.assert_allclose(dense(out), A @ x)


def test_spmv_csc_input_scatters_into_dense_output():
    A, x = sprand((23, 17)), sprand((17,), 0.9)
    body = agg("add", 0, Reorder(mj("multiply", acc("A", "i", "j"), acc("x", "j")),
                                 F("j", "i")), "j")
    out = run(plan({"A": tensor(A, "csc"), "x": tensor(x)}, compute("out", "dense", 1, body)))
    np.testing.assert_allclose(dense(out), A @ x)


@pytest.mark.parametrize("ofmt", ["dense", "coo"])
def test_transpose_matvec(ofmt):
    A, y = sprand((31, 12)), sprand((31,), 0.9)
    body = agg("add", 0, Reorder(mj("multiply", acc("A", "i", "j"), acc("y", "i")),
                                 F("i", "j")), "i")
    out = run(plan({"A": tensor(A, "csr"), "y": tensor(y)}, compute("out", ofmt, 1, body)))
    np.testing.assert_allclose(dense(out), A.T @ y)


@pytest.mark.parametrize("ofmt, bfmt", rotation(["csr", "coo", "dcsr", "dense"], ["csr", "dense"]))
def test_spgemm(ofmt, bfmt):
    A, B = sprand((20, 15), 0.2), sprand((15, 18), 0.2)
    body = agg("add", 0, Reorder(mj("multiply", acc("A", "i", "j"), acc("B", "j", "k")),
                                 F("i", "j", "k")), "j")
    out = run(plan({"A": tensor(A, "csr"), "B": tensor(B, bfmt)}, compute("out", ofmt, 2, body)))
    assert out.spec.name == ofmt
    np.testing.assert_allclose(dense(out), A @ B)


@pytest.mark.parametrize("fmts,ofmt", [(("csr", "csr"), "csr"), (("coo", "coo"), "coo"),
                                       (("csr", "dense"), "dense"), (("csr", "csr"), "csc"),
                                       (("csf", "csr"), "coo"), (("csc", "csc"), "csr")])
def test_sparse_add(fmts, ofmt):
    A, B = sprand((19, 21)), sprand((19, 21))
    # result axes follow the loop order: looping (j, i) over CSC gives (A + B).T
    order = ("j", "i") if fmts[0] == "csc" else ("i", "j")
    body = Reorder(mj("add", acc("A", "i", "j"), acc("B", "i", "j")), F(*order))
    out = run(plan({"A": tensor(A, fmts[0]), "B": tensor(B, fmts[1])},
                   compute("out", ofmt, 2, body)))
    assert out.spec.name == ofmt
    np.testing.assert_allclose(dense(out), (A + B).T if order[0] == "j" else A + B)


@pytest.mark.parametrize("fmts,ofmt", [(("csr", "csr"), "csr"), (("csr", "dense"), "csr"),
                                       (("coo", "dense"), "coo"), (("coo", "csr"), "dense")])
def test_elementwise_multiply(fmts, ofmt):
    A, B = sprand((19, 21)), sprand((19, 21), 0.5)
    if fmts[1] == "dense":  # no product is 0, so none is dropped (outputs never store
        B = B + (B == 0)  # the fill: a 0 would give up the shared pattern)
    body = Reorder(mj("multiply", acc("A", "i", "j"), acc("B", "i", "j")), F("i", "j"))
    ta = tensor(A, fmts[0])
    out = run(plan({"A": ta, "B": tensor(B, fmts[1])}, compute("out", ofmt, 2, body)))
    np.testing.assert_allclose(dense(out), A * B)
    if fmts[1] == "dense" and ofmt == fmts[0]:
        # the result's pattern is A's: its index arrays are reused, not rebuilt
        assert out.levels[-1].idx is ta.levels[-1].idx


def test_sddmm_reuses_pattern():
    S, U, V = sprand((25, 30), 0.2), RNG.random((25, 6)), RNG.random((30, 6))
    body = agg("add", 0, Reorder(mj("multiply", acc("S", "i", "j"), acc("U", "i", "k"),
                                    acc("V", "j", "k")), F("i", "j", "k")), "k")
    ts = tensor(S, "csr")
    out = run(plan({"S": ts, "U": tensor(U), "V": tensor(V)}, compute("out", "csr", 2, body)))
    np.testing.assert_allclose(dense(out), S * (U @ V.T))
    assert out.levels[1].idx is ts.levels[1].idx


@pytest.mark.parametrize("fmt", ["coo", "csf"])
def test_mttkrp(fmt):
    T = sprand((9, 11, 13), 0.1)
    C, D = RNG.random((11, 4)), RNG.random((13, 4))
    body = agg("add", 0, Reorder(mj("multiply", acc("T", "i", "j", "k"), acc("C", "j", "r"),
                                    acc("D", "k", "r")), F("i", "j", "k", "r")), "j", "k")
    out = run(plan({"T": tensor(T, fmt), "C": tensor(C), "D": tensor(D)},
                   compute("out", "dense", 2, body)))
    np.testing.assert_allclose(dense(out), np.einsum("ijk,jr,kr->ir", T, C, D))


def _graph(n=30):
    G = (RNG.random((n, n)) < 0.15).astype(np.float64)
    G = np.triu(G, 1)
    return G + G.T


def test_triangles_one_query():
    G = _graph()
    t = tensor(G, "csr")
    body = agg("add", 0, Reorder(mj("multiply", acc("A", "i", "j"), acc("B", "i", "k"),
                                    acc("C", "k", "j")), F("i", "k", "j")), "i", "k", "j")
    out = run(plan({"A": t, "B": t, "C": t}, compute("out", "dense", 0, body)))
    assert out.shape == ()
    assert dense(out) == pytest.approx(np.sum(G * (G @ G)))


def test_triangles_two_queries():
    G = _graph()
    t = tensor(G, "csr")
    sq = agg("add", 0, Reorder(mj("multiply", acc("A", "i", "k"), acc("A", "k", "j")),
                               F("i", "k", "j")), "k")
    tot = agg("add", 0, Reorder(mj("multiply", acc("A", "i", "j"), acc("S", "i", "j")),
                                F("i", "j")), "i", "j")
    p = plan({"A": t}, compute("S", "csr", 2, sq), compute("out", "dense", 0, tot))
    (out,) = execute_plan(p)
    assert dense(out) == pytest.approx(np.sum(G * (G @ G)))


@pytest.mark.parametrize("fmts", [("csr", "csr", "csr"), ("coo", "dense", "csr"),
                                  ("csr", "coo", "dense")])
def test_fused_three_input_chain(fmts):
    A, B, C = sprand((17, 13)), sprand((17, 13), 0.5), sprand((17, 13))
    body = Reorder(mj("add", mj("multiply", acc("A", "i", "j"), acc("B", "i", "j")),
                      acc("C", "i", "j")), F("i", "j"))
    tens = {k: tensor(v, f) for (k, v), f in zip({"A": A, "B": B, "C": C}.items(), fmts,
                                                  strict=True)}
    out = run(plan(tens, compute("out", "csr", 2, body)))
    np.testing.assert_allclose(dense(out), A * B + C)
