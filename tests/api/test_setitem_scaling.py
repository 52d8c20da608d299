"""``x[key] = v`` at scale: in-place writes, copy-on-write, batched sparse inserts, bounded
lazy layers, 0-d boolean masks — every result checked against NumPy doing the same."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tracemalloc
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import lazysparse as xp
from lazysparse.api.chapters import setitem as S
from lazysparse.api.stored.selection import selection
from lazysparse.logic.nodes import MapJoin
from tests.conftest import examples

FORMATS = ["dense", "csr", "csc", "coo"]
# (dtype, fill): fills 0, NaN and 1 where the dtype has them
CASES = [(np.float64, 0.0), (np.float64, np.nan), (np.float64, 1.0), (np.float32, 0.0),
         (np.int64, 0), (np.int64, 1), (np.complex128, 0.0)]


def _data(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any, fill: Any,
          density: float = 0.01) -> np.ndarray:
    """A NumPy array that is ``fill`` except at about ``density`` of its positions."""
    a = np.full(shape, fill, dtype=dtype)
    stored = rng.random(shape) < density
    a[stored] = rng.integers(2, 9, size=int(stored.sum())).astype(dtype)
    return a


def _make(a: np.ndarray, fmt: str, fill: Any) -> xp.LazyArray:
    """``a`` as a computed lazysparse array in ``fmt`` (sparse ones store only non-fill)."""
    if fmt == "dense":
        return xp.asarray(a)
    return xp.asarray(a, format=fmt, fill_value=fill)


def _check(x: xp.LazyArray, expected: np.ndarray) -> None:
    np.testing.assert_array_equal(np.asarray(x), expected)


def _where_layers(x: xp.LazyArray) -> int:
    """How many ``where`` nodes ``x``'s plan holds."""
    count, stack, seen = 0, [x.expr], set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, MapJoin) and n.op.val.name == "where":
            count += 1
        stack.extend(n.children)
    return count


# --- 1,000 single-element assignments ----------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("dtype", "fill"), CASES)
def test_thousand_single_assignments_match_numpy(fmt: str, dtype: Any, fill: Any) -> None:
    rng = np.random.default_rng(7)
    a = _data(rng, (1000, 1000), dtype, fill, density=0.002)
    x = _make(a, fmt, fill)
    stored = np.argwhere(~np.isnan(a) if np.isnan(fill) else a != fill)
    # random positions, stored positions, repeats, and values equal to the fill value
    pos = rng.integers(0, 1000, size=(1000, 2))
    pos[:200] = stored[rng.integers(0, len(stored), 200)]
    pos[200:300] = pos[300:400]
    vals = rng.integers(-5, 5, size=1000).astype(dtype)
    vals[::7] = fill
    for k, ((i, j), v) in enumerate(zip(pos.tolist(), vals.tolist(), strict=True)):
        x[i, j] = v
        a[i, j] = v
        if k % 250 == 0:  # reads in between merge what is pending
            _check(x[i, j], a[i, j])
    _check(x, a)
    assert x.format == fmt
    assert x.dtype == dtype
    if fmt != "dense":  # stays sparse: at most the new coordinates were stored
        assert x.nnz <= len(stored) + 1000


@pytest.mark.parametrize("fmt", FORMATS)
def test_in_place_writes_copy_once(fmt: str) -> None:
    a = _data(np.random.default_rng(1), (50, 40), np.float64, 0.0, density=0.1)
    x = _make(a, fmt, 0.0)
    before = S.STATS["copies"]
    for i in range(40):
        x[i, (3 * i) % 40] = float(i)
        a[i, (3 * i) % 40] = float(i)
        _check(x, a)  # reading (and dropping the NumPy view) keeps x the owner
    assert S.STATS["copies"] == before + 1  # the user's data was copied once, then in place


def test_thousand_assignments_to_a_never_computed_array() -> None:
    rng = np.random.default_rng(3)
    base = rng.standard_normal((300, 200))
    x = xp.asarray(base) * 2.0  # lazy
    a = base * 2.0
    for i, j in rng.integers(0, 200, size=(1000, 2)).tolist():
        x[i, j] = float(i - j)
        a[i, j] = float(i - j)
        assert _where_layers(x) <= 1  # never a chain
    _check(x, a)


@pytest.mark.parametrize("n", [60, 400])
def test_diagonal_fill_in_a_loop(n: int) -> None:
    x = xp.ones((n, n)) + 1.0
    a = np.ones((n, n)) + 1.0
    for i in range(n):
        x[i, i] = 0.0
        a[i, i] = 0.0
    assert float(xp.sum(x)) == a.sum()
    _check(x, a)


