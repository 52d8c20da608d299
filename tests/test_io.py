"""lazysparse.io: Matrix Market and npz round trips."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lazysparse import io
from lazysparse.formats import Tensor, convert, format_spec, random
from tests.formats.helpers import DTYPES, assert_same, fills_for, random_array


class _Wrapper:
    """Stands in for LazyArray: anything with __lazysparse_tensor__()."""

    def __init__(self, t: Tensor) -> None:
        self._t = t

    def __lazysparse_tensor__(self) -> Tensor:
        return self._t


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_npz_round_trips_every_format_dtype_and_fill(tmp_path: Path, dtype: np.dtype) -> None:
    for fill in fills_for(dtype):
        a = random_array((4, 5), 0.4, dtype, fill, seed=1)
        specs = [format_spec(f, 2) for f in ("dense", "csr", "csc", "coo", "csf", "dcsr")]
        specs.append(format_spec("coo", 2, (1, 0)))
        for spec in specs:
            t = Tensor.from_numpy(a, spec, fill)
            path = tmp_path / "t.npz"
            io.save_npz(path, _Wrapper(t))
            u = io.load_npz(path)
            assert u.spec == t.spec and u.shape == t.shape and u.dtype == t.dtype
            assert u.index_dtype == t.index_dtype
            assert u.fill_value.dtype == dtype
            assert_same(np.asarray(u.fill_value), np.asarray(t.fill_value))
            assert_same(u.to_numpy(), a)


def test_npz_nd_0d_and_empty(tmp_path: Path) -> None:
    for t in (
        random((3, 4, 5), 0.2, format="csf", mode_order=(1, 2, 0), seed=2),
        Tensor.from_numpy(np.array(3.5)),
        random((0, 4), 0.5, format="coo"),
    ):
        io.save_npz(tmp_path / "x.npz", t)
        assert_same(io.load_npz(tmp_path / "x.npz").to_numpy(), t.to_numpy())


def test_npz_rejects_other_archives(tmp_path: Path) -> None:
    np.savez(tmp_path / "other.npz", a=np.arange(3))
    with pytest.raises(ValueError, match="not a lazysparse tensor archive"):
        io.load_npz(tmp_path / "other.npz")


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.complex128], ids=str)
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "dense"])
def test_mtx_round_trip(tmp_path: Path, dtype: type, fmt: str) -> None:
    a = random_array((6, 4), 0.4, np.dtype(dtype), 0, seed=4)
    t = Tensor.from_numpy(a, fmt)
    io.write_mtx(tmp_path / "m.mtx", t)
    u = io.read_mtx(tmp_path / "m.mtx")
    assert u.format == ("dense" if fmt == "dense" else "coo")
    assert_same(u.to_numpy(), a)
    io.write_mtx(str(tmp_path / "w.mtx"), _Wrapper(convert(t, "csr")))
    assert_same(io.read_mtx(tmp_path / "w.mtx").to_numpy(), a)


def test_mtx_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="scipy.sparse has no fill values"):
        io.write_mtx(tmp_path / "x.mtx", Tensor.from_numpy(np.ones((2, 2)), "csr", np.nan))
    with pytest.raises(ValueError, match="2-D"):
        io.write_mtx(tmp_path / "x.mtx", random((2, 2, 2), 0.5))
    with pytest.raises(TypeError, match="expected a lazysparse Tensor"):
        io.save_npz(tmp_path / "x.npz", np.eye(2))


@pytest.mark.parametrize("fmt", ["unordered", "hash", "bytemap"])
def test_scatter_friendly_layouts_round_trip_npz_and_pickle(tmp_path: Path, fmt: str) -> None:
    import pickle

    import scipy.sparse as sps

    import lazysparse as xp

    A = sps.random_array((200, 200), density=0.02, format="csr", random_state=1)
    a = xp.asarray(A)
    x = a @ a if fmt == "unordered" else xp.asformat(a, fmt)
    t = xp.compute(x).tensor()
    assert fmt != "unordered" or not t.spec.ordered
    io.save_npz(tmp_path / "t.npz", t)
    back = io.load_npz(tmp_path / "t.npz")
    assert back.spec == t.spec
    np.testing.assert_array_equal(back.to_numpy(), t.to_numpy())
    y = pickle.loads(pickle.dumps(x))
    assert y.tensor().spec == t.spec
    np.testing.assert_array_equal(np.asarray(y), t.to_numpy())
