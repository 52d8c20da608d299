"""Selections read only what they select (issue 23 item 2): ``x[i]``, ``x[idx]``,
``x[a:b:s]``, ``x[:, keep]`` and ``xp.take`` on compressed arrays, checked against NumPy on
the dense equivalent (formats, dtypes, fill values, negative and repeated indices, empty
selections and rows), stored counts against scipy, errors as NumPy raises them, laziness,
and a 10^9-row hypersparse matrix read in a child process under an address-space limit."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse import formats
from lazysparse.formats import tensor_ops as T
from lazysparse.formats.select import select

FORMATS_2D = ["csr", "csc", "dcsr", "coo", "csf"]
DTYPES = [np.float64, np.float32, np.int64, np.int32, np.complex128, np.bool_]


def _matrix(dtype: type, fill: object, shape: tuple[int, ...] = (9, 11), seed: int = 0
            ) -> np.ndarray:
    """A dense array with about 35 % stored entries, rows 2 and the last empty (all fill),
    column 4 empty."""
    rng = np.random.default_rng(seed)
    vals = rng.standard_normal(shape) * 5
    if np.dtype(dtype).kind == "c":
        vals = vals + 1j * rng.standard_normal(shape)
    a = vals.astype(dtype) if np.dtype(dtype).kind != "b" else vals > 0
    a[rng.random(shape) > 0.35] = fill
    a[2] = fill
    a[-1] = fill
    a[:, 4] = fill
    return a


def _array(a: np.ndarray, fmt: str, fill: object) -> xp.LazyArray:
    return xp.asarray(formats.Tensor.from_numpy(a, fmt, fill_value=fill))


def _same(got: xp.LazyArray, want: np.ndarray) -> None:
    g = np.asarray(got)
    assert g.shape == want.shape and g.dtype == want.dtype
    np.testing.assert_array_equal(g, want)


KEYS_2D = [
    3, -1, 2,                                      # one row (an empty one too)
    np.array([4, 0, 0, -1, 2, 7]),                 # unsorted, repeated, negative rows
    np.array([], dtype=np.int64),                  # nothing
    slice(1, 6), slice(None, None, 3), slice(7, 0, -2), slice(5, 5),
    (slice(None), np.array([10, 0, 4, 4, -3])),    # columns, repeated, unsorted
    (slice(None), np.array([0, 3, 5, 9])),         # columns, increasing
    (slice(None), 5), (slice(None), -2),           # one column
    (3, slice(2, 9, 2)), (np.array([1, 3]), 6), (6, np.array([1, 0, 1])),
    (slice(1, 8), np.array([2, 1])), (slice(None, None, -1), slice(None, None, -3)),
    (None, np.array([1, 5])), (np.array([5, 1]), None),
    np.array([True, False, True, False, False, True, True, False, False]),
]


@pytest.mark.parametrize("fmt", FORMATS_2D)
@pytest.mark.parametrize("dtype,fill", [(np.float64, 0.0), (np.float64, np.nan),
                                        (np.float32, 1.0), (np.int64, 0), (np.int32, 1),
                                        (np.complex128, 0), (np.bool_, False)])
def test_keys_match_numpy(fmt: str, dtype: type, fill: object) -> None:
    a = _matrix(dtype, fill)
    x = _array(a, fmt, fill)
    for key in KEYS_2D:
        out = x[key]
        _same(out, a[key])
        if out.ndim:
            assert not T.is_dense(out.tensor()), (fmt, key)  # stays sparse
            assert np.asarray(out.fill_value, dtype=dtype) == np.asarray(fill, dtype) or \
                np.isnan(fill)  # type: ignore[arg-type]


@pytest.mark.parametrize("fmt", ["csf", "coo"])
def test_three_axes(fmt: str) -> None:
    a = _matrix(np.float64, 0.0, (5, 6, 7), seed=3)
    x = _array(a, fmt, 0.0)
    for key in [2, np.array([4, 0, 4]), (slice(None), 3), (slice(1, 4), np.array([5, 0])),
                (slice(None), slice(None), np.array([6, 1, 1])), (1, slice(None), 2),
                (slice(None, None, -2), 0, slice(2, 7, 3)), (0, np.array([2, 5]))]:
        _same(x[key], a[key])


@pytest.mark.parametrize("fmt", FORMATS_2D)
def test_take_along_each_axis(fmt: str) -> None:
    a = _matrix(np.float64, np.nan, seed=5)
    x = _array(a, fmt, np.nan)
    idx = np.array([3, 3, 0, -2])
    for axis in (0, 1):
        _same(xp.take(x, idx, axis=axis), np.take(a, idx, axis=axis))
        _same(xp.take(x, np.array([], np.int64), axis=axis),
              np.take(a, np.array([], np.int64), axis=axis))
    v = _array(a[1], "csf", np.nan)
    _same(xp.take(v, np.array([10, 0, 0])), a[1][[10, 0, 0]])


def test_stored_counts_equal_scipy() -> None:
    m = sp.random(60, 80, density=0.1, format="csr", random_state=7)
    x = xp.asarray(m)
    keep = np.flatnonzero(np.asarray((m > 0).sum(axis=0)).ravel() >= 5)
    rows = np.array([59, 3, 3, 0, 17])
    for key, ref in [(5, m[[5]]), (rows, m[rows]), (slice(10, 50, 3), m[10:50:3]),
                     ((slice(None), keep), m[:, keep]),
                     ((slice(None), np.array([7, 7, 1])), m[:, [7, 7, 1]])]:
        out = x[key]
        assert out.tensor().nnz == ref.nnz, key
        np.testing.assert_array_equal(np.asarray(out), ref.toarray().reshape(out.shape))
    assert x[:, keep].format == "csr" and x[rows].format == "csr"
    csc = xp.asarray(m.tocsc())
    assert csc[:, keep].format == "csc" and csc[:, keep].tensor().nnz == m[:, keep].nnz


def test_sorted_result_from_unsorted_columns() -> None:
    """Columns picked in any order come out sorted per row (a valid csr)."""
    a = _matrix(np.float64, 0.0, seed=9)
    t = formats.Tensor.from_numpy(a, "csr")
    out = select(t, [None, np.array([9, 1, 5, 1, 0])])
    assert out is not None
    formats.Tensor(out.shape, out.levels, out.mode_order, out.values, 0.0, format="csr")
    np.testing.assert_array_equal(out.to_numpy(), a[:, [9, 1, 5, 1, 0]])


def test_out_of_bounds_and_bad_indices() -> None:
    x = _array(_matrix(np.float64, 0.0), "csr", 0.0)
    for key in [9, -10, np.array([0, 9]), np.array([-10]), (slice(None), 11),
                (slice(None), np.array([3, -12]))]:
        with pytest.raises(IndexError):
            x[key]
    with pytest.raises(IndexError):
        xp.take(x, np.array([9]), axis=0)
    with pytest.raises(IndexError):
        x[np.array([0.5])]
    with pytest.raises(TypeError):
        xp.take(x, np.array([0.5]), axis=0)


def test_reads_never_walk_every_stored_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """No selection of a csr/csc/dcsr builds the coordinates of every stored entry."""
    a = _matrix(np.float64, 0.0, seed=11)
    xs = {fmt: _array(a, fmt, 0.0) for fmt in ("csr", "csc", "dcsr")}
    lazy = xs["csr"] * 2.0 + xs["csr"]

    def refuse(*args: object) -> None:
        raise AssertionError("coordinates of every stored entry were built")

    monkeypatch.setattr(T, "coo_parts", refuse)
    for x in xs.values():
        for key in [3, np.array([8, 1, 1]), slice(2, 7, 2), (slice(None), np.array([0, 7])),
                    (4, 5), (slice(None), 3)]:
            out = x[key]
            np.testing.assert_array_equal(out.tensor().to_numpy(), a[key])
    np.testing.assert_array_equal(np.asarray(xp.compute(lazy[4, 5])), 3 * a[4, 5])


def test_uncomputed_operand_stays_lazy() -> None:
    """A selection of an expression moves into it (only the selected rows are computed)."""
    a, b = _matrix(np.float64, 0.0, seed=1), _matrix(np.float64, 0.0, seed=2)
    x, y = _array(a, "csr", 0.0), _array(b, "csr", 0.0)
    rows = np.array([6, 0, 0, 3])
    for key, ref in [(rows, (a + 2 * b)[rows]), ((slice(None), rows), (a + 2 * b)[:, rows]),
                     ((rows, slice(1, 9, 3)), (a + 2 * b)[rows, 1:9:3])]:
        out = (x + 2 * y)[key]
        assert out._result is None  # still an expression
        _same(out, ref)
    s = xp.sum(x * y, axis=1)[rows]
    assert s._result is None
    _same(s, (a * b).sum(axis=1)[rows])
    _same(xp.take(x * 3.0, rows, axis=1), (a * 3.0)[:, rows])


def test_hypersparse_columns_binary_search() -> None:
    """An index array into an axis too long for a table (10^9 columns) searches it."""
    n = 10**9
    cols = np.array([5, 10**8, 10**9 - 1, 77])
    rows = np.array([0, 1, 1, 2])
    t = formats.Tensor.from_coords([rows, cols], np.array([1.0, 2.0, 3.0, 4.0]), (3, n),
                                   format="dcsr")
    x = xp.asarray(t)
    out = x[:, np.array([10**9 - 1, 5, 5, 6])]
    np.testing.assert_array_equal(np.asarray(out), [[0, 1, 1, 0], [3, 0, 0, 0], [0, 0, 0, 0]])


HYPERSPARSE = textwrap.dedent("""
    import resource, numpy as np
    resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))
    import lazysparse as xp
    from lazysparse import formats
    from lazysparse.formats import tensor_ops as T
    n = 10**9
    rng = np.random.default_rng(0)
    rows = np.sort(rng.choice(n, 2000, replace=False))
    cols = rng.integers(0, n, 2000)
    vals = rng.random(2000)
    h = xp.asarray(formats.Tensor.from_coords([rows, cols], vals, (n, n), format="dcsr"))

    def refuse(*args):
        raise AssertionError("coordinates of every stored entry were built")

    T.coo_parts = refuse  # a read walks the levels, never every stored entry
    r = int(rows[123])
    row = h[r]
    assert row.shape == (n,) and row.tensor().nnz == 1
    assert float(row[int(cols[123])]) == vals[123]
    assert h[r + 1 if r + 1 not in set(rows.tolist()) else 1].tensor().nnz == 0
    sub = h[rows[[5, 3, 3]]]
    assert sub.shape == (3, n) and sub.tensor().nnz == 3
    got = xp.take(h, np.array([rows[7], -1]), axis=0).tensor()
    assert got.shape == (2, n) and got.values.tolist()[:1] == [vals[7]]
    sl = h[: n // 2 : 1000]
    assert sl.shape == (n // 2000,)  + (n,)
    assert sl.tensor().nnz == int(((rows < n // 2) & (rows % 1000 == 0)).sum())
    col = h[:, int(cols[9])]
    assert col.tensor().nnz >= 1 and float(col[int(rows[9])]) == vals[9]
    lazy = (h * 2.0)[r]
    assert float(lazy[int(cols[123])]) == 2 * vals[123]
    print("ok")
""")


def test_hypersparse_rows_in_a_capped_process() -> None:
    """Reading rows of a 10^9 x 10^9 dcsr matrix (row pointers would take 8 GB) within a
    3 GiB address space, without building the stored entries' coordinates."""
    out = subprocess.run([sys.executable, "-c", HYPERSPARSE], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("shape", [(40, 1), (1, 40), (1, 1)])
def test_integer_on_a_length_one_axis_drops_it(fmt: str, shape: tuple[int, int]) -> None:
    """``a[:, 0]`` of a column vector: the integer drops the axis even where it spans the
    whole (length-1) axis."""
    m = sp.random_array(shape, density=0.5, format=fmt, random_state=3)
    a, dense = xp.asarray(m), m.toarray()
    for key in ((slice(None), 0), (0, slice(None)), (-1, slice(None)), (slice(None), -1)):
        got = a[key]
        assert got.shape == dense[key].shape
        np.testing.assert_array_equal(np.asarray(got), dense[key])
