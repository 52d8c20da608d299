"""Computes are thread-safe (issue 32, item 2): threads computing different expressions
over shared inputs never see a module registry change under them (held values, live
arrays, memo, plan and kernel caches, structural keys), and every value matches NumPy."""

from __future__ import annotations

import gc
import itertools
import sys
import threading
import traceback
from collections.abc import Callable, Iterator

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.api.array import held_values
from lazysparse.api.array.live import BY_ALIAS
from lazysparse.formats.compiled.sync import Counters
from lazysparse.kernels.backends.numba import cache as kernel_cache

THREADS = 8
N = 24
LAZY = 16  # shared uncomputed arrays

Check = Callable[[], None]


def _close(got: object, want: object) -> None:
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12)


class _Shared:
    """Inputs every thread reads: computed dense and CSR arrays, uncomputed expressions of
    them, and their NumPy twins."""

    def __init__(self) -> None:
        rng = np.random.default_rng(0)
        self.s_np = sp.random_array((N, N), density=0.2, format="csr", rng=rng)
        self.dense_np = self.s_np.toarray()
        self.d_np = rng.normal(size=(N, N))
        self.v_np = rng.normal(size=N)
        self.S, self.D, self.v = (xp.asarray(self.s_np), xp.asarray(self.d_np),
                                  xp.asarray(self.v_np))
        # uncomputed arrays every thread reads: the first readers compute them, at once
        self.lazy = [self.S @ (self.v * (1.0 + j)) + self.D[j % N] for j in range(LAZY)]

    def lazy_want(self, j: int) -> np.ndarray:
        """NumPy's value of ``lazy[j]``."""
        return self.dense_np @ (self.v_np * (1.0 + j)) + self.d_np[j % N]


def _operations(sh: _Shared, seed: int) -> list[Callable[[int], None]]:
    """One thread's mix of operations (each checks its value against NumPy); ``i`` is the
    iteration, which varies the constants (repeated plans, new constants)."""
    local_d = xp.asarray(sh.d_np.copy())
    local_s = xp.asarray(sh.s_np.copy())
    mine = {"d": sh.d_np.copy(), "s": sh.dense_np.copy()}
    held: list[object] = []  # uncomputed arrays the thread holds: held-value candidates

    def elementwise_dense(i: int) -> None:
        c = 1.0 + i % 7
        _close(xp.compute(xp.sin(sh.D) * c + sh.v), np.sin(sh.d_np) * c + sh.v_np)

    def elementwise_csr(i: int) -> None:
        c = 2.0 + i % 5
        y = sh.S * c - sh.S
        _close(xp.compute(y).todense(), sh.dense_np * c - sh.dense_np)

    def reductions(i: int) -> None:
        _close(xp.sum(sh.S, axis=i % 2).todense(), sh.dense_np.sum(axis=i % 2))
        _close(float(xp.max(sh.D)), sh.d_np.max())

    def matmul(i: int) -> None:
        c = 0.5 + i % 3
        Ap = sh.S @ (sh.v * c)  # a reduction held across the float() below
        held.append(Ap)
        _close(float(xp.vecdot(Ap, sh.v)), (sh.dense_np @ (sh.v_np * c)) @ sh.v_np)
        _close(Ap, sh.dense_np @ (sh.v_np * c))
        del held[:-4]

    def setitem(i: int) -> None:
        r, c = (seed + i) % N, (3 * i + seed) % N
        local_d[r, c] = float(i)
        mine["d"][r, c] = float(i)
        local_s[r, c] = float(i + 1)
        mine["s"][r, c] = float(i + 1)
        _close(float(xp.sum(local_d)), mine["d"].sum())
        _close(local_s.todense(), mine["s"])

    def shared_uncomputed(i: int) -> None:
        j = (i + seed) % LAZY
        _close(float(xp.sum(sh.lazy[j])), sh.lazy_want(j).sum())
        _close(sh.lazy[(j + 1) % LAZY], sh.lazy_want((j + 1) % LAZY))

    def float_reads(i: int) -> None:
        _close(float(sh.D[i % N, seed % N]), sh.d_np[i % N, seed % N])
        _close(float(xp.vecdot(sh.v, sh.v)), sh.v_np @ sh.v_np)

    def new_expression(i: int) -> None:
        # a new plan shape for this thread and iteration (plan-cache misses; kernels of
        # the few structures are shared by the threads)
        k = 1 + (seed + i) % 3
        y = sh.v
        for _ in range(k):
            y = xp.exp(y * 0.1) - y
        want = sh.v_np
        for _ in range(k):
            want = np.exp(want * 0.1) - want
        held.append(y)
        _close(y[: 2 + i % (N - 2)], want[: 2 + i % (N - 2)])

    return [elementwise_dense, elementwise_csr, reductions, matmul, setitem, float_reads,
            new_expression, shared_uncomputed]