# --- copy-on-write ------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_copy_on_write_keeps_earlier_values(fmt: str) -> None:
    original = _data(np.random.default_rng(2), (6, 5), np.float64, 0.0, density=0.4)
    user = original.copy()
    x = xp.asarray(user) if fmt == "dense" else xp.asarray(user, format=fmt)
    x[5, 4] = 3.0  # x owns its storage from here on
    a = original.copy()
    a[5, 4] = 3.0
    y = x + 1.0  # built before the next assignment
    c = x.copy()
    v = x[None]  # a view: follows x, as in NumPy
    e = x[None] * 1.0  # an expression over a view leaf of the same data
    t = x.tensor()
    view = np.asarray(x)
    x[1, 2] = 50.0
    x[0] = -1.0
    expected = a.copy()
    expected[1, 2] = 50.0
    expected[0] = -1.0
    _check(x, expected)
    np.testing.assert_array_equal(user, original)  # the user's memory is never written
    _check(y, a + 1.0)
    _check(c, a)
    _check(v, expected[None])
    _check(e, a[None])
    np.testing.assert_array_equal(t.to_numpy(), a)
    np.testing.assert_array_equal(view, a)
    z = x * 2.0  # built after: sees the new value
    _check(z, expected * 2.0)


HOLDERS = {
    "expression": lambda x: x + 1.0,
    "copy": lambda x: x.copy(),
    "asarray": lambda x: xp.asarray(x),
    "view leaf in an expression": lambda x: x[None] * 1.0,
    "tensor": lambda x: x.tensor(),
    "numpy view": lambda x: np.asarray(x),
    "values view": lambda x: x.tensor().values[:],
}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("holder", list(HOLDERS))
def test_each_kind_of_reference_triggers_copy_on_write(fmt: str, holder: str) -> None:
    a = _data(np.random.default_rng(9), (5, 4), np.float64, 0.0, density=0.5)
    x = _make(a, fmt, 0.0)
    x[0, 0] = a[0, 0] = 1.0  # owned from here on
    held = HOLDERS[holder](x)
    snapshot = np.array(held)
    x[0, 0] = 2.0  # an existing entry
    x[4, 3] = 3.0  # maybe a new one
    after = np.array(held)
    if holder != "asarray":  # asarray(x) is x itself, like NumPy
        np.testing.assert_array_equal(after, snapshot)
    expected = a.copy()
    expected[0, 0], expected[4, 3] = 2.0, 3.0
    _check(x, expected)


@pytest.mark.parametrize("fmt", FORMATS)
def test_expression_built_before_compute_keeps_its_value(fmt: str) -> None:
    m = sp.random_array((8, 7), density=0.3, format="csr", random_state=4)
    base = xp.asarray(m) if fmt != "dense" else xp.asarray(m.toarray())
    z = base * 3.0
    w = z + 1.0  # reads z's history
    z = xp.compute(z)
    z[2, 3] = 100.0
    _check(w, m.toarray() * 3.0 + 1.0)
    expected = m.toarray() * 3.0
    expected[2, 3] = 100.0
    _check(z, expected)


def test_live_expression_forces_one_copy_per_write_then_in_place_again() -> None:
    x = xp.asarray(np.zeros((4, 4)))
    x[0, 0] = 1.0  # first write: copies the user's data
    before = S.STATS["copies"]
    y = x * 2.0
    x[1, 1] = 1.0  # y reads x's storage: copy
    assert S.STATS["copies"] == before + 1
    _check(y, np.diag([2.0, 0, 0, 0]))
    del y
    x[2, 2] = 1.0  # nothing else reads it now: in place
    assert S.STATS["copies"] == before + 1
    _check(x, np.diag([1.0, 1.0, 1.0, 0]))


def test_scipy_matrix_passed_in_is_never_written() -> None:
    m = sp.random_array((20, 20), density=0.2, format="csr", random_state=5)
    data = m.data.copy()
    x = xp.asarray(m)
    for i in range(20):
        x[i, i] = 7.0
    np.testing.assert_array_equal(m.data, data)
    expected = m.toarray()
    np.fill_diagonal(expected, 7.0)
    _check(x, expected)
    assert x.format == "csr"


# --- sparse storage -----------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("fill", [0.0, np.nan, 1.0])
def test_new_entries_and_entries_set_to_fill(fmt: str, fill: float) -> None:
    a = np.full((5, 6), fill)
    a[1, 2], a[3, 4] = 2.0, 3.0
    x = xp.asarray(a, format=fmt, fill_value=fill)
    x[1, 2] = fill  # a stored entry set to the fill value
    x[0, 0] = 9.0  # a new coordinate
    x[4, 5] = 8.0
    x[4, 5] = fill  # new, then back to the fill value
    x[2, 2] = fill  # a new coordinate set to the fill value
    a[1, 2], a[0, 0], a[4, 5], a[2, 2] = fill, 9.0, fill, fill
    _check(x, a)
    assert x.nnz <= 3  # 3,4 and 0,0 (1,2 may stay stored); nothing densified
    assert x.format == fmt
    np.testing.assert_array_equal(np.asarray(x * 2.0), a * 2.0)


