"""No blow-up through a back door (issue 22, item 2): every allocation sized by a shape
(dense results, pointer arrays under dense levels, per-row counts, partials per chunk,
workspaces per worker, coordinates of a selection) is checked against the densify limit
before it happens; past it lazysparse raises ``DensifyError`` naming the size, or works in
memory proportional to the stored entries, never ``MemoryError``.

The small tests hit each guard with a small ``set_densify_limit``; the last one runs the
user-facing operations on a 10⁹ x 10⁹ matrix with three entries in a child process whose
address space is capped (``RLIMIT_AS``), where any array of one entry per row would fail.
Reductions of hypersparse arrays are tested in tests/optimizer/test_hypersparse_reductions.py
and the limit itself in tests/formats/test_densify.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import tracemalloc
from typing import Any

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from helpers import F, acc, agg, compute, mj, plan, tensor

import lazysparse as xp
from lazysparse.formats import DensifyError, FormatSpec, Tensor, convert, set_densify_limit
from lazysparse.formats.compiled.hash_insert import HashedBuilder
from lazysparse.formats.compiled.sortkernels import stable_order
from lazysparse.formats.structured import build_structured
from lazysparse.kernels.backends import execute_plan
from lazysparse.kernels.backends.numba import cpu_host
from lazysparse.logic.nodes import Immediate, Reorder

N = 10**7  # rows of the in-process hypersparse matrices: 80 MB per int64 pointer array
ROWS, COLS, VALS = np.array([5, 70, N - 1]), np.array([3, 3, 12]), np.array([1.0, 2.0, 3.0])
SMALL = 1 << 20  # a limit far below one pointer per row, far above the entries


def _coo(shape: tuple[int, int] = (N, N)) -> Tensor:
    return Tensor.from_coords([ROWS, COLS], VALS, shape, format="coo")


# ---------------------------------------------------------------------- formats stage


@pytest.mark.parametrize(("source", "target"), [("coo", "csr"), ("coo", "csc"),
                                                 ("dcsr", "csc"), ("coo", "hash")])
def test_pointer_arrays_of_conversions_are_checked(source: str, target: str) -> None:
    """The counting sorts behind conversions (``ptr_from_sorted``, ``scatter_by_key``,
    ``transpose_compressed``) check the pointer array they allocate per row or column."""
    t = convert(_coo(), source)
    with set_densify_limit(SMALL), pytest.raises(DensifyError, match="pointer array"):
        convert(t, target)
    small = convert(Tensor.from_coords([ROWS % 200, COLS], VALS, (200, 200), format=source),
                    target)
    assert small.nnz == 3


def test_from_coords_of_a_hypersparse_shape_sorts_instead_of_binning() -> None:
    """2-D coordinates into coo sort by comparison when a pointer per row would dwarf the
    entries (it was a counting sort with N + 1 bins whatever the target)."""
    order = np.array([2, 0, 1])
    with set_densify_limit(SMALL):
        t = Tensor.from_coords([ROWS[order], COLS[order]], VALS[order], (N, N), format="coo")
        assert t.nnz == 3
        np.testing.assert_array_equal(t.levels[0].idx, ROWS)
        np.testing.assert_array_equal(t.values, VALS)
        with pytest.raises(DensifyError, match="pointer array"):
            Tensor.from_coords([ROWS, COLS], VALS, (N, N), format="csr")
        with pytest.raises(ValueError, match="duplicate coordinates"):
            Tensor.from_coords([ROWS[[0, 0]], COLS[[0, 0]]], VALS[:2], (N, N), format="coo")
        s = Tensor.from_coords([ROWS[[0, 0]], COLS[[0, 0]]], VALS[:2], (N, N), format="coo",
                               sum_duplicates=True)
        assert s.nnz == 1 and float(s.values[0]) == 3.0


def test_counting_sort_bins_are_checked() -> None:
    key = np.array([3, 1, N - 1])
    with set_densify_limit(SMALL), pytest.raises(DensifyError, match="counting sort"):
        stable_order(key, N)
    np.testing.assert_array_equal(stable_order(key % 4096, 4096), [1, 0, 2])


def test_hashed_builder_pointers_are_checked() -> None:
    b = HashedBuilder(10, N, np.float64)
    b.insert(np.array([4, N - 1]), np.array([1, 2]), 1.5)
    with set_densify_limit(SMALL), pytest.raises(DensifyError, match="hashed level's pointer"):
        b.freeze((N, 10))
    small = HashedBuilder(10, 100, np.float64)
    small.insert(np.array([4, 99]), np.array([1, 2]), 1.5)
    with set_densify_limit(SMALL):
        assert small.freeze((100, 10)).nnz == 2


@pytest.mark.parametrize(("fmt", "what"), [("rle", "run-length pointer"),
                                           ("ell", "ELL's entry count"),
                                           ("bsr", "BSR's pointer")])
def test_structured_layouts_check_their_per_row_arrays(fmt: str, what: str) -> None:
    spec = FormatSpec(fmt, ("dense", {"rle": "runs", "ell": "ell", "bsr": "blocked"}[fmt]),
                      (0, 1))
    kwargs: dict[str, Any] = {"blocksize": (1, 1)} if fmt == "bsr" else {}
    with set_densify_limit(SMALL), pytest.raises(DensifyError, match=what):
        build_structured((N, N), spec, ROWS, COLS, VALS, np.float64(0), **kwargs)
    t = build_structured((200, 200), spec, ROWS % 200, COLS, VALS, np.float64(0), **kwargs)
    assert t.shape == (200, 200)


def test_random_checks_its_permutation() -> None:
    """Above 2 % density NumPy draws from a permutation of every element."""
    with set_densify_limit(SMALL), pytest.raises(DensifyError, match="permutation"):
        xp.random((2000, 2000), 0.05, seed=0)
    with set_densify_limit(SMALL):
        assert xp.random((2000, 2000), 0.001, seed=0).tensor().nnz == 4000


# ---------------------------------------------------------------------- kernels (the host)


def _huge_coo(n: int = N) -> Tensor:
    return Tensor.from_coords([ROWS % n, COLS], VALS, (n, 16), format="coo")


def test_a_dense_kernel_result_is_checked_on_the_host() -> None:
    """Below the optimizer too: a normal-form plan asking for a dense ``A + 1``."""
    body = Reorder(mj("add", acc("A", "i", "j"), Immediate(1.0)), F("i", "j"))
    p = plan({"A": _huge_coo()}, compute("out", "dense", 2, body))
    with set_densify_limit(SMALL), pytest.raises(DensifyError, match="kernel's dense result"):
        execute_plan(p)
    small = plan({"A": _huge_coo(100)}, compute("out", "dense", 2, body))
    with set_densify_limit(SMALL):
        np.testing.assert_array_equal(execute_plan(small)[0].to_numpy(),
                                      _huge_coo(100).to_numpy() + 1)


def test_a_dense_operand_as_large_as_the_result_passes() -> None:
    """A result no larger than a dense operand densifies nothing (the optimizer's rule)."""
    a = np.arange(2 * 4096, dtype=np.float64).reshape(2, 4096)
    body = Reorder(mj("multiply", acc("A", "i", "j"), Immediate(2.0)), F("i", "j"))
    with set_densify_limit(1000):
        out = execute_plan(plan({"A": tensor(a)}, compute("out", "dense", 2, body)))[0]
    np.testing.assert_array_equal(out.to_numpy(), 2 * a)


def test_pointers_under_a_dense_output_level_are_checked() -> None:
    body = Reorder(mj("multiply", acc("A", "i", "j"), Immediate(2.0)), F("i", "j"))
    p = plan({"A": _huge_coo()}, compute("out", "csr", 2, body))
    with set_densify_limit(SMALL), pytest.raises(DensifyError, match="pointer array under "
                                                                     "dense levels"):
        execute_plan(p)
    with set_densify_limit(SMALL):  # the same result stored hypersparse
        out = execute_plan(plan({"A": _huge_coo()}, compute("out", "dcsr", 2, body)))[0]
    assert out.nnz == 3


def test_a_sparse_result_far_larger_than_its_operands_is_checked() -> None:
    """The outer product of two dense vectors, stored "sparse", is a densification."""
    x = tensor(np.arange(1.0, 2001.0))
    body = Reorder(mj("multiply", acc("x", "i"), acc("y", "j")), F("i", "j"))
    p = plan({"x": x, "y": x}, compute("out", "dcsr", 2, body))
    with set_densify_limit(SMALL), pytest.raises(DensifyError, match="sparse result"):
        execute_plan(p)
    assert execute_plan(p)[0].nnz == 2000 * 2000


def _column_sums() -> tuple[Any, np.ndarray]:
    a = np.random.default_rng(0).random((4096, 1024))
    body = agg("add", 0.0, Reorder(acc("A", "i", "j"), F("i", "j")), "i")
    return plan({"A": tensor(a)}, compute("out", "dense", 1, body)), a.sum(axis=0)


@pytest.mark.skipif(numba.get_num_threads() < 2, reason="partials need two threads")
def test_partials_per_chunk_stay_within_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reduction into a dense result splits into per-chunk partials only while all of
    them fit the limit; else it runs in fewer chunks (one: no partials)."""
    calls: list[int] = []
    real = cpu_host._run_partials  # noqa: SLF001

    def spy(k: Any, args: Any, nch: int, *rest: Any) -> Any:
        calls.append(nch)
        return real(k, args, nch, *rest)

    monkeypatch.setattr(cpu_host, "_run_partials", spy)
    p, want = _column_sums()
    np.testing.assert_allclose(execute_plan(p)[0].to_numpy(), want)
    assert calls and calls[-1] > 1  # without a tight limit it does use partials
    calls.clear()
    with set_densify_limit(1024 * 8 + 100):  # one partial fits, two do not
        np.testing.assert_allclose(execute_plan(p)[0].to_numpy(), want)
    assert not calls


@pytest.mark.skipif(numba.get_num_threads() < 2, reason="workers need two threads")
def test_row_workspaces_per_worker_stay_within_the_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A parallel Gustavson SpGEMM gives each worker a dense row workspace: only as many
    workers run as have workspaces within the limit together."""
    m = 20011
    a = sp.random(4096, 64, density=0.02, format="csr", random_state=0)
    b = sp.random(64, m, density=0.01, format="csr", random_state=1)
    body = agg("add", 0.0, Reorder(mj("multiply", acc("A", "i", "k"), acc("B", "k", "j")),
                                   F("i", "k", "j")), "k")
    p = plan({"A": Tensor.from_scipy(a), "B": Tensor.from_scipy(b)},
             compute("out", "csr", 2, body))
    made: list[int] = []
    real = cpu_host._PooledMaker.__call__  # noqa: SLF001

    def counting(self: Any) -> Any:
        if not self.free:
            made.append(self.nbytes)
        return real(self)

    monkeypatch.setattr(cpu_host._PooledMaker, "__call__", counting)  # noqa: SLF001
    with set_densify_limit(30 * m):  # one row workspace (~25 bytes a column), not two
        out = execute_plan(p)[0]
    assert abs(out.to_scipy() - a @ b).max() < 1e-12
    big = [n for n in made if n > 20 * m]
    assert big and len(big) == 1, made


def test_a_run_length_kernel_checks_its_dense_result() -> None:
    a = np.zeros((4, 1 << 18))
    a[1, 5:900] = 2.0
    t = convert(tensor(a), "rle")
    body = Reorder(mj("add", acc("A", "i", "j"), Immediate(1.0)), F("i", "j"))
    p = plan({"A": t}, compute("out", "dense", 2, body))
    with set_densify_limit(SMALL), pytest.raises(DensifyError, match="run-length"):
        execute_plan(p)
    np.testing.assert_array_equal(execute_plan(p)[0].to_numpy(), a + 1)


# ---------------------------------------------------------------------- api stage


def _lazy_huge(fmt: str = "coo") -> Any:
    return xp.asarray(sp.coo_array((VALS, (ROWS, COLS)), shape=(N, N)).asformat(fmt))


def test_sort_along_rows_counts_per_entry_not_per_line() -> None:
    """A count of stored entries per line was a bincount over all 10⁷ lines (80 MB)."""
    a = xp.compute(_lazy_huge())
    xp.compute(-a)
    tracemalloc.start()
    try:
        out = xp.compute(xp.sort(a, axis=1))
        flipped = xp.compute(xp.sort(-a, axis=1))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out.tensor().nnz == 3 and flipped.tensor().nnz == 3
    assert peak < 8 << 20, peak
    small = sp.coo_array((VALS, (ROWS % 100, COLS)), shape=(100, 16))
    got = np.asarray(xp.sort(xp.asarray(-small), axis=1))
    np.testing.assert_array_equal(got, np.sort(-small.toarray(), axis=1))


def test_eager_results_of_hypersparse_csr_fall_back_to_coo() -> None:
    """``concat`` of two csr matrices of 10⁷ rows: csr's pointer per row would pass the
    limit, the result keeps its entries in coo instead."""
    n = 10**6
    a = xp.asarray(sp.csr_array((VALS, (ROWS % n, COLS)), shape=(n, 16)))
    with set_densify_limit(12 * n):  # a's own int32 pointers fit, 2n int64 ones do not
        out = xp.compute(xp.concat([a, a], axis=0))
    t = out.tensor()
    assert out.format == "coo" and out.shape == (2 * n, 16) and t.nnz == 6
    np.testing.assert_array_equal(t.levels[0].idx, np.concatenate([ROWS % n, ROWS % n + n]))


def test_dense_results_of_eager_functions_are_checked() -> None:
    x = xp.asarray(np.arange(1000.0))
    with set_densify_limit(8000):
        with pytest.raises(DensifyError, match="tile"):
            xp.tile(x, (2,))
        with pytest.raises(DensifyError, match="repeat"):
            xp.repeat(x, 2)
        assert xp.tile(x, (1,)).shape == (1000,)
    s0 = xp.asarray(sp.random(1, 600, density=0.1, format="coo", random_state=0))
    s1 = xp.full((1, 600), 1.0)  # another fill value: concat goes dense
    with set_densify_limit(6000), pytest.raises(DensifyError, match="concat"):
        xp.concat([s0, s1], axis=1)
    np.testing.assert_array_equal(np.asarray(xp.concat([s0, s1], axis=1))[0, 600:], 1.0)


def test_assignment_selections_are_checked() -> None:
    a = xp.compute(_lazy_huge())
    with set_densify_limit(SMALL):
        with pytest.raises(DensifyError, match="coordinates an index selects"):
            a[:, 3] = 5.0
        a[7, 3] = 5.0
        a[[1, 2], 3] = 6.0
        assert float(a[7, 3]) == 5.0 and float(a[2, 3]) == 6.0


def test_creation_functions_are_checked() -> None:
    with set_densify_limit(SMALL):
        for make, what in [(lambda: xp.arange(N), "arange"), (lambda: xp.eye(N), "eye"),
                           (lambda: xp.linspace(0, 1, N), "linspace")]:
            with pytest.raises(DensifyError, match=what):
                make()
        assert xp.eye(N // 1000).shape == (N // 1000,) * 2


# ---------------------------------------------------------------------- at real scale

_CHILD = textwrap.dedent("""
    import json, resource, sys
    import numpy as np, scipy.sparse as sp
    import lazysparse as xp
    from lazysparse.formats import DensifyError, set_densify_limit

    def vm_size():
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize"))

    N = 10**9
    R, C, V = np.array([5, 70, N - 1]), np.array([3, 3, 12]), np.array([1.0, 2.0, 3.0])
    A = xp.asarray(sp.coo_array((V, (R, C)), shape=(N, N)))
    v = xp.asarray(sp.coo_array((np.array([1.0, 2.0]), (np.array([3, N - 2]),)), shape=(N,)))
    xp.compute(A + A)  # warm up: imports and the thread pool, before the cap
    # an address space 3 GiB past what is mapped, a densify limit of 1 GiB below it
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    cap = vm_size() + (3 << 30)
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard < 0 else min(cap, hard), hard))
    set_densify_limit(1 << 30)

    def setslice():
        B = xp.compute(A * 1.0)
        B[:, 3] = 1.0

    OPS = {
        "sum axis 0": lambda: xp.sum(A, axis=0),
        "A.T @ v": lambda: A.T @ v,
        "A @ dense x": lambda: A @ xp.arange(N, dtype=xp.float64),
        "row": lambda: A[N - 1],
        "concat": lambda: xp.concat([A, A], axis=0),
        "nonzero": lambda: xp.nonzero(A)[0],
        "argmax axis 0": lambda: xp.argmax(A, axis=0),
        "A + 1": lambda: A + 1,
        "exp": lambda: xp.exp(A),
        "transpose": lambda: A.T,
        "to csc": lambda: xp.asformat(A, "csc"),
        "to dense": lambda: xp.asformat(A, "dense"),
        "to rle": lambda: xp.asformat(A, "rle"),
        "sort axis 0": lambda: xp.sort(A, axis=0),
        "sort axis 1": lambda: xp.sort(A, axis=1),
        "unique_inverse": lambda: xp.unique_inverse(A).inverse_indices,
        "flip": lambda: xp.flip(A, axis=1),
        "tril": lambda: xp.tril(A),
        "setitem slice": setslice,
        "eye": lambda: xp.eye(N),
    }
    for name, op in OPS.items():
        try:
            out = op()
            if out is not None:
                xp.compute(out)
            res = "ok"
        except DensifyError:
            res = "DensifyError"
        except MemoryError as e:
            res = "MemoryError: " + str(e)[:200]
        except Exception as e:
            res = type(e).__name__ + ": " + str(e)[:200]
        print(json.dumps([name, res]), flush=True)
""")

EXPECTED = {
    "sum axis 0": "ok", "A.T @ v": "ok", "A @ dense x": "DensifyError", "row": "ok",
    "concat": "ok", "nonzero": "ok", "argmax axis 0": "DensifyError", "A + 1": "ok",
    "exp": "ok", "transpose": "ok", "to csc": "DensifyError", "to dense": "DensifyError",
    "to rle": "DensifyError", "sort axis 0": "ok", "sort axis 1": "ok",
    "unique_inverse": "ok", "flip": "ok", "tril": "ok", "setitem slice": "DensifyError",
    "eye": "DensifyError",
}


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc")
def test_a_billion_square_matrix_never_runs_out_of_memory() -> None:
    """Each operation on a 10⁹ x 10⁹ matrix with three entries works in memory
    proportional to them, or raises DensifyError, with a densify limit of 1 GiB under an
    address space capped 3 GiB past what the warmed-up process maps (one int64 per row
    is 8 GB)."""
    env = dict(os.environ)
    env.pop("LAZYSPARSE_DENSIFY_LIMIT", None)
    proc = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                          env=env, timeout=600)
    got = dict(json.loads(line) for line in proc.stdout.splitlines() if line.startswith("["))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert got == EXPECTED
