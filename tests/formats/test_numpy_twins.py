"""The helpers' NumPy twins (formats/compiled/checknumpy.py, formats/compiled/sortnumpy.py,
issue 35) against
their Numba helpers: the same codes and positions, the same arrays bit for bit, the same
exceptions, on random and edge inputs (empty, one row, unsorted, duplicates, out-of-range
coordinates, int32/int64 indices)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from lazysparse.formats import Compressed, Dense, Singleton, Tensor
from lazysparse.formats.compiled import checkkernels as K
from lazysparse.formats.compiled import checknumpy as C
from lazysparse.formats.compiled import sortkernels as S
from lazysparse.formats.compiled import sortnumpy
from lazysparse.formats.compiled.checknumpy import checks
from lazysparse.formats.compiled.hash_insert import HashedBuilder, builder_from_tensor
from lazysparse.formats.compiled.sortnumpy import sorts_on_numpy
from lazysparse.formats.concat import concat_tensors
from lazysparse.formats.levels import hashed
from lazysparse.formats.levels.hashed import build_table
from lazysparse.formats.select import select
from lazysparse.formats.specs import format_spec
from tests.conftest import rotation

INDEX = [np.int32, np.int64]


def _ptr(counts: np.ndarray, dtype: Any) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(counts))).astype(dtype)


def _layouts(dtype: Any) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """(ptr, idx, size): random sorted, unsorted, with duplicates, empty, one row, empty rows."""
    rng = np.random.default_rng(7)
    out = []
    for rows, size, per in [(20, 30, 4), (1, 50, 40), (5, 8, 0), (40, 6, 3), (0, 5, 0)]:
        counts = rng.integers(0, per + 1, rows)
        ptr = _ptr(counts, dtype)
        idx = rng.integers(0, size, int(ptr[-1])).astype(dtype)
        sorted_ = idx.copy()
        for p in range(rows):
            sorted_[ptr[p]:ptr[p + 1]] = np.sort(idx[ptr[p]:ptr[p + 1]])
        out += [(ptr, idx, size), (ptr, sorted_, size)]
        uniq = [np.unique(sorted_[ptr[p]:ptr[p + 1]]) for p in range(rows)]
        uptr = _ptr([u.size for u in uniq], dtype)
        out.append((uptr, np.concatenate(uniq + [np.zeros(0)]).astype(dtype), size))
    return out


def _broken(dtype: Any) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """Layouts each compiled check rejects: bad start, decreasing, bad end, out of range."""
    a = np.array
    return [(a([1, 2, 3], dtype), a([0, 1, 2], dtype), 3),
            (a([0, 2, 1, 3], dtype), a([0, 1, 2], dtype), 3),
            (a([0, 1, 2], dtype), a([0, 1, 2], dtype), 3),
            (a([0, 2, 3], dtype), a([0, 5, 1], dtype), 3),
            (a([0, 2, 3], dtype), a([0, -1, 1], dtype), 3),
            (a([0, 3, 3], dtype), a([2, 1, 1], dtype), 0)]


def _pair(result: Any) -> tuple[int, int]:
    return int(result[0]), int(result[1])


@pytest.mark.parametrize("dtype", INDEX)
@pytest.mark.parametrize("order", [0, 1, 2])
def test_check_compressed_twin(dtype: Any, order: int) -> None:
    for ptr, idx, size in _layouts(dtype) + _broken(dtype):
        want = _pair(K.check_compressed(ptr, idx, size, order))
        assert _pair(C.check_compressed(ptr, idx, size, order)) == want, (ptr, idx, size)
    # the whole range of codes is reached
    codes = {_pair(C.check_compressed(p, i, s, 2))[0]
             for p, i, s in _layouts(dtype) + _broken(dtype)}
    assert {K.OK, K.PTR_START, K.PTR_DECREASES, K.PTR_END, K.OUT_OF_RANGE, K.UNSORTED,
            K.DUPLICATE} <= codes


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.int8])
def test_check_range_twin(dtype: Any) -> None:
    rng = np.random.default_rng(1)
    info = np.iinfo(dtype)
    for size in {0, 1, 7, 100, int(info.max), min(int(info.max) + 1, 2**63 - 1), 2**40}:
        for idx in [np.zeros(0, dtype), rng.integers(max(info.min, -3), min(info.max, 110), 50)
                    .astype(dtype), np.array([info.max, info.min], dtype)]:
            assert _pair(C.check_range(idx, size)) == _pair(K.check_range(idx, size)), (idx, size)


@pytest.mark.parametrize("dtype", INDEX)
def test_check_coo_chain_twin(dtype: Any) -> None:
    rng = np.random.default_rng(3)
    for n, hi in [(0, 3), (1, 3), (2, 1), (30, 4), (200, 50)]:
        rows, cols = rng.integers(0, hi, n).astype(dtype), rng.integers(0, hi, n).astype(dtype)
        for chain in [(rows, cols), tuple(np.sort(np.stack([rows, cols]), axis=1)),
                      (np.sort(rows), cols), (rows,)]:
            chain = tuple(np.ascontiguousarray(c) for c in chain)
            for ptr in [np.array([0, n]), _ptr([n // 2, n - n // 2], np.int64)]:
                want = _pair(K.check_coo_chain(ptr, chain))
                assert _pair(C.check_coo_chain(ptr, chain)) == want, (ptr, chain)
    canonical = np.unique(rng.integers(0, 100, 60))
    chain = (canonical // 10, canonical % 10)
    assert _pair(C.check_coo_chain(np.array([0, canonical.size]), chain)) == (K.OK, 0)


def test_checks_decides_by_size() -> None:
    assert checks(0) is C and checks(C.CHECK_NUMPY_MAX) is C
    assert checks(C.CHECK_NUMPY_MAX + 1) is K


def _error(build: Callable[[], Any]) -> tuple[type, str] | None:
    try:
        build()
    except (ValueError, IndexError, TypeError) as exc:
        return type(exc), str(exc)
    return None


def _both_paths(monkeypatch: pytest.MonkeyPatch, build: Callable[[], Any]) -> Any:
    """``build``'s outcome on the NumPy twins and on the Numba helpers: they must agree."""
    got = _error(build)
    with monkeypatch.context() as m:
        m.setattr(C, "CHECK_NUMPY_MAX", -1)
        m.setattr(sortnumpy, "SORT_NUMPY_MAX", -1)
        want = _error(build)
    assert got == want
    return got


