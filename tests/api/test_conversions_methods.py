"""Conversion methods of lazysparse arrays (``todense``/``toarray``/``tocsr``/``tocsc``/
``tocoo``/``to_scipy``) and the hint in ``__array__``'s densify error."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.formats import DensifyError, set_densify_limit


@pytest.fixture
def pair() -> tuple[sp.csr_array, object]:
    rng = np.random.default_rng(1)
    a = sp.random_array((6, 5), density=0.3, format="csr", rng=rng)
    a = a.tolil()
    a[2, :] = 0.0  # an empty row
    a = sp.csr_array(a)
    a.eliminate_zeros()
    return a, xp.asarray(a)


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.float32, np.float64, np.complex128])
def test_dense_conversions(dtype) -> None:
    a = sp.csr_array(np.array([[0, 1, 0], [0, 0, 0], [2, 0, 3]]).astype(dtype))
    x = xp.asarray(a)
    for out in (x.todense(), x.toarray()):
        assert isinstance(out, np.ndarray) and out.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(out, a.toarray())


@pytest.mark.parametrize(("method", "cls"), [("tocsr", sp.csr_array), ("tocsc", sp.csc_array),
                                             ("tocoo", sp.coo_array)])
def test_scipy_conversions(pair, method, cls) -> None:
    a, x = pair
    out = getattr(x, method)()
    assert isinstance(out, cls) and out.shape == a.shape and out.dtype == a.dtype
    assert out.nnz == a.nnz
    np.testing.assert_array_equal(out.toarray(), a.toarray())


def test_to_scipy_default_format_and_1d(pair) -> None:
    a, x = pair
    assert x.to_scipy().format == "csr" and x.to_scipy("csc").format == "csc"
    v = xp.asarray(sp.coo_array(np.array([0.0, 2.0, 0.0, 5.0])))
    s = v.to_scipy()
    assert s.format == "coo" and s.shape == (4,) and s.nnz == 2
    np.testing.assert_array_equal(s.toarray(), [0.0, 2.0, 0.0, 5.0])
    np.testing.assert_array_equal(v.tocoo().toarray(), s.toarray())
    with pytest.raises(ValueError, match="'coo' only"):
        v.to_scipy("csr")
    with pytest.raises(ValueError, match="2-D"):
        v.tocsr()


def test_to_scipy_errors() -> None:
    with pytest.raises(ValueError, match="1-D and 2-D"):
        xp.asarray(np.zeros((2, 2, 2))).to_scipy()
    with pytest.raises(ValueError, match="1-D and 2-D"):
        xp.asarray(np.float64(1.0)).to_scipy()
    with pytest.raises(ValueError, match="fill value"):
        (xp.asarray(sp.csr_array(np.eye(2))) + 1.0).tocsr()


def test_densify_error_names_to_scipy(pair) -> None:
    a, x = pair
    with set_densify_limit(64):
        with pytest.raises(DensifyError, match=r"xp\.to_scipy\(x\) or x\.tocsr\(\)"):
            np.asarray(x)
        # large enough that scipy's error message (its repr) does not densify either
        big = xp.asarray(sp.eye_array(200, format="csr"))
        with pytest.raises(ValueError) as info:
            sp.csr_array(big)
        assert isinstance(info.value.__cause__, DensifyError)
        assert "x.tocsr()" in str(info.value.__cause__)
        out = x.tocsr()  # no densify limit: shares the stored arrays
    assert out.nnz == a.nnz


def test_to_pydata_keeps_fill_value() -> None:
    sparse = pytest.importorskip("sparse")
    x = xp.asarray(sp.csr_array(np.array([[0.0, 2.0], [0.0, 0.0]]))) + 1.0  # fill value 1
    out = x.to_pydata()
    assert isinstance(out, sparse.COO) and out.fill_value == 1.0
    np.testing.assert_array_equal(out.todense(), [[1.0, 3.0], [1.0, 1.0]])
    g = xp.asarray(np.zeros((2, 3, 2))).to_pydata("gcxs")
    assert isinstance(g, sparse.GCXS) and g.shape == (2, 3, 2)
    with pytest.raises(ValueError, match="'coo' or 'gcxs'"):
        x.to_pydata("csr")


def test_dense_densify_error_has_no_scipy_hint() -> None:
    x = xp.asarray(np.ones((20, 20)))
    with set_densify_limit(64), pytest.raises(DensifyError) as info:
        np.asarray(x)
    assert "tocsr" not in str(info.value)
