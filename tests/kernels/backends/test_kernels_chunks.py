"""Chunked (parallel) execution: count/offsets/fill, partials, segment-aligned COO chunks."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from helpers import F, acc, agg, compute, dense, mj, plan, tensor

import lazysparse.kernels.backends.numba.cpu_host as host
from lazysparse.kernels.backends import execute_plan
from lazysparse.logic.nodes import Reorder
from tests.conftest import slow_except

RNG = np.random.default_rng(21)


def sprand(shape, density=0.25):
    return np.where(RNG.random(shape) < density, RNG.random(shape), 0.0)


@pytest.fixture(autouse=True)
def many_chunks(monkeypatch):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs two Numba threads")
    monkeypatch.setattr(host, "PARALLEL_MIN_ITERATIONS", 1)
    numba.set_num_threads(2)


@pytest.mark.parametrize("ofmt", slow_except(["csr", "dcsr", "coo"], ["dcsr"]))
def test_chunked_sparse_outputs(ofmt):
    A, B, C = sprand((37, 23)), sprand((37, 23)), sprand((23, 29))
    add = Reorder(mj("add", acc("A", "i", "j"), acc("B", "i", "j")), F("i", "j"))
    out = execute_plan(plan({"A": tensor(A, "csr"), "B": tensor(B, "csr")},
                            compute("out", ofmt, 2, add)))[0]
    np.testing.assert_allclose(dense(out), A + B)
    mm = agg("add", 0.0, Reorder(mj("multiply", acc("A", "i", "j"), acc("C", "j", "k")),
                                 F("i", "j", "k")), "j")
    out = execute_plan(plan({"A": tensor(A, "csr"), "C": tensor(C, "csr")},
                            compute("out", ofmt, 2, mm)))[0]
    np.testing.assert_allclose(dense(out), A @ C)


def test_chunked_partials_and_coo_segments():
    A, y = sprand((141, 19)), RNG.random(141)
    body = agg("add", 1.5, Reorder(mj("multiply", acc("A", "i", "j"), acc("y", "i")),
                                   F("i", "j")), "i")
    out = execute_plan(plan({"A": tensor(A, "csr"), "y": tensor(y)},
                            compute("out", "dense", 1, body)))[0]
    np.testing.assert_allclose(dense(out), 1.5 + A.T @ y)
    T = sprand((7, 9, 10), 0.2)
    U, V = RNG.random((9, 3)), RNG.random((10, 3))
    body = agg("add", 0.0, Reorder(mj("multiply", acc("T", "i", "j", "k"), acc("U", "j", "r"),
                                      acc("V", "k", "r")), F("i", "j", "k", "r")), "j", "k")
    out = execute_plan(plan({"T": tensor(T, "coo"), "U": tensor(U), "V": tensor(V)},
                            compute("out", "dense", 2, body)))[0]
    np.testing.assert_allclose(dense(out), np.einsum("ijk,jr,kr->ir", T, U, V))
    full = agg("maximum", -np.inf, Reorder(acc("A", "i", "j"), F("i", "j")), "i", "j")
    out = execute_plan(plan({"A": tensor(A, "csr")}, compute("out", "dense", 0, full)))[0]
    assert dense(out) == A.max()


@pytest.mark.parametrize("op", ["add", "multiply", "maximum"])
@pytest.mark.parametrize("fmt", ["csr", "dense"])
def test_chunked_bounded_append_compacts(op, fmt, monkeypatch):
    """Sparse add/multiply on two threads: bounded regions per chunk, then compaction
    (chunked_append); empty rows and whole empty chunks included."""
    seen = []
    orig = host.chunked_single_pass
    monkeypatch.setattr(host, "chunked_single_pass",
                        lambda *a, **kw: seen.append(1) or orig(*a, **kw))
    A, B = sprand((53, 31)), sprand((53, 31))
    A[:9] = 0
    B[:9] = 0  # the first chunk's rows hold nothing at all
    A[30], B[41] = 0, 0
    body = Reorder(mj(op, acc("A", "i", "j"), acc("B", "i", "j")), F("i", "j"))
    out = execute_plan(plan({"A": tensor(A, "csr"), "B": tensor(B, fmt)},
                            compute("out", "csr", 2, body)))[0]
    ref = {"add": A + B, "multiply": A * B, "maximum": np.maximum(A, B)}[op]
    np.testing.assert_allclose(dense(out), ref)
    ptr = np.asarray(out.levels[1].ptr)
    assert ptr[0] == 0 and np.all(np.diff(ptr) >= 0) and ptr[-1] == out.values.size
    assert seen == ([1] if fmt == "csr" else [])


def test_chunked_bounded_spgemm(monkeypatch):
    """Gustavson SpGEMM on two threads fills bounded regions (no count pass), compacts."""
    seen = []
    orig = host.chunked_single_pass
    monkeypatch.setattr(host, "chunked_single_pass",
                        lambda *a, **kw: seen.append(1) or orig(*a, **kw))
    A, B = sprand((61, 27), 0.2), sprand((27, 45), 0.3)
    A[:20] = 0  # an empty first chunk
    A[40] = 0
    B[3] = 0  # rows of B with nothing: A's entries there multiply nothing
    mm = agg("add", 0.0, Reorder(mj("multiply", acc("A", "i", "j"), acc("B", "j", "k")),
                                 F("i", "j", "k")), "j")
    out = execute_plan(plan({"A": tensor(A, "csr"), "B": tensor(B, "csr")},
                            compute("out", "csr", 2, mm)))[0]
    np.testing.assert_allclose(dense(out), A @ B)
    ptr, idx = np.asarray(out.levels[1].ptr), np.asarray(out.levels[1].idx)
    assert ptr[-1] == out.values.size
    for r in range(61):
        assert np.all(np.diff(idx[ptr[r]:ptr[r + 1]]) > 0)
    assert seen == [1]
