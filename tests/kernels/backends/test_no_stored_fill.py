"""Outputs never store the fill (issue 22, item 4; ``compile.planning.stored_fill``): a kernel that
computes a sparse result drops the entries whose value equals the result's fill, in shared
patterns (the host compacts), appends and workspaces (the fill phase tests each entry),
single-pass and count + fill hosts alike; a bare copy keeps explicit fills."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.formats.levels import Compressed, Dense, Singleton
from lazysparse.formats.stored_fills import compact_levels, drop_stored_fills, fill_mask
from lazysparse.formats.tensor import Tensor
from lazysparse.kernels.backends.numba.fill_compaction import compact_chunks
from lazysparse.kernels.compile.planning.stored_fill import FillTest, keep_expr, same_expr
from tests.conftest import slow_except

RNG = np.random.default_rng(22)


def sample(shape, dtype, density=0.3, explicit=True):
    """A dense array with negative and positive stored values (and where ``explicit``, a
    few stored zeros) and the mask of its stored positions."""
    stored = RNG.random(shape) < density
    if np.dtype(dtype).kind == "i":
        v = RNG.integers(-3, 4, shape)
    else:
        v = RNG.standard_normal(shape)
    v = v.astype(dtype)
    if explicit:
        v[stored & (RNG.random(shape) < 0.1)] = 0
    return v, stored


def lazy(v, stored, fmt, fill):
    """``v`` at ``stored`` positions, ``fill`` elsewhere, as a lazy array of layout
    ``fmt`` that stores exactly those positions (explicit zeros included)."""
    X = sp.coo_array((v[stored], np.nonzero(stored)), shape=v.shape).asformat(fmt)
    if fmt != "coo":
        X.sort_indices()
    t = Tensor.from_scipy(X)
    if not (isinstance(fill, float) and np.isnan(fill)) and fill == 0:
        return xp.asarray(t), X
    t = Tensor(t.shape, t.levels, t.mode_order, t.values, np.asarray(fill, v.dtype)[()],
               format=t.format)
    return xp.asarray(t), None


def dense_of(v, stored, fill):
    return np.where(stored, v, np.asarray(fill, v.dtype))


def stored_count(r):
    t = r.tensor()
    return int(np.asarray(t.values).shape[0])


def fill_count(r):
    t = r.tensor()
    return int(fill_mask(np.asarray(t.values), t.fill_value).sum())


def is_nan(fill):
    return isinstance(fill, float) and np.isnan(fill)


# op: (lazy, NumPy on the dense equivalent, scipy on the fill-0 matrix or None)
OPS = {
    "maximum": (lambda A, B, c: xp.maximum(A, c), lambda D, E, c: np.maximum(D, c),
                lambda X, Y: X.maximum(0)),
    "minimum": (lambda A, B, c: xp.minimum(A, c), lambda D, E, c: np.minimum(D, c),
                lambda X, Y: X.minimum(0)),
    "where": (lambda A, B, c: xp.where(A > 0.5, A, c),
              lambda D, E, c: np.where(D > 0.5, D, c), lambda X, Y: X.multiply(X > 0.5)),
    "greater": (lambda A, B, c: A > 0.5, lambda D, E, c: D > 0.5, lambda X, Y: X > 0.5),
    "abs": (lambda A, B, c: xp.abs(A), lambda D, E, c: np.abs(D), lambda X, Y: abs(X)),
    "sub_self": (lambda A, B, c: A - A, lambda D, E, c: D - D, lambda X, Y: X - X),
    "sub": (lambda A, B, c: A - B, lambda D, E, c: D - E, lambda X, Y: X - Y),
    "mul_mask": (lambda A, B, c: A * xp.astype(A > 0.5, A.dtype),
                 lambda D, E, c: D * (D > 0.5).astype(D.dtype),
                 lambda X, Y: X.multiply(X > 0.5)),
}

CASES = [("float64", 0.0), ("float64", np.nan), ("float32", 0.0), ("float32", np.nan),
         ("int64", 0)]


def check(r, want, fill, scipy_nnz=None):
    got = np.asarray(r)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    n = stored_count(r)
    assert fill_count(r) == 0
    rfill = r.tensor().fill_value
    assert n == int((~fill_mask(want, rfill)).sum())
    if scipy_nnz is not None:
        assert n <= scipy_nnz


@pytest.mark.parametrize("dtype,fill", slow_except(CASES, CASES[:2]))
@pytest.mark.parametrize("fmt", slow_except(["csr", "csc", "coo"], ["csr", "coo"]))
@pytest.mark.parametrize("op", slow_except(sorted(OPS), ["abs", "maximum", "mul_mask", "sub_self",
                                                         "where"]))
def test_elementwise_results_store_no_fill(op, fmt, dtype, fill):
    fn, npf, spf = OPS[op]
    v, s = sample((23, 17), dtype)
    w, t = sample((23, 17), dtype)
    A, X = lazy(v, s, fmt, fill)
    B, Y = lazy(w, t, fmt, fill)
    c = np.asarray(fill, dtype)[()]
    if dtype == "int64" and op == "where":
        c = 0
    r = xp.compute(xp.asformat(fn(A, B, c), fmt))
    want = npf(dense_of(v, s, fill), dense_of(w, t, fill), c)
    with np.errstate(invalid="ignore"):
        check(r, want, fill, spf(X, Y).nnz if X is not None else None)
    assert r.format == fmt


@pytest.mark.parametrize("fmt", ["csr", "coo"])
def test_mixed_kind_mask_product(fmt):
    """``X * (X > 0.5)``: bool times float once mixed-kind promotion lands."""
    v, s = sample((19, 13), "float64")
    A, X = lazy(v, s, fmt, 0.0)
    try:
        e = A * (A > 0.5)
    except TypeError:
        pytest.skip("mixed-kind promotion (bool * float) not available yet")
    r = xp.compute(xp.asformat(e, fmt))
    D = dense_of(v, s, 0.0)
    check(r, D * (D > 0.5), 0.0, X.multiply(X > 0.5).nnz)


def test_scipy_counts_on_the_issue_example():
    X = sp.random_array((50, 40), density=0.2, format="csr", rng=RNG,
                        data_sampler=RNG.standard_normal)
    A = xp.asarray(X)
    for e, ref in [(xp.maximum(A, 0.0), X.maximum(0)), (xp.minimum(A, 0.0), X.minimum(0)),
                   (A > 0.5, X > 0.5), (A - A, X - X), (xp.abs(A), abs(X))]:
        r = xp.compute(xp.asformat(e, "csr"))
        assert r.nnz <= ref.nnz
        assert r.nnz == np.count_nonzero(ref.toarray())
        np.testing.assert_array_equal(np.asarray(r), ref.toarray())


def test_shared_pattern_kept_when_nothing_is_fill():
    """``abs(A)`` computes no zero: the result still shares A's index arrays."""
    v, s = sample((30, 20), "float64", explicit=False)
    A, X = lazy(v, s, "csr", 0.0)
    r = xp.compute(xp.asformat(xp.abs(A), "csr"))
    t, a = r.tensor(), A.tensor()
    assert t.levels[1].idx is a.levels[1].idx
    assert stored_count(r) == X.nnz


