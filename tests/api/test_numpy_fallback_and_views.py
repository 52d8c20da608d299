"""NumPy functions lazysparse lacks run in NumPy on dense copies (within the densify
limit); ufunc methods; a write into what NumPy would make a view reaches the array it was
taken from, as in NumPy (issue 24: the clients' suites' causes 1 and "writes through
views")."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.special as ss

import lazysparse as xp
from lazysparse.formats import set_densify_limit
from lazysparse.formats.config import DensifyError

M = sp.random_array((30, 20), density=0.15, format="csr", rng=5)
D = M.toarray()


@pytest.mark.parametrize("fmt", ["dense", "csr", "coo"])
def test_numpy_functions_without_an_equivalent_run_in_numpy(fmt: str) -> None:
    x = xp.asformat(xp.asarray(D), fmt)
    u = np.unique(x)
    assert isinstance(u, np.ndarray)
    np.testing.assert_array_equal(u, np.unique(D))
    vals, counts = np.unique(x, return_counts=True)
    np.testing.assert_array_equal(counts, np.unique(D, return_counts=True)[1])
    np.testing.assert_allclose(np.average(x, axis=0, weights=np.arange(30.0) + 1),
                               np.average(D, axis=0, weights=np.arange(30.0) + 1))
    assert isinstance(np.may_share_memory(x, np.zeros(3)), bool)  # raised TypeError before
    np.testing.assert_allclose(np.atleast_1d(xp.asarray(2.5)), [2.5])
    np.testing.assert_allclose(np.linspace(xp.asarray(0.0), xp.asarray(1.0), 5),
                               np.linspace(0.0, 1.0, 5))
    # lazysparse arrays inside a list argument are converted as well
    np.testing.assert_allclose(np.column_stack([x[:, 0], x[:, 1]]), D[:, :2])


def test_numpy_fallback_respects_the_densify_limit() -> None:
    big = xp.asarray(sp.random_array((100_000, 100_000), density=1e-7, format="csr", rng=0))
    with pytest.raises(DensifyError, match="numpy.unique"):
        np.unique(big)
    small = xp.asarray(D)
    with set_densify_limit(64):
        with pytest.raises(DensifyError, match="numpy.median"):
            np.median(small)


def test_out_naming_a_lazysparse_array_is_refused() -> None:
    x = xp.asarray(D)
    with pytest.raises(TypeError, match="out="):
        np.cumsum(np.ones(3), out=xp.asarray(np.zeros(3)))  # type: ignore[call-overload]
    assert x.shape == D.shape


def test_ufuncs_without_a_registry_entry_run_in_numpy() -> None:
    x = xp.asarray(np.array([0.5, 1.5, 3.0]))
    np.testing.assert_allclose(ss.gammaln(x), ss.gammaln([0.5, 1.5, 3.0]))
    np.testing.assert_allclose(np.spacing(x), np.spacing([0.5, 1.5, 3.0]))
    np.testing.assert_allclose(np.asarray(np.add(x, [1, 2, 3])), [1.5, 3.5, 6.0])


def test_ufunc_outer_is_lazy_and_sparse() -> None:
    a = xp.asarray(sp.random_array((6, 1), density=0.5, format="csr", rng=1).toarray()[:, 0])
    b = xp.asarray(np.array([1.0, -2.0, 0.0]))
    out = np.multiply.outer(a, b)
    assert isinstance(out, xp.LazyArray)
    np.testing.assert_allclose(np.asarray(out), np.multiply.outer(np.asarray(a), [1, -2, 0]))
    s = xp.asarray(M)
    outer = np.multiply.outer(s[0], s[1])
    assert outer.shape == (20, 20)
    np.testing.assert_allclose(np.asarray(outer), np.multiply.outer(D[0], D[1]))
    np.testing.assert_allclose(np.asarray(np.subtract.outer(np.arange(2.0), b)),
                               np.subtract.outer(np.arange(2.0), [1, -2, 0]))


def test_ufunc_at_refuses_a_lazysparse_target_and_serves_a_numpy_one() -> None:
    x = xp.asarray(np.zeros(3))
    with pytest.raises(TypeError, match=r"numpy\.add\.at.*in place"):
        np.add.at(x, [0, 0], 1.0)
    target = np.zeros(3)
    np.add.at(target, [0, 0, 2], xp.asarray(np.array([1.0, 2.0, 3.0])))
    np.testing.assert_allclose(target, [3.0, 0.0, 3.0])


# --- views ---------------------------------------------------------------------------------

# (lazysparse, NumPy) spellings of what NumPy returns as a view
VIEWS = {
    "row": lambda c, m: c[0],
    "slice": lambda c, m: c[1:, ::2],
    "ellipsis_newaxis": lambda c, m: c[..., None],
    "T": lambda c, m: c.T,
    "mT": lambda c, m: c.mT,
    "permute_dims": lambda c, m: m.permute_dims(c, (1, 0)),
    "reshape": lambda c, m: m.reshape(c, (-1,)),
    "expand_dims": lambda c, m: m.expand_dims(c, axis=0),
    "squeeze": lambda c, m: m.squeeze(c[:1], axis=0),
    "view_of_view": lambda c, m: c[1:][0],
}


def _np_ns() -> object:
    class NS:
        permute_dims = staticmethod(np.transpose)
        reshape = staticmethod(np.reshape)
        expand_dims = staticmethod(np.expand_dims)
        squeeze = staticmethod(np.squeeze)
    return NS


@pytest.mark.parametrize("how", sorted(VIEWS))
@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_a_write_into_a_view_reaches_its_array_as_in_numpy(how: str, fmt: str) -> None:
    base = D[:4, :6].copy()
    c, ref = xp.asformat(xp.asarray(base), fmt), base.copy()
    v, rv = VIEWS[how](c, xp), VIEWS[how](ref, _np_ns())
    key = (0,) * v.ndim
    v[key] = 5.0
    rv[key] = 5.0
    v += 1.0
    rv += 1.0
    np.testing.assert_array_equal(np.asarray(v), rv)
    np.testing.assert_array_equal(np.asarray(c), ref)
    assert xp.asarray(c).dtype == c.dtype


def test_chained_assignment_and_masks_on_views_reach_the_array() -> None:
    c, ref = xp.zeros((2, 3, 3)), np.zeros((2, 3, 3))
    c[0][1] = 3.0
    ref[0][1] = 3.0
    v, rv = c[..., 1], ref[..., 1]
    v[v == 0] = 6.0
    rv[rv == 0] = 6.0
    w, rw = c[1:][0], ref[1:][0]
    w[2] = 4.0
    rw[2] = 4.0
    np.testing.assert_array_equal(np.asarray(c), ref)


def test_add_to_diagonal_of_a_view_like_scikit_learn() -> None:
    """scikit-learn's ``_add_to_diagonal(covariances[k, :, :], reg, xp)`` for non-NumPy
    namespaces: ``array[i, i] += value`` on a view must change ``covariances``."""
    cov, ref = xp.asarray(np.ones((3, 4, 4))), np.ones((3, 4, 4))
    for k in range(3):
        arr, rarr = cov[k, :, :], ref[k, :, :]
        for i in range(4):
            arr[i, i] += 0.5
            rarr[i, i] += 0.5
    np.testing.assert_array_equal(np.asarray(cov), ref)


def test_copies_and_dead_parents_take_writes_alone() -> None:
    c = xp.asarray(D[:4, :6].copy())
    v = xp.asarray(c[0], copy=True)
    v[0] = 9.0
    w = c[[0, 2]]  # advanced indexing copies, in NumPy too
    w[0, 0] = 7.0
    r = xp.reshape(c, (-1,), copy=True)
    r[0] = 1.0
    np.testing.assert_array_equal(np.asarray(c), D[:4, :6])
    orphan = xp.zeros((3, 3))[0]  # nothing else sees the parent
    orphan[1] = 2.0
    np.testing.assert_array_equal(np.asarray(orphan), [0.0, 2.0, 0.0])
    parent = xp.zeros((2, 2))
    row = parent[0]
    del parent
    row[0] = 1.0
    np.testing.assert_array_equal(np.asarray(row), [1.0, 0.0])


def test_a_view_follows_writes_into_its_array_as_in_numpy() -> None:
    """docs/api.md "Views and writes": a view taken before a write into its array reads
    the new values; loops such as ``r = X[i]; X[i] = 2 * r`` work."""
    c, ref = xp.zeros((2, 3, 3)), np.zeros((2, 3, 3))
    v, rv = c[0], ref[0]
    c[0, 0, 0] = 5.0
    ref[0, 0, 0] = 5.0
    c += 1.0
    ref += 1.0
    assert float(c[0, 0, 0]) == 6.0
    np.testing.assert_array_equal(np.asarray(v), rv)
    X = xp.asarray(np.arange(6.0).reshape(3, 2))
    for i in range(3):
        r = X[i]
        X[i] = 2 * r
    np.testing.assert_array_equal(np.asarray(X), 2 * np.arange(6.0).reshape(3, 2))
