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


def _structured_tensors() -> list[Tensor]:
    """dia (its own and scipy's band length), bsr (a chosen and a given block shape), ell
    and rle (2-D, n-d in another mode order, empty)."""
    import scipy.sparse as sps

    from lazysparse.formats.conversion.convert import to_structured

    a = random_array((6, 8), 0.4, np.dtype(np.float64), 0, seed=2)
    a[2, 1:6] = 3.0
    wide = sps.dia_array((np.arange(1.0, 19.0).reshape(2, 9), [-1, 2]), shape=(6, 8))
    c = random_array((3, 4, 5), 0.3, np.dtype(np.int16), 0, seed=3)
    c[0, 1, :] = 7
    return [
        Tensor.from_numpy(a, "dia"),
        Tensor.from_scipy(wide),
        Tensor.from_numpy(a, "bsr"),
        to_structured(Tensor.from_numpy(a, "csr"), "bsr", blocksize=(2, 4)),
        Tensor.from_numpy(a, "ell"),
        Tensor.from_numpy(a, "rle"),
        Tensor.from_numpy(c, "ell", mode_order=(2, 0, 1)),
        Tensor.from_numpy(c, "rle", mode_order=(1, 2, 0)),
        Tensor.from_numpy(np.zeros((0, 4)), "ell"),
        Tensor.from_numpy(np.zeros((4, 0)), "dia"),
    ]


def _assert_same_layout(u: Tensor, t: Tensor) -> None:
    from lazysparse.formats.levels import level_attrs

    assert u.spec == t.spec and u.shape == t.shape and u.dtype == t.dtype
    for lu, lt in zip(u.levels, t.levels, strict=True):
        assert type(lu) is type(lt) and lu.size == lt.size
        assert level_attrs(lu) == level_attrs(lt)
        assert lu.arrays().keys() == lt.arrays().keys()
        for name, arr in lt.arrays().items():
            assert_same(lu.arrays()[name], arr)
    assert_same(u.values, t.values)
    assert_same(u.to_numpy(), t.to_numpy())


def test_structured_levels_round_trip_npz_and_pickle(tmp_path: Path) -> None:
    import pickle

    import lazysparse as xp

    for k, t in enumerate(_structured_tensors()):
        io.save_npz(tmp_path / f"s{k}.npz", t)
        _assert_same_layout(io.load_npz(tmp_path / f"s{k}.npz"), t)
        _assert_same_layout(pickle.loads(pickle.dumps(t)), t)
        x = pickle.loads(pickle.dumps(xp.asarray(t)))
        assert x.format == t.format
        _assert_same_layout(x.tensor(), t)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.float32, np.complex128],
                         ids=str)
@pytest.mark.parametrize("fmt", ["dia", "bsr", "ell", "rle"])
def test_structured_npz_dtypes_and_fills(tmp_path: Path, fmt: str, dtype: type) -> None:
    for fill in fills_for(np.dtype(dtype))[:3]:
        a = random_array((4, 6), 0.5, np.dtype(dtype), fill, seed=5)
        t = Tensor.from_numpy(a, fmt, fill)
        io.save_npz(tmp_path / "t.npz", t)
        u = io.load_npz(tmp_path / "t.npz")
        _assert_same_layout(u, t)
        assert_same(np.asarray(u.fill_value), np.asarray(t.fill_value))
        assert_same(u.to_numpy(), a)


def test_structured_npz_missing_or_bad_attr(tmp_path: Path) -> None:
    t = Tensor.from_numpy(np.eye(4), "bsr")
    io.save_npz(tmp_path / "t.npz", t)
    with np.load(tmp_path / "t.npz") as f:
        arrays = dict(f)
    assert arrays["attr1_block"].tolist() == list(t.levels[1].block)
    del arrays["attr1_block"]
    np.savez(tmp_path / "missing.npz", **arrays)
    with pytest.raises(ValueError, match="has no array 'attr1_block'"):
        io.load_npz(tmp_path / "missing.npz")
    arrays["attr1_block"] = np.array(2)
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match="'attr1_block' .* must be a pair of integers"):
        io.load_npz(tmp_path / "bad.npz")
    arrays["attr1_block"] = np.array([3, 3])  # does not divide (4, 4): checked on load
    np.savez(tmp_path / "wrong.npz", **arrays)
    with pytest.raises(ValueError, match="does not divide the shape"):
        io.load_npz(tmp_path / "wrong.npz")


def test_scipy_dia_and_bsr_npz_load_as_structured(tmp_path: Path) -> None:
    import scipy.sparse as sps

    a = random_array((6, 6), 0.5, np.dtype(np.float64), 0, seed=6)
    for m in (sps.dia_array(a), sps.bsr_array(a, blocksize=(3, 2))):
        sps.save_npz(tmp_path / "m.npz", m)
        t = io.load_npz(tmp_path / "m.npz")
        assert t.format == m.format
        assert_same(t.to_numpy(), a)
