"""Structured levels (issue 16): dia (banded), bsr (blocked), ell and rle (runs) tensors.

Conversions to and from every other format against NumPy on the dense equivalent, across
dtypes, fill values, empty and n-d arrays; zero-copy scipy dia/bsr interop both ways;
validation messages; ``nnz``; ``asformat`` with ``blocksize``. Densifying goes through
``formats.conversion.numpy_arrays.to_numpy`` (no kernel runs here).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lazysparse as xp
from lazysparse.formats import CoordinateError, Dense, FormatSpec, Tensor, convert
from lazysparse.formats.conversion.convert import to_structured
from lazysparse.formats.conversion.numpy_arrays import to_numpy
from lazysparse.formats.levels import Banded, Blocked, Ell, Runs
from tests.conftest import examples

from .helpers import assert_same, random_array

STRUCTURED = ["dia", "bsr", "ell", "rle"]
SOURCES = ["dense", "csr", "csc", "coo", "csf", "hash", "bytemap"]
DTYPES = [np.dtype(d) for d in (np.bool_, np.int8, np.int64, np.uint16, np.float32,
                                np.float64, np.complex128)]


def _fills(dtype: np.dtype) -> list[object]:
    if dtype.kind == "b":
        return [False, True]
    if dtype.kind in "iu":
        return [0, 1]
    return [0, np.nan, 1]


def _revalidated(t: Tensor) -> Tensor:
    """``t`` rebuilt with every check on (what a user-built tensor goes through)."""
    return Tensor(t.shape, t.levels, t.mode_order, t.values, t.fill_value)


def _check_all_ways(a: np.ndarray, fmt: str, fill: object,
                    mode_order: tuple[int, ...] | None = None) -> Tensor:
    """``a`` in ``fmt`` directly and from every source format, and back to each."""
    t = Tensor.from_numpy(a, fmt, fill, mode_order=mode_order)
    assert t.format == fmt
    assert_same(to_numpy(t), a)
    assert_same(to_numpy(_revalidated(t)), a)
    sources = SOURCES if a.ndim == 2 else ["dense", "coo", "csf", "hash", "bytemap"]
    for src in sources:
        s = Tensor.from_numpy(a, src, fill)
        u = convert(s, fmt, mode_order=mode_order)
        assert u.format == fmt and u.spec == t.spec
        assert_same(to_numpy(u), a)
        back = convert(u, s.spec)
        assert back.spec == s.spec
        assert_same(to_numpy(back), a)
    return t


# ---- conversions -------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("fmt", STRUCTURED)
def test_conversions_to_and_from_every_format(fmt: str, dtype: np.dtype) -> None:
    for k, fill in enumerate(_fills(dtype)):
        a = random_array((6, 8), 0.35, dtype, fill, seed=10 + k)
        _check_all_ways(a, fmt, fill)
    # structured to structured
    a = random_array((6, 8), 0.4, dtype, 0, seed=3)
    t = Tensor.from_numpy(a, fmt)
    for other in STRUCTURED:
        assert_same(to_numpy(convert(t, other)), a)


@pytest.mark.parametrize("block", [(1, 1), (2, 2), (3, 4), (6, 8), (1, 8), (6, 1)])
def test_bsr_block_shapes(block: tuple[int, int]) -> None:
    a = random_array((6, 8), 0.3, np.dtype(np.float64), 0, seed=5)
    for src in ("csr", "coo", "dense", "ell"):
        t = to_structured(Tensor.from_numpy(a, src), "bsr", blocksize=block)
        assert t.levels[1].block == block
        assert_same(to_numpy(_revalidated(t)), a)
        r, c = block
        nblocks = np.count_nonzero(a.reshape(6 // r, r, 8 // c, c).any(axis=(1, 3)))
        assert t.levels[1].idx.size == nblocks and t.nnz == nblocks * r * c
        assert_same(to_numpy(convert(t, "csc")), a)


def test_bsr_choose_blocksize_prefers_dense_blocks() -> None:
    a = np.kron(np.eye(4), np.arange(1.0, 17.0).reshape(4, 4))  # 4 dense 4 x 4 blocks
    t = Tensor.from_numpy(a, "bsr")
    assert t.levels[1].block == (4, 4) and t.levels[1].idx.tolist() == [0, 1, 2, 3]
    assert_same(to_numpy(t), a)


@pytest.mark.parametrize("fmt", STRUCTURED)
@pytest.mark.parametrize("shape", [(0, 4), (4, 0), (0, 0), (3, 5)])
def test_empty(fmt: str, shape: tuple[int, int]) -> None:
    a = np.zeros(shape)
    t = _check_all_ways(a, fmt, 0)
    assert t.nnz == 0
    m = t.to_scipy()
    assert m.shape == shape and m.nnz == 0
    if fmt in ("dia", "bsr"):
        assert m.format == fmt
        assert Tensor.from_scipy(m).format == fmt
    assert_same(to_numpy(Tensor.from_scipy(m)), a)


@pytest.mark.parametrize("fmt", ["ell", "rle"])
@pytest.mark.parametrize("order", [(0, 1, 2), (2, 0, 1), (1, 2, 0), (2, 1, 0)])
def test_nd_any_mode_order(fmt: str, order: tuple[int, int, int]) -> None:
    a = random_array((3, 4, 5), 0.3, np.dtype(np.float64), 0, seed=7)
    a[1, 2, :] = 2.5  # one long run
    t = _check_all_ways(a, fmt, 0, order)
    assert t.mode_order == order and [lv.size for lv in t.levels] == [a.shape[m] for m in order]
    csf = convert(t, "csf", mode_order=order[::-1])
    assert_same(to_numpy(csf), a)
    assert_same(to_numpy(convert(csf, fmt, mode_order=order)), a)
    assert_same(to_numpy(Tensor.from_scipy(t.to_scipy("coo"))), a)


@pytest.mark.parametrize("fmt", ["ell", "rle"])
def test_1d_and_2d_column_major(fmt: str) -> None:
    v = np.array([0, 3, 3, 3, 0, 1, 0, 0, 4], dtype=np.int64)
    t = _check_all_ways(v, fmt, 0)
    assert t.nnz == (5 if fmt == "ell" else 3)
    a = random_array((5, 7), 0.4, np.dtype(np.float32), np.nan, seed=2)
    t = _check_all_ways(a, fmt, np.nan, (1, 0))
    assert t.levels[0].size == 7


def test_formats_refuse_other_ndim_and_orders() -> None:
    with pytest.raises(ValueError, match="is for 2-D tensors"):
        Tensor.from_numpy(np.zeros((2, 2, 2)), "dia")
    with pytest.raises(ValueError, match="is for 2-D tensors"):
        Tensor.from_numpy(np.zeros(3), "bsr")
    with pytest.raises(ValueError, match="row-major matrix"):
        Tensor.from_numpy(np.zeros((2, 2)), "bsr", mode_order=(1, 0))


# ---- run-length and ELL layouts ---------------------------------------------------------

def test_runs_are_maximal_and_fill_runs_are_left_out() -> None:
    a = np.array([[1.0, 1.0, 1.0, 0.0, 2.0, 2.0],
                  [np.nan, np.nan, 5.0, 5.0, 5.0, 0.0],
                  [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]])
    t = Tensor.from_numpy(a, "rle")
    runs = t.levels[1]
    assert isinstance(runs, Runs)
    assert runs.ptr.tolist() == [0, 2, 4, 4]
    assert runs.idx.tolist() == [0, 4, 0, 2] and runs.end.tolist() == [3, 6, 2, 5]
    assert_same(t.values, np.array([1.0, 2.0, np.nan, 5.0]))
    assert t.nnz == 4 and runs.nstored == 10
    # from sparse entries (not a dense source): the same runs
    u = convert(Tensor.from_numpy(a, "csr"), "rle")
    assert u.levels[1].idx.tolist() == runs.idx.tolist()
    assert u.levels[1].end.tolist() == runs.end.tolist()
    # fill 1: runs of 1 are the gaps
    b = np.array([[1, 1, 0, 0, 1, 2, 2]], dtype=np.int8)
    w = Tensor.from_numpy(b, "rle", 1)
    assert w.levels[1].idx.tolist() == [2, 5] and w.levels[1].end.tolist() == [4, 7]
    assert_same(to_numpy(w), b)


def test_ell_layout() -> None:
    a = np.array([[0, 7, 0, 8], [0, 0, 0, 0], [9, 0, 0, 0]], dtype=np.uint16)
    t = Tensor.from_numpy(a, "ell")
    ell = t.levels[1]
    assert isinstance(ell, Ell) and ell.width == 2
    assert ell.idx.tolist() == [1, 3, -1, -1, 0, -1]
    assert t.values.tolist() == [7, 8, 0, 0, 9, 0]
    assert t.nnz == 3


def test_dia_layout_is_scipys() -> None:
    a = np.array([[1.0, 2.0, 0.0], [0.0, 3.0, 4.0], [5.0, 0.0, 6.0]])
    t = Tensor.from_numpy(a, "dia")
    band = t.levels[1]
    assert isinstance(band, Banded) and band.offsets.tolist() == [-2, 0, 1]
    m = sp.dia_array(a)
    assert m.offsets.tolist() == band.offsets.tolist()
    assert_same(t.values.reshape(3, band.length), m.data)


# ---- nnz -------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(5, 5), (4, 7), (7, 4), (1, 6)])
def test_nnz_matches_scipy(shape: tuple[int, int]) -> None:
    a = random_array(shape, 0.5, np.dtype(np.float64), 0, seed=8)
    dia = Tensor.from_numpy(a, "dia")
    assert dia.nnz == sp.dia_array(a).nnz == dia.levels[1].stored_count(shape[0])
    bsr = Tensor.from_numpy(a, "bsr")
    ref = sp.bsr_array(a, blocksize=bsr.levels[1].block)
    assert bsr.nnz == ref.nnz == bsr.values.size
    assert Tensor.from_numpy(a, "ell").nnz == np.count_nonzero(a)
    rle = Tensor.from_numpy(a, "rle")
    assert rle.nnz == rle.values.size == rle.levels[1].idx.size


# ---- scipy interop, zero copy ------------------------------------------------------------

def _dia(shape: tuple[int, int], offsets: list[int], length: int,
         kind: str = "array") -> sp.sparray:
    data = np.arange(1.0, 1.0 + len(offsets) * length).reshape(len(offsets), length)
    return getattr(sp, f"dia_{kind}")((data, np.array(offsets, dtype=np.int32)), shape=shape)


@pytest.mark.parametrize("kind", ["array", "matrix"])
@pytest.mark.parametrize(("shape", "length"), [((5, 5), 5), ((4, 6), 4), ((4, 6), 9),
                                               ((6, 3), 3), ((6, 3), 2), ((3, 3), 0)])
def test_scipy_dia_zero_copy_both_ways(kind: str, shape: tuple[int, int], length: int) -> None:
    m = _dia(shape, [-2, 0, 1], length, kind)
    t = Tensor.from_scipy(m)
    assert t.format == "dia" and t.levels[1].length == length
    assert np.shares_memory(t.values, m.data) or m.data.size == 0
    assert np.shares_memory(t.levels[1].offsets, m.offsets)
    assert_same(to_numpy(t), m.toarray())
    assert t.nnz == m.nnz
    back = t.to_scipy(matrix=kind == "matrix")
    assert back.format == "dia" and isinstance(back, type(m))
    assert back.data.shape == m.data.shape
    assert np.shares_memory(back.data, m.data) or m.data.size == 0
    assert_same(back.toarray(), m.toarray())
    assert_same(to_numpy(_revalidated(t)), m.toarray())


def test_scipy_dia_unsorted_duplicate_and_outside_offsets() -> None:
    m = _dia((5, 6), [2, -1, 9, -7, 0], 6)  # two offsets outside the matrix
    t = Tensor.from_scipy(m)
    assert t.levels[1].offsets.tolist() == [-7, -1, 0, 2, 9]
    assert_same(to_numpy(t), m.toarray())
    assert t.nnz == m.nnz
    dup = _dia((4, 4), [0, 1, 2], 4)
    dup.offsets = np.array([1, -1, 1], dtype=np.int32)  # scipy adds duplicate diagonals
    expected = dup.toarray()
    t = Tensor.from_scipy(dup)
    assert t.levels[1].offsets.tolist() == [-1, 1]
    assert_same(to_numpy(t), expected)
    assert_same(to_numpy(_revalidated(t)), expected)
    assert_same(t.to_scipy().toarray(), expected)
    fortran = sp.dia_array((np.asfortranarray(np.arange(8.0).reshape(2, 4)), [0, 1]),
                           shape=(4, 4))
    assert_same(to_numpy(Tensor.from_scipy(fortran)), fortran.toarray())


@pytest.mark.parametrize("kind", ["array", "matrix"])
def test_scipy_bsr_zero_copy_both_ways(kind: str) -> None:
    a = np.kron(np.array([[1, 0, 1], [0, 1, 0]]), np.ones((2, 3))) * np.arange(1.0, 10.0)
    m = getattr(sp, f"bsr_{kind}")(a, blocksize=(2, 3))
    assert m.has_canonical_format
    t = Tensor.from_scipy(m)
    assert t.format == "bsr" and t.levels[1].block == (2, 3)
    assert np.shares_memory(t.values, m.data)
    assert np.shares_memory(t.levels[1].ptr, m.indptr)
    assert np.shares_memory(t.levels[1].idx, m.indices)
    assert_same(to_numpy(t), a)
    assert t.nnz == m.nnz
    back = t.to_scipy(matrix=kind == "matrix")
    assert back.format == "bsr" and isinstance(back, type(m)) and back.blocksize == (2, 3)
    assert np.shares_memory(back.data, m.data)
    assert np.shares_memory(back.indices, m.indices)
    assert np.shares_memory(back.indptr, m.indptr)
    assert_same(back.toarray(), a)


def test_scipy_bsr_non_canonical_blocks() -> None:
    data = np.arange(1.0, 17.0).reshape(4, 2, 2)
    # block row 0: block columns 1, 0 (unsorted); block row 1: column 1 twice (duplicates)
    m = sp.bsr_array((data, np.array([1, 0, 1, 1]), np.array([0, 2, 4])), shape=(4, 4))
    expected = m.toarray()
    assert not m.has_canonical_format
    t = Tensor.from_scipy(m)
    assert t.levels[1].idx.tolist() == [0, 1, 1]
    assert_same(to_numpy(t), expected)
    assert_same(to_numpy(_revalidated(t)), expected)
    assert_same(m.data, np.arange(1.0, 17.0).reshape(4, 2, 2))  # input left alone
    # storage past indptr[-1] is ignored, as scipy ignores it
    m2 = sp.bsr_array((data, np.array([0, 1, 0, 0]), np.array([0, 2, 3])), shape=(4, 4))
    t2 = Tensor.from_scipy(m2)
    assert t2.values.size == 12 and np.shares_memory(t2.values, data)
    assert_same(to_numpy(t2), m2.toarray())


def test_scipy_bsr_indptr_still_checked() -> None:
    m = sp.bsr_array(np.arange(16.0).reshape(4, 4), blocksize=(2, 2))
    m.indptr = np.array([0, 2, 1], dtype=m.indptr.dtype)
    with pytest.raises(ValueError, match="indptr decreases at block row 1"):
        Tensor.from_scipy(m)


def test_to_scipy_every_format_from_structured() -> None:
    a = random_array((6, 4), 0.4, np.dtype(np.float64), 0, seed=9)
    for fmt in STRUCTURED:
        for order in ((0, 1), (1, 0)) if fmt in ("ell", "rle") else ((0, 1),):
            t = Tensor.from_numpy(a, fmt, mode_order=order)
            default = t.to_scipy()
            want = fmt if fmt in ("dia", "bsr") else ("csr" if order == (0, 1) else "csc")
            assert default.format == want
            assert_same(default.toarray(), a)
            for target in ("csr", "csc", "coo", "dia", "bsr", "lil", "dok"):
                m = t.to_scipy(target)
                assert m.format == target
                assert_same(m.toarray(), a)
    csr = Tensor.from_numpy(a, "csr")
    assert csr.to_scipy("dia").format == "dia"
    b = csr.to_scipy("bsr")
    assert b.format == "bsr" and b.has_canonical_format
    assert_same(b.toarray(), a)


def test_to_scipy_rle_reads_runs_not_run_starts() -> None:
    a = np.array([[0.0, 4.0, 4.0, 4.0], [2.0, 2.0, 0.0, 3.0]])
    t = Tensor.from_numpy(a, "rle")
    assert t.values.size == 3
    m = t.to_scipy()
    assert m.format == "csr" and m.nnz == 6
    assert_same(m.toarray(), a)


@pytest.mark.parametrize("fmt", STRUCTURED)
def test_to_scipy_refuses_nonzero_fill(fmt: str) -> None:
    t = Tensor.from_numpy(np.ones((2, 2)), fmt, np.nan)
    with pytest.raises(ValueError, match="scipy.sparse has no fill values"):
        t.to_scipy()


@pytest.mark.parametrize("fmt", ["dia", "bsr"])
def test_xp_asarray_keeps_dia_and_bsr(fmt: str) -> None:
    a = random_array((6, 6), 0.5, np.dtype(np.float64), 0, seed=4)
    m = sp.dia_array(a) if fmt == "dia" else sp.bsr_array(a, blocksize=(2, 3))
    x = xp.asarray(m)
    assert x.format == fmt
    t = x.tensor()
    assert t.format == fmt and np.shares_memory(t.values, m.data)
    assert_same(to_numpy(t), a)
    assert_same(np.asarray(x), a)
    assert xp.asarray(m, copy=True).format == fmt
    assert not np.shares_memory(xp.asarray(m, copy=True).tensor().values, m.data)
    assert np.shares_memory(xp.to_scipy(x).data, m.data)


# ---- validation --------------------------------------------------------------------------

@pytest.mark.parametrize(("levels", "nvals", "exc", "msg"), [
    ([Dense(3), Banded(3, np.array([1, 0]), 3)], 6, ValueError,
     "offsets must be ascending and distinct; got 1 then 0"),
    ([Dense(3), Banded(3, np.array([0, 0]), 3)], 6, ValueError,
     "offsets must be ascending and distinct; got 0 then 0"),
    ([Dense(3), Banded(3, np.array([0.0, 1.0]), 3)], 6, ValueError,
     "offsets must be a 1-D integer array"),
    ([Dense(3), Banded(3, np.array([0, 1]), -1)], 0, ValueError, "length must be >= 0"),
    ([Dense(3), Banded(3, np.array([0, 1]), 3)], 5, ValueError,
     "values has length 5, but the levels have 6 positions"),
    ([Dense(3), Ell(3, 2, np.array([-1, 1, 0, 2, -1, -1]))], 6, ValueError,
     "parent 0 has a stored slot after padding"),
    ([Dense(3), Ell(3, 2, np.array([0, 1, 2, 1, -1, -1]))], 6, ValueError,
     "parent 1 has coordinates 2 then 1; an ELL level's slots ascend"),
    ([Dense(3), Ell(3, 2, np.array([0, 3, -1, -1, -1, -1]))], 6, ValueError,
     "coordinate 3 at slot 1 is out of range"),
    ([Dense(3), Ell(3, 2, np.array([0, -2, -1, -1, -1, -1]))], 6, ValueError,
     "coordinate -2 at slot 1 is out of range"),
    ([Dense(3), Ell(3, 2, np.array([0, 1, -1, -1, -1]))], 5, ValueError,
     r"idx has length 5, expected 3 parents × width 2 = 6"),
    ([Dense(3), Runs(3, np.array([0, 2, 2, 2]), np.array([0, 1]), np.array([2, 3]))], 2,
     ValueError, r"runs 0 \[0, 2\) and 1 \[1, 3\) overlap"),
    ([Dense(3), Runs(3, np.array([0, 1, 1, 1]), np.array([2]), np.array([2]))], 1,
     ValueError, r"run 0 is empty or reversed: \[2, 2\)"),
    ([Dense(3), Runs(3, np.array([0, 1, 1, 1]), np.array([1]), np.array([4]))], 1,
     CoordinateError, "run ends"),
    ([Dense(3), Runs(3, np.array([0, 2, 2, 2]), np.array([0, 2]), np.array([1]))], 2,
     ValueError, "end has length 1, expected 2"),
    ([Dense(3), Runs(3, np.array([0, 2, 2, 2]), np.array([2, 0]), np.array([3, 1]))], 2,
     ValueError, "run starts.*unsorted coordinates 2, 0"),
    ([Dense(3), Blocked(3, np.array([0, 1]), np.array([0]), (2, 2))], 4, ValueError,
     r"block shape \(2, 2\) does not divide the shape \(3, 3\)"),
])
def test_validation_messages(levels: list, nvals: int, exc: type, msg: str) -> None:
    with pytest.raises(exc, match=msg):
        Tensor((3, 3), levels, (0, 1), np.zeros(nvals), 0.0)


def test_blocked_validation_messages() -> None:
    def make(ptr: list[int], idx: list[int], nvals: int = 12) -> Tensor:
        return Tensor((4, 6), [Dense(4), Blocked(6, np.array(ptr), np.array(idx), (2, 3))],
                      (0, 1), np.zeros(nvals), 0.0)

    make([0, 2, 2], [0, 1])  # valid
    with pytest.raises(ValueError, match=r"\(blocks\): unsorted coordinates 1, 0"):
        make([0, 2, 2], [1, 0])
    with pytest.raises(CoordinateError, match=r"\(blocks\): coordinate 2 at position 1"):
        make([0, 2, 2], [0, 2])
    with pytest.raises(ValueError, match="ptr has length 2, expected 3"):
        make([0, 2], [0, 1])
    with pytest.raises(ValueError, match="values has length 11, but the levels have 12"):
        make([0, 2, 2], [0, 1], 11)


def test_structured_level_must_be_last_under_dense() -> None:
    with pytest.raises(ValueError, match="stores the columns of a row-major 2-D matrix"):
        FormatSpec("dia", ("dense", "banded"), (1, 0))
    with pytest.raises(ValueError, match="banded"):
        Tensor((2, 3), [Dense(2), Banded(3, np.array([0]), 3)], (1, 0), np.zeros(3))
    with pytest.raises(ValueError, match="must be the last level, under dense levels only"):
        FormatSpec("custom", ("ell", "dense"), (0, 1))
    with pytest.raises(ValueError, match="ell"):
        Tensor((2, 3), [Ell(2, 1, np.array([0])), Dense(3)], (0, 1), np.zeros(3))


# ---- asformat and blocksize ----------------------------------------------------------------

@pytest.mark.parametrize("fmt", STRUCTURED)
def test_xp_asformat(fmt: str) -> None:
    a = random_array((6, 4), 0.4, np.dtype(np.float32), 0, seed=6)
    x = xp.asformat(xp.asarray(a), fmt)
    assert x.format == fmt and x.tensor().format == fmt
    assert_same(np.asarray(x), a)
    assert xp.asformat(x, fmt) is x
    y = xp.asarray(a, format=fmt)
    assert y.format == fmt
    assert_same(np.asarray(y), a)
    back = xp.asformat(x, "csc")
    assert back.format == "csc"
    assert_same(np.asarray(back), a)


def test_xp_asformat_blocksize() -> None:
    a = random_array((4, 6), 0.5, np.dtype(np.int64), 0, seed=1)
    x = xp.asformat(xp.asarray(a), "bsr", blocksize=(2, 2))
    t = x.tensor()
    assert x.format == "bsr" and t.levels[1].block == (2, 2)
    assert_same(np.asarray(x), a)
    assert xp.asformat(x, "bsr", blocksize=(2, 2)) is x
    y = xp.asformat(x, "bsr", blocksize=(4, 3))
    assert y.tensor().levels[1].block == (4, 3)
    assert_same(np.asarray(y), a)
    # a scipy input, a lazy (uncomputed) input
    z = xp.asformat(sp.csr_array(a), "bsr", blocksize=(1, 6))
    assert z.tensor().levels[1].block == (1, 6)
    assert_same(np.asarray(z), a)
    lazy = xp.asarray(a) + 1
    w = xp.asformat(lazy, "bsr", blocksize=(2, 3))
    assert w.tensor().levels[1].block == (2, 3)
    assert_same(np.asarray(w), a + 1)
    u = Tensor.from_numpy(a, "csr").asformat("bsr", blocksize=(2, 6))
    assert u.format == "bsr" and u.levels[1].block == (2, 6)
    assert_same(to_numpy(u), a)


@pytest.mark.parametrize(("blocksize", "exc", "msg"), [
    ((3, 2), ValueError, r"blocksize \(3, 2\) does not divide the shape \(4, 6\)"),
    ((0, 2), ValueError, "blocksize must be positive"),
    ((-2, 2), ValueError, "blocksize must be positive"),
    ((2,), TypeError, "blocksize must be a pair of ints"),
    ((2, 2, 2), TypeError, "blocksize must be a pair of ints"),
    ((2.0, 2), TypeError, "blocksize must be a pair of ints"),
    ((True, 2), TypeError, "blocksize must be a pair of ints"),
    ("22", TypeError, "blocksize must be a pair of ints"),
    (2, TypeError, "blocksize must be a pair of ints"),
])
def test_blocksize_errors(blocksize: object, exc: type, msg: str) -> None:
    a = np.eye(4, 6)
    with pytest.raises(exc, match="asformat: " + msg):
        xp.asformat(xp.asarray(a), "bsr", blocksize=blocksize)
    with pytest.raises(exc, match=msg):
        Tensor.from_numpy(a, "csr").asformat("bsr", blocksize=blocksize)


@pytest.mark.parametrize("fmt", ["csr", "dia", "ell", "rle", "dense"])
def test_blocksize_only_for_bsr(fmt: str) -> None:
    a = np.eye(4)
    with pytest.raises(ValueError, match=f"blocksize is for format 'bsr' only, got format "
                                         f"'{fmt}'"):
        xp.asformat(xp.asarray(a), fmt, blocksize=(2, 2))
    with pytest.raises(ValueError, match="blocksize is for format 'bsr' only"):
        Tensor.from_numpy(a, "csr").asformat(fmt, blocksize=(2, 2))


# ---- random cases --------------------------------------------------------------------------

_DRAW_DTYPES = [np.dtype(d) for d in (np.bool_, np.int8, np.uint16, np.float64, np.complex128)]


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    fmt=st.sampled_from(STRUCTURED),
    rows=st.integers(0, 7),
    cols=st.integers(0, 7),
    density=st.floats(0.0, 1.0),
    dtype=st.sampled_from(_DRAW_DTYPES),
    fill_pick=st.integers(0, 2),
    transpose=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_random_cases(fmt: str, rows: int, cols: int, density: float, dtype: np.dtype,
                      fill_pick: int, transpose: bool, seed: int) -> None:
    fills = _fills(dtype)
    fill = fills[fill_pick % len(fills)]
    a = random_array((rows, cols), density, dtype, fill, seed=seed)
    if seed % 3 == 0 and a.size:  # long runs of one value
        a[:, : cols // 2 + 1] = a[0, 0]
    order = (1, 0) if transpose and fmt in ("ell", "rle") else None
    t = Tensor.from_numpy(a, fmt, fill, mode_order=order)
    assert_same(to_numpy(_revalidated(t)), a)
    for target in ("csr", "coo", "csf", "dense", "hash"):
        u = convert(t, target)
        assert_same(to_numpy(u), a)
        assert_same(to_numpy(convert(u, t.spec)), a)
    if fmt == "bsr" and rows and cols:
        r = next(d for d in (3, 2, 1) if rows % d == 0)
        b = to_structured(t, "bsr", blocksize=(r, cols))
        assert_same(to_numpy(_revalidated(b)), a)
    if bool(np.asarray(fill == 0)):
        m = t.to_scipy()
        assert_same(m.toarray(), a)
        back = Tensor.from_scipy(m)
        assert_same(to_numpy(back), a)
        if fmt in ("dia", "bsr"):
            assert back.format == fmt and np.shares_memory(back.values, t.values) or (
                t.values.size == 0)