def test_signed_zero_and_complex():
    v, s = sample((15, 11), "float64")
    A, X = lazy(v, s, "csr", 0.0)
    r = xp.compute(xp.asformat(A * -0.0, "csr"))  # -0.0 and 0.0 both equal the fill
    assert stored_count(r) == 0 and X.nnz > 0
    z = (v + 1j * v).astype(np.complex128)
    C, _ = lazy(z, s, "coo", 0.0)
    r = xp.compute(xp.asformat(xp.where(xp.real(C) > 0, C, 0), "coo"))
    D = dense_of(z, s, 0)
    check(r, np.where(D.real > 0, D, 0), 0)


def test_bool_result_fill_true():
    """A bool result whose fill is True (``A <= 0.5`` with fill 0) stores only False."""
    v, s = sample((17, 12), "float64")
    A, X = lazy(v, s, "csr", 0.0)
    r = xp.compute(xp.asformat(A <= 0.5, "csr"))
    D = dense_of(v, s, 0.0)
    check(r, D <= 0.5, True)
    assert r.tensor().fill_value
    assert stored_count(r) == int((D > 0.5).sum())


def test_spgemm_cancellation_dropped_like_scipy():
    """Gustavson SpGEMM (row workspace drain): sums that cancel to 0 are not stored
    (scipy's ``csr_matmat`` drops them too)."""
    a = np.zeros((40, 30))
    b = np.zeros((30, 25))
    a[:, 0], a[:, 1] = 1.0, 1.0
    b[0, :10], b[1, :10] = 2.0, -2.0  # columns 0..9 cancel exactly
    b[0, 10:], b[1, 10:] = 1.0, 2.0
    A, B = xp.asarray(sp.csr_array(a)), xp.asarray(sp.csr_array(b))
    r = xp.compute(xp.asformat(A @ B, "csr"))
    ref = sp.csr_array(a) @ sp.csr_array(b)
    np.testing.assert_array_equal(np.asarray(r), a @ b)
    assert stored_count(r) == np.count_nonzero(a @ b) <= ref.nnz