@pytest.mark.parametrize("fill", [0.0, np.nan])
def test_whole_array_assignment_to_sparse_stores_nothing(fill: float) -> None:
    x = xp.asarray(np.eye(400), format="csr", fill_value=fill)
    x[...] = 5.0
    assert x.nnz == 0 and x.fill_value == 5.0 and x.format == "csr"
    _check(x, np.full((400, 400), 5.0))
    x[:, :] = xp.eye(400)
    _check(x, np.eye(400))


def test_selection_allocates_only_the_selection() -> None:
    shape = (10**9, 10**9)
    tracemalloc.start()
    coords, sel_shape = selection([slice(5, 25, 3), np.array([1, 7, 7])], shape)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1 << 20
    assert sel_shape == (7, 3)
    rows, cols = np.meshgrid(np.arange(5, 25, 3), [1, 7, 7], indexing="ij")
    np.testing.assert_array_equal(coords, [rows.reshape(-1), cols.reshape(-1)])


def test_assignments_into_a_huge_sparse_array() -> None:
    x = xp.zeros((1000, 1000, 1000))
    x[1, 2, 3] = 4.0
    x[[5, 6], 7, [8, 9]] = 1.5
    x[10, 11, :4] = np.arange(4.0)
    assert x.nnz == 1 + 2 + 3  # 10, 11, 0 holds the fill value
    assert float(x[1, 2, 3]) == 4.0 and float(x[6, 7, 9]) == 1.5
    assert float(x[10, 11, 3]) == 3.0 and float(xp.sum(x)) == 4.0 + 3.0 + 6.0


# --- keys: slices, integer arrays, masks ------------------------------------------------

