"""Malformed scipy inputs and unreadable ``.npz`` files raise ValueErrors naming the problem
(issue 13, item 6), before scipy's own methods or NumPy's pickle loader see them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse import io
from lazysparse.formats import Tensor
from lazysparse.formats.validation.inputs import CoordinateError

DATA = np.array([1.0, 2.0, 3.0])


def _compressed(kind: str, indices: Any, indptr: Any, data: Any = DATA,
                shape: tuple[int, int] = (3, 3)) -> Any:
    """A scipy csr/csc array or matrix built from raw arrays (scipy checks little)."""
    return getattr(sp, kind)((np.asarray(data), np.asarray(indices), np.asarray(indptr)),
                             shape=shape)


KINDS = ["csr_matrix", "csr_array", "csc_matrix", "csc_array"]
READERS = [Tensor.from_scipy, xp.asarray]


@pytest.mark.parametrize("read", READERS)
@pytest.mark.parametrize("kind", KINDS)
def test_decreasing_indptr_is_named(kind: str, read: Any) -> None:
    m = _compressed(kind, [0, 1, 2], [0, 2, 1, 3])
    axis = "row" if kind.startswith("csr") else "column"
    with pytest.raises(ValueError, match=rf"scipy {kind}: indptr decreases at {axis} 1: "
                                         r"indptr\[1\]=2 > indptr\[2\]=1"):
        read(m)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("indices,indptr,match", [
    ([0, 1, 2], [1, 2, 3, 3], "indptr must start at 0, got 1"),
    ([0, 1, 2], [0, 1, 3, 5], r"indptr\[-1\]=5 but indices has only 3 entries"),
])
def test_other_bad_indptrs_are_named(kind: str, indices: list[int], indptr: list[int],
                                     match: str) -> None:
    m = _compressed(kind, [0, 1, 2], [0, 1, 2, 3])
    m.indices, m.indptr = np.array(indices), np.array(indptr)  # past scipy's constructor
    with pytest.raises(ValueError, match=match):
        Tensor.from_scipy(m)


def test_wrong_indptr_length_and_data_length() -> None:
    m = _compressed("csr_array", [0, 1, 2], [0, 1, 2, 3])
    m.indptr = np.array([0, 1, 3])
    with pytest.raises(ValueError, match=r"indptr has length 3, expected 4 .*3 rows"):
        Tensor.from_scipy(m)
    m = _compressed("csr_array", [0, 1, 2], [0, 1, 2, 3])
    m.data = np.array([1.0, 2.0])
    with pytest.raises(ValueError, match="data has 2 entries but indices has 3"):
        Tensor.from_scipy(m)


def test_index_out_of_range_is_a_coordinate_error() -> None:
    m = _compressed("csc_matrix", [0, 1, 2], [0, 1, 2, 3])
    m.indices = np.array([0, 7, 2])
    with pytest.raises(CoordinateError, match="row index 7 at position 1 is out of range "
                                              "for 3 rows"):
        Tensor.from_scipy(m)


def test_bsr_indptr_is_checked_before_conversion() -> None:
    m = sp.bsr_array(np.arange(16.0).reshape(4, 4), blocksize=(2, 2))
    m.indptr = np.array([0, 2, 1])
    with pytest.raises(ValueError, match="indptr decreases at block row 1"):
        Tensor.from_scipy(m)


def test_unused_storage_past_indptr_is_ignored() -> None:
    """scipy allows index and data arrays longer than ``indptr[-1]``."""
    m = _compressed("csr_array", [0, 1], [0, 1, 1, 2], data=[1.0, 2.0])
    m.indices = np.array([0, 1, 2, 2])
    m.data = np.array([1.0, 2.0, 9.0, 9.0])
    t = Tensor.from_scipy(m)
    np.testing.assert_array_equal(t.to_numpy(), m.toarray())
    assert t.nnz == 2


def test_valid_and_noncanonical_inputs_still_convert() -> None:
    m = _compressed("csr_array", [2, 0, 1], [0, 2, 2, 3])  # unsorted row 0
    np.testing.assert_array_equal(np.asarray(xp.asarray(m)), m.toarray())


# ------------------------------------------------------------------------------- io


def _not_an_archive(why: str) -> str:
    return rf"is not a lazysparse tensor archive .* nor a scipy.sparse .npz file: {why}"


@pytest.mark.parametrize("content", [os.urandom(1000), b"", b"PK\x03\x04" + bytes(50)],
                         ids=["random", "empty", "broken zip"])
def test_load_npz_of_other_bytes(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "x.npz"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=_not_an_archive("the file is not an .npz")):
        io.load_npz(path)


def test_load_npz_of_other_numpy_files(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.arange(3))
    with pytest.raises(ValueError, match=_not_an_archive("it holds one .npy array")):
        io.load_npz(tmp_path / "a.npy")
    np.savez(tmp_path / "b.npz", a=np.arange(3))
    with pytest.raises(ValueError, match=_not_an_archive(r"it holds the arrays \['a'\]")):
        io.load_npz(tmp_path / "b.npz")
    with pytest.raises(FileNotFoundError):
        io.load_npz(tmp_path / "missing.npz")


def _saved(tmp_path: Path) -> dict[str, np.ndarray]:
    t = Tensor.from_scipy(sp.random(5, 4, density=0.5, format="csr", random_state=0))
    io.save_npz(tmp_path / "t.npz", t)
    with np.load(tmp_path / "t.npz") as f:
        return dict(f)


@pytest.mark.parametrize("name", ["level1_idx", "level1_ptr", "values", "shape",
                                  "level_kinds", "fill_value", "mode_order"])
def test_load_npz_with_an_array_missing(tmp_path: Path, name: str) -> None:
    arrays = _saved(tmp_path)
    del arrays[name]
    np.savez(tmp_path / "cut.npz", **arrays)
    with pytest.raises(ValueError, match=f"has no array '{name}'"):
        io.load_npz(tmp_path / "cut.npz")


def test_load_npz_reads_scipy_archives(tmp_path: Path) -> None:
    m = sp.random(5, 4, density=0.5, format="csc", random_state=1)
    sp.save_npz(tmp_path / "s.npz", m)
    t = io.load_npz(tmp_path / "s.npz")
    assert t.format == "csc"
    np.testing.assert_array_equal(t.to_numpy(), m.toarray())


def test_load_npz_of_broken_scipy_archives(tmp_path: Path) -> None:
    sp.save_npz(tmp_path / "s.npz", sp.random(5, 4, density=0.5, format="csc",
                                               random_state=1))
    with np.load(tmp_path / "s.npz") as f:
        arrays = dict(f)
    bad = dict(arrays, indptr=np.array([0, 3, 1, 5, 10]))
    np.savez(tmp_path / "bad.npz", **bad)
    with pytest.raises(ValueError, match=r"bad.npz: scipy csc_matrix: indptr decreases"):
        io.load_npz(tmp_path / "bad.npz")
    del arrays["indices"]
    np.savez(tmp_path / "cut.npz", **arrays)
    with pytest.raises(ValueError, match="scipy.sparse .npz file cannot be read"):
        io.load_npz(tmp_path / "cut.npz")
