"""Which loop runs in parallel (``compile.planning.parallel.choose_parallel``) and into how
many chunks a call splits (``chunk_count``): decided by structure and size, results equal
to one chunk."""

from __future__ import annotations

from types import SimpleNamespace

import numba
import numpy as np
import pytest
import scipy.sparse as sps

import lazysparse as xp
from lazysparse.kernels.backends.numba import cpu_host
from lazysparse.kernels.compile.ir.loop_ir import Var
from lazysparse.kernels.compile.planning import parallel
from lazysparse.kernels.compile.planning.parallel import (
    FieldExtent,
    ParallelChoice,
    ParallelMode,
    chunk_count,
    combine_count,
)
from tests.conftest import slow_except


def _source(expr) -> str:
    return "\n".join(k.source for k in xp.explain(expr).kernels)


def _csr(n: int, m: int, density: float, seed: int) -> sps.csr_array:
    return sps.random_array((n, m), density=density, format="csr", rng=seed)


@pytest.mark.parametrize(("spelling", "note"), [
    (lambda a, x, y: a @ x, "chunks of"),  # SpMV: rows write disjoint outputs
    (lambda a, x, y: a.T @ y, "into per-chunk partials"),  # Aᵀx scatters into every output
    (lambda a, x, y: xp.sum(a * x[None, :]), "into per-chunk partials"),  # full reduction
    (lambda a, x, y: xp.sum(a * x[None, :], axis=1), "chunks of"),
])
def test_the_schedule_names_the_parallel_loop(spelling, note) -> None:
    a = xp.asarray(_csr(50, 40, 0.1, 1))
    x, y = xp.asarray(np.arange(40.0)), xp.asarray(np.arange(50.0))
    src = _source(spelling(a, x, y))
    assert "run in parallel" in src and note in src


def test_a_merge_at_the_outer_loop_stays_sequential() -> None:
    a, b = (xp.asarray(sps.coo_array(_csr(30, 30, 0.1, s))) for s in (2, 3))
    src = _source(a + b)
    assert "sequential (the outer loop merges several operands)" in src
    c = xp.asarray(_csr(30, 30, 0.1, 2))
    assert "chunks of i0 write disjoint outputs" in _source(c + c * 2)


def _lw(parallel_: bool, partials: bool, extent: int) -> SimpleNamespace:
    mode = (ParallelMode.PARTIALS if partials else ParallelMode.DISJOINT if parallel_
            else ParallelMode.SEQUENTIAL)
    return SimpleNamespace(parallel=parallel_, partials=partials,
                           extent0=FieldExtent("i", Var("n_i")),
                           choice=ParallelChoice(mode, "test"))


def _data(extent: int, stored: int) -> SimpleNamespace:
    return SimpleNamespace(extents={"i": extent},
                           tensors=[SimpleNamespace(values=np.empty(stored))])


def test_chunk_count_rules() -> None:
    # sequential kernels and one thread never split
    assert chunk_count(_lw(False, False, 10**6), _data(10**6, 10**7), 1, 2, 2048) == 1
    assert chunk_count(_lw(True, False, 10**6), _data(10**6, 10**7), 1, 1, 2048) == 1
    # disjoint: CHUNKS_PER_THREAD per thread, never more than the iterations
    assert chunk_count(_lw(True, False, 0), _data(10**6, 10), 1, 2, 2048) == \
        2 * parallel.CHUNKS_PER_THREAD
    assert chunk_count(_lw(True, False, 0), _data(3, 10**6), 1, 2, 2048) == 3
    # small loops with little work stay whole
    assert chunk_count(_lw(True, False, 0), _data(100, 100), 1, 2, 2048) == 1
    # partials: never more chunks than the work pays for
    assert chunk_count(_lw(True, True, 0), _data(10**6, 5 * 10**6), 10**6, 2, 2048) == 2
    assert chunk_count(_lw(True, True, 0), _data(10**6, 10**6), 10**6, 2, 2048) == 1
    assert chunk_count(_lw(True, True, 0), _data(10**6, 10**7), 1, 2, 2048) == \
        2 * parallel.CHUNKS_PER_THREAD
    assert combine_count(10, 2) == 1
    assert combine_count(10**6, 2) == 2


@pytest.fixture
def two_threads(monkeypatch):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs two Numba threads")
    monkeypatch.setattr(cpu_host, "PARALLEL_MIN_ITERATIONS", 1)
    monkeypatch.setattr(parallel, "PARTIALS_WORK_PER_OUTPUT", 0)
    monkeypatch.setattr(parallel, "COMBINE_MIN_OUTPUT", 4)
    old = numba.get_num_threads()
    numba.set_num_threads(2)
    yield
    numba.set_num_threads(old)


@pytest.mark.parametrize("dtype", slow_except([np.float64, np.int32, np.complex128, np.uint8],
                                               [np.float64, np.int32]))
def test_partials_combine_like_numpy(two_threads, dtype) -> None:
    A = _csr(300, 200, 0.05, 7)
    A.data = (A.data * 10).astype(dtype)
    x = np.arange(300).astype(dtype)
    a = xp.asarray(A)
    for _ in range(2):  # a loop that rebinds, as users write
        r = a.T @ xp.asarray(x)
        np.testing.assert_allclose(xp.to_numpy(r), A.toarray().T @ x, rtol=1e-6)
    if np.dtype(dtype).kind != "c":
        assert float(xp.max(a)) == A.toarray().max()
    assert complex(xp.sum(a)) == pytest.approx(complex(A.toarray().sum()), rel=1e-6)