KEYS = [
    (1, slice(None, None, 2)),
    (slice(-3, None), -1),
    (np.array([0, 2, 2, -1]), slice(1, 3)),
    (np.array([[0], [3]]), np.array([1, 4])),
    (slice(1, 4), np.array([0, 0, 3])),
    (Ellipsis, 2),
    (None, 2, slice(None)),
    (np.array([1, 2]), None, 3),
    (0, np.array([1, 2]), None),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("key", KEYS, ids=range(len(KEYS)))
@pytest.mark.parametrize("computed", [True, False])
def test_keys_against_numpy(fmt: str, key: Any, computed: bool) -> None:
    rng = np.random.default_rng(11)
    a = _data(rng, (5, 6), np.float64, 0.0, density=0.4)
    x = _make(a, fmt, 0.0)
    if not computed:
        x = x + 0.0
    value = rng.standard_normal(a[key].shape)
    b = a.copy()
    b[key] = value
    x[key] = value  # a NumPy array value
    _check(x, b)
    b[key] = 3.5
    x[key] = 3.5
    _check(x, b)
    b[key] = -value
    x[key] = xp.asarray(-value)
    _check(x, b)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("mask_fmt", ["dense", "csr"])
def test_boolean_masks_against_numpy(fmt: str, mask_fmt: str) -> None:
    rng = np.random.default_rng(12)
    a = _data(rng, (6, 5), np.float64, 0.0, density=0.5)
    m = a > 4
    mask = xp.asarray(m) if mask_fmt == "dense" else xp.asarray(m, format="csr")
    x = _make(a, fmt, 0.0)
    b = a.copy()
    b[m] = -2.0
    x[mask] = -2.0
    _check(x, b)
    vals = np.arange(m.sum(), dtype=np.float64)
    b[m] = vals
    x[mask] = vals  # NumPy's row-major order of the selection
    _check(x, b)
    rows = m.any(axis=1)
    b[rows] = 1.25  # a mask of the leading axis
    x[xp.asarray(rows)] = 1.25
    _check(x, b)
    x[x > 1.0] = 0.0  # a mask computed from x itself
    b[b > 1.0] = 0.0
    _check(x, b)


@settings(max_examples=examples(30), deadline=None)
@given(st.sampled_from(FORMATS), st.lists(
    st.tuples(st.integers(0, 7), st.integers(-8, 8), st.integers(-5, 5)), max_size=25),
    st.booleans())
def test_random_assignment_sequences(fmt: str, ops: list[tuple[int, int, int]],
                                     read_between: bool) -> None:
    a = _data(np.random.default_rng(0), (8, 9), np.int64, 0, density=0.3)
    x = _make(a, fmt, 0)
    for i, j, v in ops:
        key: Any = (i, j) if j >= 0 else (i, slice(None, None, -j))
        x[key] = v
        a[key] = v
        if read_between:
            assert int(x[i, abs(j)]) == a[i, abs(j)]
    _check(x, a)


# --- 0-d boolean masks --------------------------------------------------------------------

MASKS = [lambda: xp.asarray(True), lambda: xp.asarray(False), lambda: np.True_,
         lambda: np.asarray(False)]


@pytest.mark.parametrize("make_mask", MASKS, ids=["xp-true", "xp-false", "np-true", "np-false"])
@pytest.mark.parametrize(("shape", "fmt"), [((), "dense"), ((3,), "dense"), ((3,), "coo"),
                                            ((2, 3), "dense"), ((2, 3), "csr"),
                                            ((2, 3), "csc")])
@pytest.mark.parametrize("computed", [True, False])
def test_zero_d_masks_follow_numpy(make_mask: Any, shape: tuple[int, ...], fmt: str,
                                   computed: bool) -> None:
    rng = np.random.default_rng(5)
    a = _data(rng, shape, np.float64, 0.0, density=0.5) if shape else np.asarray(2.0)
    np_mask = np.asarray(make_mask())
    x = _make(a, fmt, 0.0)
    if not computed:
        x = x * 1.0
    _check(x[make_mask()], a[np_mask])
    b = a.copy()
    b[np_mask] = 7.0
    x[make_mask()] = 7.0
    _check(x, b)
    value = rng.standard_normal(a[np_mask].shape)
    b[np_mask] = value
    x[make_mask()] = xp.asarray(value)
    _check(x, b)
    with pytest.raises(ValueError, match="broadcast|assigned"):
        x[make_mask()] = np.ones((4, 4, 4))


def test_zero_d_mask_getitem_of_sparse_is_lazy_or_empty() -> None:
    x = xp.asarray(np.eye(3), format="csr")
    y = x[xp.asarray(True)]
    assert y.shape == (1, 3, 3) and y.format != "dense" and y.nnz == 3  # stays sparse
    _check(y, np.eye(3)[None])
    z = x[np.False_, :]
    assert z.shape == (0, 3, 3)


# --- errors -------------------------------------------------------------------------------

def test_bad_assignments_raise_clear_errors() -> None:
    x = xp.asarray(np.zeros((3, 4), dtype=np.int64))
    with pytest.raises(TypeError, match="complex"):
        x[0, 0] = 1.5j  # NumPy casts 1.5 to 1 (tests/api/test_inplace_casting.py), not 1.5j
    with pytest.raises(OverflowError, match="out of bounds"):
        x[0, 0] = 2**70
    with pytest.raises(TypeError, match="dict"):
        x[0, 0] = {}
    with pytest.raises(IndexError, match="out of bounds"):
        x[3, 0] = 1
    with pytest.raises(IndexError, match="out of bounds"):
        x[np.array([0, 9]), 0] = 1
    with pytest.raises(ValueError, match="broadcast|assigned"):
        x[0] = np.ones(3, dtype=np.int64)
    s = xp.asarray(np.eye(3), format="csr")
    with pytest.raises(ValueError, match="broadcast"):
        s[0, :2] = np.ones(3)
    with pytest.raises(IndexError, match="boolean index"):
        s[xp.asarray(np.ones(4, dtype=bool))] = 1.0
    _check(x, np.zeros((3, 4)))


# --- user code ----------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_loops_as_users_write_them(fmt: str) -> None:
    a = _data(np.random.default_rng(6), (30, 20), np.float64, 0.0, density=0.2)
    x = _make(a, fmt, 0.0)
    for i in range(1, 30):  # a recurrence over rows, a Python float read each step
        x[i] = x[i - 1] * 0.5 + x[i]
        a[i] = a[i - 1] * 0.5 + a[i]
        assert float(x[i, 0]) == pytest.approx(a[i, 0])
    for k in range(20):
        x[k, k] += 1.0
        a[k, k] += 1.0
    _check(x, a)
    total = 0.0
    for i in range(0, 30, 3):
        total += float(xp.sum(x[i]))
    assert total == pytest.approx(a[::3].sum())


@pytest.mark.slow  # scikit-learn at size: the full suite
def test_sklearn_euclidean_distances_with_lazysparse_input() -> None:
    pytest.importorskip("sklearn")
    code = textwrap.dedent("""
        import numpy as np, sklearn, lazysparse as xp
        from sklearn.metrics.pairwise import euclidean_distances
        for n in (60, 150):
            X = np.random.default_rng(n).standard_normal((n, 4))
            expected = euclidean_distances(X)
            with sklearn.config_context(array_api_dispatch=True):
                out = np.asarray(euclidean_distances(xp.asarray(X)))
            np.testing.assert_allclose(out, expected, atol=1e-12)
            assert (np.diag(out) == 0).all()
        print("ok")
    """)
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"