@pytest.mark.parametrize("fmt", slow_except(["csr", "coo", "csc"], ["csr"]))
def test_parallel_chunks_compact(fmt):
    """Enough rows for several chunks (count + fill with a row-end ptr, COO's one group
    without a dense prefix, the chunked single pass): each chunk's dropped entries leave
    a gap the host closes."""
    if numba.get_num_threads() < 2:
        pytest.skip("needs two Numba threads")
    v, s = sample((5000, 40), "float64", density=0.05)
    w, t = sample((5000, 40), "float64", density=0.05)
    A, X = lazy(v, s, fmt, 0.0)
    B, Y = lazy(w, t, fmt, 0.0)
    D, E = dense_of(v, s, 0.0), dense_of(w, t, 0.0)
    for e, want, ref in [(xp.maximum(A, B), np.maximum(D, E), X.maximum(Y)),
                         (A > B, D > E, X > Y), (xp.where(A > B, A, 0.0), np.where(D > E, D, 0),
                                                 X.multiply(X > Y)),
                         (xp.maximum(A, 0.0), np.maximum(D, 0), X.maximum(0))]:
        check(xp.compute(xp.asformat(e, fmt)), want, 0.0, ref.nnz)


def test_copy_keeps_explicit_zeros():
    """A bare copy into another layout keeps the user's stored entries (as scipy's
    conversions do)."""
    v, s = sample((20, 14), "float64")
    A, X = lazy(v, s, "csr", 0.0)
    assert (X.data == 0).any()
    for fmt in ("coo", "csc"):
        r = xp.compute(xp.asformat(A, fmt))
        assert stored_count(r) == X.nnz


def test_explain_shows_the_test():
    v, s = sample((20, 14), "float64")
    A, _ = lazy(v, s, "csr", 0.0)
    B, _ = lazy(*sample((20, 14), "float64"), "csr", 0.0)
    text = str(xp.explain(xp.asformat(xp.maximum(A, B), "coo")))
    assert "(oval != ofill)" in text
    A2, _ = lazy(v, s, "csr", np.nan)
    B2, _ = lazy(*sample((20, 14), "float64"), "csr", np.nan)
    text = str(xp.explain(xp.asformat(xp.maximum(A2, B2), "coo")))
    assert "(oval == oval)" in text


# ---------------------------------------------------------------------- units


def test_fill_mask_notion():
    vals = np.array([0.0, -0.0, 1.0, np.nan])
    assert fill_mask(vals, np.float64(0.0)).tolist() == [True, True, False, False]
    assert fill_mask(vals, np.float64(np.nan)).tolist() == [False, False, False, True]
    c = np.array([complex(np.nan, 1), 1 + 0j, 0j])
    assert fill_mask(c, np.complex128(np.nan)).tolist() == [True, False, False]
    assert fill_mask(np.array([True, False]), np.bool_(False)).tolist() == [False, True]


@pytest.mark.parametrize("test", list(FillTest))
def test_keep_expr_semantics(test):
    from lazysparse.kernels.backends.numba.codegen import expr_src
    from lazysparse.kernels.compile.ir.loop_ir import Var

    src = expr_src(keep_expr(test, Var("v")))
    neg = expr_src(same_expr(test, Var("v")))
    for v in (0.0, -0.0, 2.0, np.nan):
        for ofill in ((0.0, np.nan) if test is FillTest.ANY else
                      ((np.nan,) if test is FillTest.NAN else (0.0,))):
            keep = bool(eval(src, {"v": v, "ofill": ofill}))  # noqa: S307
            is_fill = bool(eval(neg, {"v": v, "ofill": ofill}))  # noqa: S307
            same = (v == ofill) or (np.isnan(v) and np.isnan(ofill))
            assert keep == (not same) and is_fill == same, (src, v, ofill)


def test_compact_levels_coo_and_dcsr():
    # COO: compressed-nonunique root + singleton
    idx0 = np.array([0, 0, 1, 3], np.int32)
    idx1 = np.array([1, 2, 0, 3], np.int32)
    lv = [Compressed(4, np.array([0, 4]), idx0, unique=False), Singleton(4, idx1)]
    out = compact_levels(lv, np.array([True, False, False, True]))
    assert out[0].ptr.tolist() == [0, 2] and out[0].idx.tolist() == [0, 3]
    assert out[1].idx.tolist() == [1, 3]
    # DCSR: rows 0, 1, 3; row 1 loses its only entry
    rows = Compressed(4, np.array([0, 3]), np.array([0, 1, 3]))
    cols = Compressed(4, np.array([0, 2, 3, 4]), np.array([1, 2, 0, 3]))
    out = compact_levels([rows, cols], np.array([True, True, False, True]))
    assert out[0].idx.tolist() == [0, 3] and out[0].ptr.tolist() == [0, 2]
    assert out[1].ptr.tolist() == [0, 2, 3] and out[1].idx.tolist() == [1, 2, 3]
    # CSR: a dense row level stays whole
    out = compact_levels([Dense(4), cols], np.array([False, True, True, False]))
    assert out[1].ptr.tolist() == [0, 1, 2, 2] and out[1].idx.tolist() == [2, 0]