@pytest.fixture
def racy() -> Iterator[None]:
    """Thread switches every microsecond while the test runs (races become likely)."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def _stress(iterations: int) -> list[str]:
    """Run ``THREADS`` threads of ``iterations`` mixed operations; the tracebacks raised."""
    sh = _Shared()
    errors: list[str] = []
    for op in _operations(sh, 0):  # warm the kernels: the timed part compiles little
        op(0)
    start = threading.Barrier(THREADS)

    def worker(seed: int) -> None:
        ops = _operations(sh, seed)
        start.wait()
        try:
            for i in range(iterations):
                ops[(i + seed) % len(ops)](i)
        except BaseException:  # noqa: B036 - every failure of a thread is the test's
            errors.append(traceback.format_exc())

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_threads_compute_without_errors(racy: None) -> None:
    errors = _stress(150)
    assert not errors, f"{len(errors)} threads failed:\n" + "\n".join(errors[:3])


@pytest.mark.slow
@pytest.mark.parametrize("run", range(5))
def test_threads_compute_without_errors_long(racy: None, run: int) -> None:
    errors = _stress(1000)
    assert not errors, f"{len(errors)} threads failed:\n" + "\n".join(errors[:3])


def test_registries_drain_after_threads() -> None:
    """Once the threads are done and their arrays gone, none of them stays registered."""
    pending, live = held_values.pending_count(), len(BY_ALIAS)
    _stress(20)
    gc.collect()
    assert held_values.pending_count() <= pending
    assert len(BY_ALIAS) <= live


def test_counters_are_exact_under_threads(racy: None) -> None:
    stats = Counters("hits")
    start = threading.Barrier(THREADS)

    def bump() -> None:
        start.wait()
        for _ in range(20_000):
            stats.bump("hits")

    _run_threads(bump)
    assert stats["hits"] == THREADS * 20_000
    assert dict(stats) == {"hits": THREADS * 20_000}


def test_a_new_kernel_is_built_once_by_racing_threads(racy: None) -> None:
    s_np = sp.random_array((30, 20), density=0.2, format="csr", rng=3).astype(np.float32)
    s = xp.asarray(s_np)
    start = threading.Barrier(THREADS)
    results: list[object] = []

    def compute() -> None:
        start.wait()  # every thread asks for the same new kernel at once
        results.append(xp.sum(xp.expm1(xp.atan(s) * 3) - s, axis=0).todense())

    before = dict(kernel_cache.STATS)
    _run_threads(compute)
    after = kernel_cache.STATS
    assert after["generated"] - before["generated"] == 1
    assert (after["compiled"] + after["disk_loaded"]
            - before["compiled"] - before["disk_loaded"]) == 1
    d = s_np.toarray()
    want = (np.expm1(np.arctan(d) * 3) - d).sum(axis=0)
    assert len(results) == THREADS
    for r in results:
        np.testing.assert_allclose(np.asarray(r), want, rtol=1e-5)


def _run_threads(fn: Callable[[], None], n: int = THREADS) -> None:
    """Run ``fn`` on ``n`` threads; re-raise the first failure."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as e:  # noqa: B036 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def _in_thread(fn: Callable[[], object]) -> object:
    """``fn()`` run on a new thread (its arrays are that thread's)."""
    out: list[object] = []
    _run_threads(lambda: out.append(fn()), 1)
    return out[0]


