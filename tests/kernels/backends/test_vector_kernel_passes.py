"""Issues 34 (item 3) and 36: the kernels of the matrix-vector and dense vector products
make one pass over their data, with no work scipy or NumPy does not do: ``A.T @ v`` of a
CSR ``A`` is one scatter over ``A``'s rows (no relayout of ``A``, no sort or workspace, no
partial buffers at one thread), the dense axpy writes its output without a preset fill,
and a dense dot is one scalar-accumulator loop. Deterministic properties of the plan and
of the generated source; the times are in benchmarks/bench_products.py --skewed."""

from __future__ import annotations

import re

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from helpers import F, acc, agg, compute, mj, tensor

import lazysparse as xp
import lazysparse.kernels.backends.execute as ex
from lazysparse.kernels.backends.numba.cpu_host import host_facts
from lazysparse.logic.nodes import Alias, Immediate, Reorder

RNG = np.random.default_rng(36)


@pytest.fixture(autouse=True)
def one_thread():
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    yield
    numba.set_num_threads(before)


def _chunk_source(source: str) -> str:
    """The ``chunk`` function of a generated module."""
    start = source.index("def chunk(")
    end = source.find("\n@njit", start)
    return source[start:end if end >= 0 else None]


def _loops(src: str) -> list[str]:
    return re.findall(r"^\s*for \w+ in range\(", src, flags=re.M)


@pytest.mark.parametrize("shape", [(300, 200), (200, 300)])
def test_transposed_matvec_is_one_scatter_pass(shape):
    a = sp.random_array(shape, density=0.05, format="csr", rng=RNG)
    v = RNG.random(shape[0])
    la, lv = xp.asarray(a), xp.asarray(v)
    np.testing.assert_allclose(xp.to_numpy(xp.compute(la.T @ lv)), a.T @ v)
    report = xp.explain(la.T @ lv, run=True)
    assert len(report.kernels) == 1
    assert "relayout" not in str(report)
    (kernel,) = report.kernels
    src = _chunk_source(kernel.source)
    assert len(_loops(src)) == 2  # A's rows, then each row's stored entries
    assert not any(w in src for w in ("argsort", "ws_", ".sort(", "np.empty"))
    # one scatter into the output, read-modify-write at the stored column
    assert len(re.findall(r"out\[_u\(\(obase \+ od1\)\)\] = ", src)) == 1


def _dense_kernel(body, n: int, names: tuple[str, ...], out_ndim: int):
    env = {Alias(s): tensor(RNG.random(n)) for s in names}
    return ex.compile_query(compute("out", "dense", out_ndim, body), env)


def test_dense_axpy_writes_output_without_preset():
    n = 50_000
    body = Reorder(mj("add", acc("p", "i"), mj("multiply", Immediate(0.5), acc("q", "i"))), F("i"))
    k = _dense_kernel(body, n, ("p", "q"), 1)
    assert host_facts(k).writes_all  # the host allocates with np.empty: no zero-fill pass
    src = _chunk_source(k.source)
    assert len(_loops(src)) == 1  # one pass, one store per entry
    p, q = RNG.random(n), RNG.random(n)
    lp, lq = xp.asarray(p), xp.asarray(q)
    np.testing.assert_array_equal(xp.to_numpy(xp.compute(lp + 0.5 * lq)), p + 0.5 * q)


def test_dense_dot_is_one_accumulator_loop():
    n = 50_000
    body = agg("add", 0.0, Reorder(mj("multiply", acc("p", "i"), acc("q", "i")), F("i")), "i")
    k = _dense_kernel(body, n, ("p", "q"), 0)
    src = _chunk_source(k.source)
    assert len(_loops(src)) == 1
    assert "acc = " in src and "fastmath={'reassoc'}" in k.source  # a vectorized sum
    p, q = RNG.random(n), RNG.random(n)
    lp, lq = xp.asarray(p), xp.asarray(q)
    np.testing.assert_allclose(float(xp.vecdot(lp, lq)), p @ q, rtol=1e-12)
    np.testing.assert_allclose(float(xp.sum(lp * lq)), p @ q, rtol=1e-12)