def test_drop_stored_fills_builds_a_valid_tensor():
    m = sp.csr_array(np.array([[0, 1.0, 2.0], [3.0, 0, 0], [0, 0, 4.0]]))
    t = Tensor.from_scipy(m)
    t2 = Tensor(t.shape, t.levels, t.mode_order, np.array([0.0, 2.0, 0.0, 4.0]), 0.0,
                format=t.format)
    out = drop_stored_fills(t2)
    Tensor(out.shape, out.levels, out.mode_order, out.values, out.fill_value,
           format=out.format)  # checks the levels
    np.testing.assert_array_equal(out.to_numpy(), [[0, 0, 2.0], [0, 0, 0], [0, 0, 4.0]])
    assert out.values.tolist() == [2.0, 4.0]
    assert drop_stored_fills(t) is t


def test_compact_chunks_two_groups():
    """Two chunks of a DCSR-like output: chunk 0 counted 3 row entries / 5 entries and
    wrote 2 / 3, chunk 1 counted 2 / 2 and wrote 2 / 2."""
    groups = ((0,), (1,))
    offs = [np.array([0, 3, 5]), np.array([0, 5, 7])]
    fin = [np.array([2, 5]), np.array([3, 7])]
    rows_ptr = np.array([0, 5])
    rows = np.array([0, 2, -1, 5, 6], np.int32)
    cols_ptr = np.array([0, 2, 3, -1, 6, 7])  # ends written by the fill (absolute)
    cols = np.array([1, 4, 0, -1, -1, 2, 3], np.int32)
    vals = np.array([1.0, 2.0, 3.0, -1, -1, 4.0, 5.0])
    arrays, v, shift = compact_chunks(groups, offs, fin,
                                      [rows_ptr, rows, cols_ptr, cols], vals)
    assert arrays[1].tolist() == [0, 2, 5, 6]
    assert arrays[2].tolist() == [0, 2, 3, 4, 5]
    assert arrays[3].tolist() == [1, 4, 0, 2, 3]
    assert v.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert shift[0].tolist() == [0, 1] and shift[1].tolist() == [0, 2]
    assert compact_chunks(groups, offs, [offs[0][1:], offs[1][1:]], [], vals) is None


@pytest.mark.parametrize("fmt", ["dcsr", "csf", "hash"])
@pytest.mark.parametrize("rows", slow_except([30, 5000], [5000]))
def test_nested_sparse_levels(fmt, rows):
    """Compressed levels under compressed levels: a row left without entries is not
    stored either (sequential and chunked runs; 3-d CSF)."""
    shape = (rows, 12) if fmt != "csf" else (rows // 10, 6, 5)
    v, s = sample(shape, "float64", density=0.1)
    w, t = sample(shape, "float64", density=0.1)
    A, _ = lazy(v, s, "coo", 0.0) if len(shape) == 2 else (xp.asarray(
        Tensor.from_numpy(dense_of(v, s, 0.0), "coo", 0.0)), None)
    B, _ = lazy(w, t, "coo", 0.0) if len(shape) == 2 else (xp.asarray(
        Tensor.from_numpy(dense_of(w, t, 0.0), "coo", 0.0)), None)
    D, E = dense_of(v, s, 0.0), dense_of(w, t, 0.0)
    if len(shape) == 3:
        s, t = D != 0, E != 0
    for e, want in [(xp.minimum(A, B), np.minimum(D, E)), (A > B, D > E),
                    (xp.where(A > 1.0, A, 0.0), np.where(D > 1.0, D, 0.0))]:
        r = xp.compute(xp.asformat(e, fmt))
        check(r, want, 0.0)
        lv = r.tensor().levels[0]
        if isinstance(lv, Compressed):  # no stored row is empty
            assert (np.diff(np.asarray(r.tensor().levels[1].ptr)) > 0).all()


@pytest.mark.parametrize("values", [[1.0, 0.0, 2.0], [0.0, 0.0, 0.0]])
def test_dropping_fills_keeps_an_unordered_level_and_its_format(values: list[float]) -> None:
    """A 1-D result on an unordered compressed level (named ``csf`` like an ordered one):
    the compacted tensor keeps the same format spec (scipy.differentiate.hessian built one)."""
    lv = Compressed.of_kind("compressed-unordered", 6, np.array([0, 3]), np.array([4, 1, 2]))
    t = Tensor((6,), [lv], (0,), np.array(values), 0.0)
    out = drop_stored_fills(t)
    assert out.spec == t.spec
    assert np.count_nonzero(out.values) == out.values.size
    np.testing.assert_array_equal(out.to_numpy(), t.to_numpy())