@pytest.mark.parametrize("where", ["same thread", "other thread"])
def test_a_compute_keeps_held_values_of_its_own_thread(where: str) -> None:
    sh = _Shared()
    X = sh.S @ sh.v  # uncomputed, read by both threads
    build = (lambda f: f()) if where == "same thread" else _in_thread
    Y = build(lambda: xp.vecdot(X, X) * X)  # reads X and reduces: shares its history
    Z = build(lambda: sh.S @ (sh.v * 2))  # a held reduction of the plan below
    x_np = sh.dense_np @ sh.v_np
    z_np = sh.dense_np @ (sh.v_np * 2)
    _close(xp.compute(X + Z), x_np + z_np)
    # kept only when built on the computing thread: another thread may be writing it now
    kept = where == "same thread"
    assert (Y.result is not None) is kept and (Z.result is not None) is kept
    _close(Y, (x_np @ x_np) * x_np)
    _close(Z, z_np)


def test_threads_solving_with_one_matrix_factorize_it_once(
        racy: None, monkeypatch: pytest.MonkeyPatch) -> None:
    import scipy.sparse.linalg as spla

    n = 40
    a_np = (sp.random_array((n, n), density=0.1, format="csr", rng=5)
            + sp.eye_array(n, format="csr") * 4)
    A = xp.asarray(a_np)
    real, calls = spla.splu, []
    monkeypatch.setattr(spla, "splu", lambda m: (calls.append(1), real(m))[1])
    start = threading.Barrier(THREADS)
    rhs = np.random.default_rng(6).normal(size=(THREADS, n))
    out: dict[int, object] = {}

    def solve(i: int) -> None:
        start.wait()
        out[i] = np.asarray(xp.linalg.solve(A, xp.asarray(rhs[i])))

    counter = itertools.count()
    _run_threads(lambda: solve(next(counter)))
    assert len(calls) == 1
    for i in range(THREADS):
        np.testing.assert_allclose(out[i], np.linalg.solve(a_np.toarray(), rhs[i]), rtol=1e-9)


@pytest.mark.parametrize("fmt", ["csr", "coo"])
def test_threads_reading_an_array_with_pending_writes(racy: None, fmt: str) -> None:
    """Writes queued by one thread merge once when several threads read the array first
    (a reader never sees the storage between the merge and its installation); element
    reads probe the waiting entries."""
    rng = np.random.default_rng(7)
    want = sp.random_array((N, N), density=0.1, format="csr", rng=rng).toarray()
    x = xp.asarray(sp.csr_array(want).asformat(fmt))
    for r in range(40):
        written = [tuple(int(k) for k in rng.integers(N, size=2)) for _ in range(3)]
        for i, j in written:  # new coordinates: they wait in x's insert buffer or queue
            x[i, j] = float(r + 1)
            want[i, j] = r + 1
        got = _read_together(x, written)
        assert len(got) == THREADS
        for elements, dense in got:
            _close(elements, [want[i, j] for i, j in written])
            _close(dense, want)


def _read_together(x: object, items: list[tuple[int, int]]
                   ) -> list[tuple[list[float], np.ndarray]]:
    """``x``'s elements at ``items`` and its dense value, read by ``THREADS`` threads at
    once."""
    start = threading.Barrier(THREADS)
    got: list[tuple[list[float], np.ndarray]] = []

    def read() -> None:
        start.wait()
        elements = [float(x[i, j]) for i, j in items]  # type: ignore[index]
        got.append((elements, np.asarray(x.todense())))  # type: ignore[attr-defined]

    _run_threads(read)
    return got


def test_threads_sharing_a_plan_with_their_own_constants(racy: None) -> None:
    """One cached plan and recipe per expression, each thread's constants its own."""
    s_np = sp.random_array((N, N), density=0.2, format="csr", rng=8)
    S = xp.asarray(s_np)
    dense = s_np.toarray()
    shifted = xp.compute(S + 1.0)
    start = threading.Barrier(THREADS)
    counter = itertools.count()

    def scale() -> None:
        c = 2.0 + next(counter)
        start.wait()
        for _ in range(40):
            _close(xp.compute(shifted * c).todense(), (dense + 1.0) * c)
            _close(xp.compute(S * c).todense(), dense * c)
            _close(xp.sum(S * c, axis=1).todense(), dense.sum(axis=1) * c)

    _run_threads(scale)
