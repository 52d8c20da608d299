"""pydata sparse interop: COO and GCXS, fill values kept, arrays shared."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazysparse.formats import Tensor, convert
from tests.conftest import examples

from .helpers import DTYPES, assert_same, fills_for, random_array

sparse = pytest.importorskip("sparse")


def test_coo_shares_memory_and_keeps_fill() -> None:
    a = random_array((3, 4, 5), 0.3, np.dtype(np.float64), np.nan, seed=2)
    s = sparse.COO.from_numpy(a, fill_value=np.nan)
    t = Tensor.from_pydata(s)
    assert t.format == "coo" and np.isnan(t.fill_value)
    assert np.shares_memory(t.values, s.data)
    assert np.shares_memory(t.levels[2].idx, s.coords)
    assert_same(t.to_numpy(), a)
    back = t.to_pydata()
    assert isinstance(back, sparse.COO) and np.isnan(back.fill_value)
    assert_same(back.todense(), a)


def test_gcxs_2d_shares_memory() -> None:
    a = random_array((6, 4), 0.4, np.dtype(np.int32), 1, seed=5)
    for axis in (0, 1):
        g = sparse.GCXS.from_numpy(a, compressed_axes=(axis,), fill_value=1)
        t = Tensor.from_pydata(g)
        assert t.format == ("csr" if axis == 0 else "csc")
        assert np.shares_memory(t.values, g.data) and t.fill_value == 1
        assert_same(t.to_numpy(), a)
        back = t.to_pydata("gcxs")
        assert isinstance(back, sparse.GCXS) and back.fill_value == 1
        assert_same(back.todense(), a)


def test_nd_gcxs_dok_and_0d() -> None:
    a = random_array((3, 4, 2), 0.4, np.dtype(np.float32), 0, seed=7)
    assert_same(Tensor.from_pydata(sparse.GCXS.from_numpy(a)).to_numpy(), a)
    assert_same(Tensor.from_pydata(sparse.DOK.from_numpy(a)).to_numpy(), a)
    assert_same(Tensor.from_numpy(a, "csf").to_pydata("gcxs").todense(), a)
    z = np.array(2.5)
    assert_same(Tensor.from_pydata(sparse.COO.from_numpy(z)).to_numpy(), z)
    assert_same(Tensor.from_numpy(z).to_pydata().todense(), z)


def test_errors() -> None:
    with pytest.raises(TypeError, match="pydata sparse array"):
        Tensor.from_pydata(np.eye(2))
    with pytest.raises(ValueError, match="'coo' or 'gcxs'"):
        Tensor.from_numpy(np.eye(2), "csr").to_pydata("csr")


@settings(max_examples=examples(25), deadline=None)
@given(
    shape=st.lists(st.integers(0, 5), min_size=1, max_size=3).map(tuple),
    dtype=st.sampled_from(DTYPES),
    data=st.data(),
    target=st.sampled_from(["coo", "csf", "dense"]),
    seed=st.integers(0, 1000),
)
def test_pydata_round_trip_hypothesis(
    shape: tuple[int, ...], dtype: np.dtype, data: st.DataObject, target: str, seed: int
) -> None:
    fill = data.draw(st.sampled_from(fills_for(dtype)))
    a = random_array(shape, 0.3, dtype, fill, seed)
    s = sparse.COO.from_numpy(a, fill_value=fill)
    t = convert(Tensor.from_pydata(s), target)
    back = t.to_pydata()
    assert back.dtype == dtype and back.shape == a.shape
    assert_same(back.todense(), a)
