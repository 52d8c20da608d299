"""xarray DataArrays backed by lazysparse arrays: label selection, groupby reductions,
``where``, ``concat`` and ``dot`` agree with the same DataArrays backed by NumPy, and sparse
data stays sparse (issue 24, item 6)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from tests.conftest import slow_except

xr = pytest.importorskip("xarray")

ROWS = ["a", "b", "c", "d", "e", "f"]
COLS = [10, 10, 20, 20, 30, 40, 40, 50]


def _pair(density: float, seed: int = 0) -> tuple[object, object]:
    """The same labelled 6 x 8 matrix (with an empty row) backed by lazysparse (CSR) and
    by NumPy."""
    m = sp.random_array((6, 8), density=density, format="csr", rng=seed)
    m = sp.csr_array(sp.diags_array([1.0, 1.0, 0.0, 1.0, 1.0, 1.0]) @ m)  # row 2 empty
    m.eliminate_zeros()
    coords = {"row": ROWS, "col": COLS}
    lazy = xr.DataArray(xp.asarray(m), dims=("row", "col"), coords=coords)
    dense = xr.DataArray(m.toarray(), dims=("row", "col"), coords=coords)
    return lazy, dense


def _check(lazy: object, dense: object) -> None:
    assert isinstance(lazy.data, xp.LazyArray)
    assert lazy.dims == dense.dims
    np.testing.assert_allclose(np.asarray(lazy.data), dense.values, equal_nan=True)


@pytest.mark.parametrize("density", [0.0, 0.3, 1.0])
def test_label_selection(density: float) -> None:
    lazy, dense = _pair(density)
    _check(lazy.sel(row=["b", "e", "a"]), dense.sel(row=["b", "e", "a"]))
    _check(lazy.sel(col=20), dense.sel(col=20))
    _check(lazy.sel(row="c"), dense.sel(row="c"))
    _check(lazy.isel(col=[0, 7, 3]), dense.isel(col=[0, 7, 3]))
    _check(lazy.sel(row=slice("b", "d")), dense.sel(row=slice("b", "d")))


def test_selection_keeps_sparse_storage() -> None:
    lazy, _ = _pair(0.2)
    sub = lazy.sel(row=["b", "e"]).data
    assert xp.to_scipy(xp.compute(sub)).nnz == sp.csr_array(
        xp.to_scipy(lazy.data))[[1, 4]].nnz


@pytest.mark.parametrize("how", slow_except(["sum", "max", "mean"], ["mean"]))
def test_groupby_reductions(how: str) -> None:
    lazy, dense = _pair(0.4)
    _check(getattr(lazy.groupby("col"), how)(), getattr(dense.groupby("col"), how)())


def test_where_concat_dot_and_reductions() -> None:
    lazy, dense = _pair(0.4)
    _check(lazy.where(lazy > 0.5), dense.where(dense > 0.5))
    _check(lazy.where(lazy > 0.5, 0.0), dense.where(dense > 0.5, 0.0))
    _check(xr.concat([lazy, lazy * 2], dim="row"), xr.concat([dense, dense * 2], dim="row"))
    _check(xr.dot(lazy, lazy, dim="row"), xr.dot(dense, dense, dim="row"))
    _check(lazy.sum("row"), dense.sum("row"))
    _check(lazy.transpose("col", "row"), dense.transpose("col", "row"))
    assert float(lazy.mean()) == pytest.approx(float(dense.mean()))


def test_sparse_where_keeps_pattern() -> None:
    lazy, dense = _pair(0.2)
    kept = lazy.where(lazy > 0.5, 0.0).data
    expect = np.count_nonzero(dense.where(dense > 0.5, 0.0).values)
    assert xp.to_scipy(xp.compute(kept)).nnz == expect