@pytest.mark.parametrize("dtype", INDEX)
def test_tensor_checks_raise_the_same(monkeypatch: pytest.MonkeyPatch, dtype: Any) -> None:
    def csr(ptr: list[int], idx: list[int]) -> Callable[[], Any]:
        return lambda: Tensor((len(ptr) - 1, 4), [Dense(len(ptr) - 1), Compressed(
            4, np.array(ptr, dtype), np.array(idx, dtype))], (0, 1),
            np.ones(len(idx)), 0.0)

    cases = [([1, 2], [0, 1]), ([0, 2, 1], [0]), ([0, 1, 2], [0, 1, 2]), ([0, 2], [0, 9]),
             ([0, 2], [3, 1]), ([0, 2], [1, 1]), ([0, 2, 3], [1, 2, 3])]
    outcomes = [_both_paths(monkeypatch, csr(p, i)) for p, i in cases]
    assert outcomes[-1] is None and all(o is not None for o in outcomes[:-1])

    def coo(rows: list[int], cols: list[int]) -> Callable[[], Any]:
        n = len(rows)
        return lambda: Tensor((4, 4), [Compressed(4, np.array([0, n], dtype),
                                                  np.array(rows, dtype), unique=False),
                                       Singleton(4, np.array(cols, dtype))], (0, 1),
                              np.ones(n), 0.0)

    for rows, cols in [([0, 0], [1, 1]), ([1, 0], [0, 0]), ([0, 1], [5, 0]), ([0, 1], [1, 0])]:
        _both_paths(monkeypatch, coo(rows, cols))


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "bsr"])
def test_scipy_validation_raises_the_same(monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    import lazysparse as xp

    good = sp.random_array((6, 6), density=0.4, format=fmt, rng=2)
    assert _both_paths(monkeypatch, lambda: xp.asarray(good)) is None
    if fmt == "coo":
        bad = sp.coo_array((np.ones(2), (np.array([0, 7]), np.array([1, 1]))), shape=(8, 8))
        bad.row[1] = 9
        assert _both_paths(monkeypatch, lambda: xp.asarray(bad)) is not None
        return
    for mutate in [lambda m: m.indptr.__setitem__(0, 1),
                   lambda m: m.indices.__setitem__(0, 99),
                   lambda m: m.indptr.__setitem__(2, m.indptr[3] + 1)]:
        bad = good.copy()
        if bad.nnz < 3:
            continue
        mutate(bad)
        assert _both_paths(monkeypatch, lambda b=bad: xp.asarray(b)) is not None


def _same(a: Any, b: Any) -> None:
    """Equal structure, dtypes and bits."""
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
        return
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()
        return
    assert a == b


def _sorts_both(monkeypatch: pytest.MonkeyPatch, fn: Callable[[], Any]) -> None:
    """``fn`` (which copies its inputs) on the NumPy twins and on the Numba loops."""
    got = fn()
    with monkeypatch.context() as m:
        m.setattr(sortnumpy, "SORT_NUMPY_MAX", -1)
        want = fn()
    _same(got, want)


VALUES = [np.float64, np.float32, np.int64, np.int16, np.bool_, np.complex128]


def _sort_family(mp: pytest.MonkeyPatch, ptr: np.ndarray, idx: np.ndarray, size: int,
                 vals: np.ndarray, c: np.ndarray) -> None:
    """Every sortkernels entry point on one layout, on both paths."""
    n, dtype = idx.size, idx.dtype
    major = np.arange(ptr.size - 1, dtype=dtype)[::-1].copy()
    _sorts_both(mp, lambda: S.transpose_compressed(ptr, idx, major, vals, size))
    _sorts_both(mp, lambda: S.scatter_by_key(idx, size, idx[::-1].copy(), vals))
    _sorts_both(mp, lambda: S.stable_order(idx, size))
    _sorts_both(mp, lambda: S.stable_perm_pass(idx, size, np.arange(n)[::-1].copy()))
    _sorts_both(mp, lambda: S.ptr_from_sorted(np.sort(idx), size, dtype))
    _sorts_both(mp, lambda: S.segment_repeats(ptr, np.sort(idx)))

    def sort_then_sum() -> Any:
        p, i, v = ptr.copy(), idx.copy(), vals.copy()
        S.sort_segments(p, i, v)
        return (p.copy(), i.copy(), v.copy()) + S.sum_runs(p, i, v)

    _sorts_both(mp, sort_then_sum)
    rows = np.arange(ptr.size - 1)
    lo, hi = ptr[:-1][rows[::2]], ptr[1:][rows[::2]]
    total = int((hi - lo).sum())
    _sorts_both(mp, lambda: S.gather_ranges(vals, lo, hi, total))
    _sorts_both(mp, lambda: S.gather_pair(idx, vals, lo, hi, total))
    plo, phi = rows[::2].astype(dtype), np.minimum(rows[::2] + 2, rows.size).astype(dtype)
    ptotal = int(np.maximum(phi - plo, 0).sum())
    _sorts_both(mp, lambda: S.gather_ptr(ptr, plo, phi, ptotal))
    _sorts_both(mp, lambda: S.find_in_segments(idx, ptr[:-1], ptr[1:], c))


# each value dtype compiles its own helpers: the fast tier keeps a float, an int and bool
FAST_VALUES = [np.float64, np.int64, np.bool_]


@pytest.mark.parametrize("vdtype, dtype", rotation(
    FAST_VALUES, INDEX, [np.dtype(v).name for v in FAST_VALUES],
    slow_cases=[v for v in VALUES if v not in FAST_VALUES]))
def test_sort_family_twins(monkeypatch: pytest.MonkeyPatch, dtype: Any, vdtype: Any) -> None:
    rng = np.random.default_rng(11)
    for ptr, idx, size in _layouts(dtype):
        vals = (rng.standard_normal(idx.size) * 100).astype(vdtype)
        if vdtype is np.complex128:
            vals = vals + 1j * rng.standard_normal(idx.size)
        c = rng.integers(0, max(size, 1), ptr.size - 1)
        _sort_family(monkeypatch, ptr, idx, size, vals, c)


@pytest.mark.parametrize("vdtype", [np.float64, np.bool_, np.float16, ">f8"])
def test_transpose_twin_value_routes(monkeypatch: pytest.MonkeyPatch, vdtype: Any) -> None:
    """scipy's conversion carries the values it stores (float64, bool); float16 and a
    big-endian dtype take the sorted positions and a gather; values longer than the
    entries (slack past ``ptr[-1]``) are read up to the entries."""
    rng = np.random.default_rng(5)
    a = sp.random_array((40, 30), density=0.2, format="csr", rng=rng)
    ptr, idx = a.indptr.astype(np.int64), a.indices.astype(np.int64)
    vals = np.concatenate([a.data, [7.0, 9.0]]).astype(vdtype)
    major = np.arange(40, dtype=np.int64)[::-1].copy()
    _sorts_both(monkeypatch, lambda: S.transpose_compressed(ptr, idx, major, vals, 30))
    got_ptr, _, got_vals = sortnumpy.transpose(ptr, idx, major, vals, 30)
    assert got_ptr[-1] == idx.size and got_vals.dtype == vals.dtype


def test_sum_runs_adds_in_storage_order(monkeypatch: pytest.MonkeyPatch) -> None:
    # a run of 20 float32 duplicates whose sum depends on the order of the additions
    vals = np.array([1e8, 1.0, -1e8] + [0.1] * 17, np.float32)
    ptr, idx = np.array([0, 20]), np.zeros(20, np.int64)
    _sorts_both(monkeypatch, lambda: S.sum_runs(ptr.copy(), idx.copy(), vals.copy()))
    _sorts_both(monkeypatch, lambda: S.sum_runs(ptr.copy(), idx.copy(), -np.zeros(20)))


def test_sorts_on_numpy_decides_by_size() -> None:
    assert sorts_on_numpy(0) and sorts_on_numpy(sortnumpy.SORT_NUMPY_MAX)
    assert not sorts_on_numpy(sortnumpy.SORT_NUMPY_MAX + 1)


def test_constructors_match_numpy_on_both_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    import lazysparse as xp

    m = sp.random_array((30, 40), density=0.2, format="coo", rng=5)
    dup = sp.coo_array((np.arange(1.0, 7.0), (np.array([2, 0, 2, 1, 0, 2]),
                                              np.array([1, 3, 1, 0, 3, 2]))), shape=(3, 4))
    for build, want in [(lambda: xp.eye(7, k=1, format="csr"), np.eye(7, k=1)),
                        (lambda: xp.asarray(m), m.toarray()),
                        (lambda: xp.asarray(dup), dup.toarray()),
                        (lambda: xp.asformat(xp.asarray(m.tocsr()), "csc"), m.toarray()),
                        (lambda: xp.asarray(m.tocsr())[3:9], m.toarray()[3:9])]:
        np.testing.assert_array_equal(np.asarray(build()), want)
        with monkeypatch.context() as ctx:
            ctx.setattr(C, "CHECK_NUMPY_MAX", -1)
            ctx.setattr(sortnumpy, "SORT_NUMPY_MAX", -1)
            np.testing.assert_array_equal(np.asarray(build()), want)


# the fast tier: each combine with one fast value dtype in turn (or/and with integers)
@pytest.mark.parametrize("combine, vdtype", rotation(
    [None, "or", "and", "add", "multiply", "min", "max"], FAST_VALUES,
    slow_choices=[v for v in VALUES + [np.int8, np.uint64] if v not in FAST_VALUES]))
def test_hashed_builder_twins(monkeypatch: pytest.MonkeyPatch, vdtype: Any,
                              combine: str | None) -> None:
    if combine in ("or", "and") and np.dtype(vdtype).kind not in "biu":
        return  # Numba refuses these; neither path takes them
    if combine in ("min", "max") and np.dtype(vdtype).kind == "c":
        return
    rng = np.random.default_rng(5)

    def build() -> Any:
        b = HashedBuilder(37, 11, vdtype)  # starts small: grows and rehashes
        for _ in range(6):
            n = int(rng.integers(0, 40))
            p, c = rng.integers(0, 11, n), rng.integers(0, 37, n)
            raw = rng.standard_normal(n) * 200
            b.insert(p, c, raw.astype(vdtype) if np.dtype(vdtype).kind != "b" else raw > 0,
                     combine)
        probe_p, probe_c = rng.integers(0, 11, 50), rng.integers(0, 37, 50)
        frozen = b.freeze((11, 37))
        level = frozen.levels[-1]
        again = builder_from_tensor(frozen)
        return (b.parents[:b.n].copy(), b.coords[:b.n].copy(), b.values[:b.n].copy(),
                b.table.copy(), b.lookup(probe_p, probe_c), level.ptr, level.idx, level.table,
                again.table.copy(), build_table(level.ptr, level.idx, 37))

    state = rng.bit_generator.state
    got = build()
    with monkeypatch.context() as m:
        m.setattr(hashed, "HASH_PYTHON_MAX", -1)
        rng.bit_generator.state = state
        want = build()
    _same(got, want)


def test_hashed_twins_decide_by_size() -> None:
    assert hashed.hash_on_python(0) and hashed.hash_on_python(hashed.HASH_PYTHON_MAX)
    assert not hashed.hash_on_python(hashed.HASH_PYTHON_MAX + 1)


def test_hashed_builder_user_combine_stays_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    b = HashedBuilder(5, 2, np.float64)
    b.insert([0, 0, 1], [1, 1, 4], [2.0, 3.0, 1.0], lambda a, v: a - v)
    got = b.freeze((2, 5)).to_numpy()
    np.testing.assert_array_equal(got, [[0, -1.0, 0, 0, 0], [0, 0, 0, 0, 1.0]])


def _tensor_state(t: Any) -> Any:
    """A tensor's arrays (every level's, then the values) and its layout, for ``_same``."""
    if t is None:
        return None
    arrays = tuple(a for lv in t.levels for _, a in sorted(lv.arrays().items()))
    return (str(t.format), t.shape, t.mode_order), arrays + (t.values,)


def _select_both(monkeypatch: pytest.MonkeyPatch, t: Any, picks: list[Any]) -> None:
    got = _tensor_state(select(t, picks))
    with monkeypatch.context() as m:
        m.setattr(sortnumpy, "SORT_NUMPY_MAX", -1)
        want = _tensor_state(select(t, picks))
    assert (got is None) == (want is None)
    if got is not None:
        assert got[0] == want[0]
        _same(got[1], want[1])


def _as_tensor(m: Any, fmt: str, dtype: Any) -> Tensor:
    """A scipy matrix as a csr/csc/coo/unordered-csr tensor with ``dtype`` indices."""
    if fmt == "coo":
        c = m.tocoo()
        n = c.nnz
        return Tensor(c.shape, [Compressed(c.shape[0], np.array([0, n], dtype),
                                           c.row.astype(dtype), unique=False),
                                Singleton(c.shape[1], c.col.astype(dtype))], (0, 1),
                      c.data, 0.0)
    g = m.tocsc() if fmt == "csc" else m.tocsr()
    rows, cols = g.shape if fmt != "csc" else g.shape[::-1]
    idx, vals = g.indices.astype(dtype), g.data.copy()
    if fmt == "csr-unordered":
        rng = np.random.default_rng(2)
        for r in range(rows):  # shuffle each row's entries
            a, b = g.indptr[r], g.indptr[r + 1]
            perm = a + rng.permutation(b - a)
            idx[a:b], vals[a:b] = idx[perm], vals[perm]
    level = Compressed(cols, g.indptr.astype(dtype), idx, ordered=fmt != "csr-unordered")
    return Tensor(g.shape, [Dense(rows), level], (1, 0) if fmt == "csc" else (0, 1), vals, 0.0)


@pytest.mark.parametrize("fmt, dtype", rotation(["csr", "csc", "coo", "csr-unordered"], INDEX))
def test_selection_twins(monkeypatch: pytest.MonkeyPatch, fmt: str, dtype: Any) -> None:
    m = sp.random_array((23, 31), density=0.3, format="csr", rng=9, dtype=np.float64)
    t = _as_tensor(m, fmt, dtype)
    assert t.levels[-1].idx.dtype == dtype
    picks_list = [
        [None, range(2, 9, 1)], [None, range(3, 29, 4)], [None, range(28, 1, -3)],
        [None, range(30, -1, -1)], [range(0, 23, 1), 3], [None, 7],
        [None, np.array([5, 1, 1, 30, 0], np.int64)], [None, np.array([4, 9, 2], np.int64)],
        [np.array([3, 3, 0], np.int64), None], [range(5, 12, 2), np.array([0, 30], np.int64)],
        [4, None], [4, range(0, 0, 1)], [range(0, 0, 1), None],
    ]
    for picks in picks_list:
        _select_both(monkeypatch, t, picks)


def test_selection_twins_search_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    # a long axis (the index array is searched, not tabled) and few indices into long rows
    for rows, density in [(3, 2e-4), (400, 1e-5)]:  # by_index, then searched
        wide = sp.random_array((rows, 1 << 22), density=density, format="csr", rng=4)
        t = _as_tensor(wide, "csr", np.int64)
        cols = np.sort(np.random.default_rng(0).choice(wide.indices, 5, replace=False))
        _select_both(monkeypatch, t, [None, np.concatenate([cols, cols[:2]]).astype(np.int64)])
        _select_both(monkeypatch, t, [None, cols[::-1].astype(np.int64)])
    long_rows = _as_tensor(sp.random_array((2, 5000), density=0.9, format="csr", rng=1), "csr",
                           np.int32)
    _select_both(monkeypatch, long_rows, [None, np.array([7, 3, 4999, 3], np.int64)])


@pytest.mark.parametrize("dtype", INDEX)
def test_concat_inner_twin(monkeypatch: pytest.MonkeyPatch, dtype: Any) -> None:
    parts = [_as_tensor(sp.random_array((9, n), density=0.3, format="csr", rng=n), "csr",
                        dtype) for n in (4, 0, 7, 1)]
    spec = format_spec("csr", 2)

    def join() -> Any:
        return concat_tensors(parts, 1, np.dtype(np.float64), 0.0, spec)

    got = _tensor_state(join())
    with monkeypatch.context() as m:
        m.setattr(sortnumpy, "SORT_NUMPY_MAX", -1)
        want = _tensor_state(join())
    assert got[0] == want[0]
    _same(got[1], want[1])
    np.testing.assert_array_equal(join().to_numpy(),
                                  np.concatenate([p.to_numpy() for p in parts], 1))
