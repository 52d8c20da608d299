"""asarray of every input kind, copy semantics, asformat, to_scipy, DLPack, namespaces."""

from __future__ import annotations

import array_api_compat
import numpy as np
import pytest
import scipy.sparse as sp
import sparse

import lazysparse as xp
from lazysparse import formats


def test_asarray_inputs_and_copy() -> None:
    a = np.arange(6.0).reshape(2, 3)
    shared = xp.asarray(a)
    copied = xp.asarray(a, copy=True)
    a[0, 0] = 100.0
    assert float(shared[0, 0]) == 100.0  # copy=None shares the buffer
    assert float(copied[0, 0]) == 0.0
    assert xp.asarray([[1, 2], [3, 4]]).dtype == np.int64
    assert xp.asarray([1.0, 2]).dtype == np.float64
    assert xp.asarray([True]).dtype == np.bool_
    assert xp.asarray(1j).dtype == np.complex128
    assert xp.asarray([1, 2], dtype=xp.uint8).dtype == np.uint8
    x = xp.asarray(a)
    assert xp.asarray(x) is x
    assert xp.asarray(x, copy=True) is not x
    assert xp.asarray(x, dtype=xp.float32).dtype == np.float32
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray(x, dtype=xp.float32, copy=False)


def test_asarray_sparse_inputs() -> None:
    s = sparse.random((4, 5, 3), density=0.3, random_state=0, fill_value=0.0)
    x = xp.asarray(s)
    assert x.shape == (4, 5, 3) and x.tensor().nnz == s.nnz
    np.testing.assert_allclose(np.asarray(x), s.todense())
    m = sp.csc_array(np.eye(4))
    y = xp.asarray(m)
    assert y.format == "csc"
    t = formats.Tensor.from_numpy(np.eye(3), "csr")
    z = xp.asarray(t)
    assert z.tensor() is t
    assert xp.asarray(t, copy=True).tensor() is not t
    np.testing.assert_array_equal(np.asarray(xp.asarray(t, copy=True)), np.eye(3))


def test_asformat_and_to_scipy() -> None:
    x = xp.asarray(np.diag([1.0, 2.0, 3.0]))
    c = xp.asformat(x, "csr")  # already computed: converted at once
    assert c.format == "csr" and c.tensor().nnz == 3
    lazy = xp.asformat(x * 2, "coo")
    assert lazy.format == "coo" and lazy.result is None
    m = xp.to_scipy(lazy)
    assert sp.issparse(m)
    np.testing.assert_array_equal(m.toarray(), 2 * np.diag([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="2-D"):
        xp.to_scipy(xp.ones(3))


def test_dlpack_roundtrip_and_namespace() -> None:
    x = xp.asarray(np.arange(4, dtype=np.int32)) + 1
    y = np.from_dlpack(x)
    np.testing.assert_array_equal(y, np.arange(4) + 1)
    z = xp.from_dlpack(np.arange(3.0))
    np.testing.assert_array_equal(np.asarray(z), np.arange(3.0))
    assert x.__dlpack_device__() == (1, 0)
    assert array_api_compat.array_namespace(x) is xp
    assert x.__array_namespace__() is xp
    assert x.to_device("cpu") is x and x.device == "cpu"
    info = xp.__array_namespace_info__()
    assert info.capabilities()["boolean indexing"] is True
    assert info.capabilities()["data-dependent shapes"] is True
    assert info.default_dtypes()["indexing"] == np.int64
    assert set(info.dtypes(kind="integral")) == {"int8", "int16", "int32", "int64", "uint8",
                                                  "uint16", "uint32", "uint64"}


def test_namespace_has_the_standard_names() -> None:
    names = ["abs", "add", "arange", "asarray", "astype", "broadcast_to", "can_cast",
             "concat", "e", "empty_like", "eye", "finfo", "flip", "from_dlpack", "full_like",
             "iinfo", "inf", "isdtype", "linspace", "meshgrid", "moveaxis", "nan", "newaxis",
             "pi", "permute_dims", "repeat", "reshape", "result_type", "roll", "squeeze",
             "stack", "take", "take_along_axis", "tile", "tril", "triu", "unstack", "where",
             "zeros_like", "bool", "uint64", "complex64", "clip", "nextafter", "hypot",
             "compute", "asformat", "to_scipy", "random", "clear_cache"]
    missing = [n for n in names if not hasattr(xp, n)]
    assert not missing
    assert xp.newaxis is None and xp.__array_api_version__ == "2024.12"
