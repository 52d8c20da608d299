"""Bad input raises a clear exception of the right type, naming what was wrong."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from lazysparse.formats import (
    Compressed,
    CoordinateError,
    Dense,
    FormatSpec,
    Singleton,
    Tensor,
    convert,
    format_spec,
    random,
)


def _csr(ptr: list[int], idx: list[int], values: list[float], shape: tuple[int, int]) -> Tensor:
    levels = [Dense(shape[0]), Compressed(shape[1], np.array(ptr), np.array(idx))]
    return Tensor(shape, levels, (0, 1), np.array(values, dtype=float), 0.0)


def _coo(rows: list[int], cols: list[int], shape: tuple[int, int] = (3, 3)) -> Tensor:
    n = len(rows)
    levels = [
        Compressed(shape[0], np.array([0, n]), np.array(rows), unique=False),
        Singleton(shape[1], np.array(cols)),
    ]
    return Tensor(shape, levels, (0, 1), np.ones(n), 0.0)


def test_valid_hand_built_csr_and_coo() -> None:
    t = _csr([0, 1, 1, 3], [2, 0, 1], [1.0, 2.0, 3.0], (3, 3))
    assert t.format == "csr" and t.nnz == 3
    np.testing.assert_array_equal(t.to_numpy(), [[0, 0, 1], [0, 0, 0], [2, 3, 0]])
    assert _coo([0, 0, 2], [1, 2, 0]).format == "coo"


def test_coordinates_out_of_range() -> None:
    with pytest.raises(CoordinateError, match="coordinate 3 at position 1 is out of range"):
        _csr([0, 2, 2, 2], [0, 3], [1, 2], (3, 3))
    with pytest.raises(IndexError, match="out of range"):
        _coo([0, 5], [0, 0])
    with pytest.raises(ValueError, match="coordinate -1"):
        _coo([0, 1], [0, -1])
    with pytest.raises(CoordinateError, match="from_coords axis 1: coordinate 7"):
        Tensor.from_coords([[0, 1], [2, 7]], [1.0, 2.0], (2, 3))
    bad = sp.csr_array((np.ones(1), np.array([4]), np.array([0, 1])), shape=(1, 2))
    with pytest.raises(CoordinateError, match="out of range"):
        Tensor.from_scipy(bad)


def test_bad_pointers() -> None:
    with pytest.raises(ValueError, match=r"ptr is not monotone: ptr\[1\]=2 > ptr\[2\]=1"):
        _csr([0, 2, 1, 3], [0, 1, 2], [1, 2, 3], (3, 3))
    with pytest.raises(ValueError, match="ptr must start at 0"):
        _csr([1, 1, 1, 3], [0, 1, 2], [1, 2, 3], (3, 3))
    with pytest.raises(ValueError, match="ptr has length 3, expected 4"):
        _csr([0, 1, 3], [0, 1, 2], [1, 2, 3], (3, 3))
    with pytest.raises(ValueError, match=r"ptr\[-1\]=2 must equal len\(idx\)=3"):
        _csr([0, 1, 2, 2], [0, 1, 2], [1, 2, 3], (3, 3))


def test_unsorted_and_duplicate_coordinates() -> None:
    with pytest.raises(ValueError, match="unsorted coordinates 2, 0"):
        _csr([0, 2, 2, 2], [2, 0], [1, 2], (3, 3))
    with pytest.raises(ValueError, match="duplicate coordinates 1, 1"):
        _csr([0, 2, 2, 2], [1, 1], [1, 2], (3, 3))
    with pytest.raises(
        ValueError, match=r"unsorted coordinates \(1, 0\) then \(0, 2\).*sum_duplicates"
    ):
        _coo([1, 0], [0, 2])
    with pytest.raises(ValueError, match=r"duplicate coordinates \(1, 1\) then \(1, 1\)"):
        _coo([1, 1], [1, 1])
    # a row may end high and the next start low: not an error
    _csr([0, 1, 2, 2], [2, 0], [1, 2], (3, 3))


def test_from_coords_duplicates_and_sum_duplicates() -> None:
    coords = [[2, 0, 2, 1], [1, 1, 1, 0]]
    values = [1.0, 2.0, 3.0, 4.0]
    with pytest.raises(ValueError, match=r"duplicate coordinates \(2, 1\).*sum_duplicates=True"):
        Tensor.from_coords(coords, values, (3, 2), format="csr")
    for fmt in ("csr", "csc", "coo", "csf", "dcsr", "dense"):
        t = Tensor.from_coords(coords, values, (3, 2), format=fmt, sum_duplicates=True)
        np.testing.assert_array_equal(t.to_numpy(), [[0, 2], [4, 0], [0, 4]])
    t = Tensor.from_coords(np.zeros((0, 3), dtype=int), [1, 2, 3], (), sum_duplicates=True)
    assert t.to_numpy() == 6


def test_mismatched_lengths() -> None:
    with pytest.raises(ValueError, match="values has length 2, but the levels have 3 positions"):
        _csr([0, 1, 1, 3], [2, 0, 1], [1.0, 2.0], (3, 3))
    levels = [
        Compressed(3, np.array([0, 2]), np.array([0, 1]), unique=False),
        Singleton(3, np.array([0, 1, 2])),
    ]
    with pytest.raises(ValueError, match="idx has length 3, expected 2"):
        Tensor((3, 3), levels, (0, 1), np.ones(2), 0.0)
    with pytest.raises(ValueError, match="coords\\[1\\] has 1 entries but values has 2"):
        Tensor.from_coords([[0, 1], [0]], [1.0, 2.0], (2, 2))
    with pytest.raises(ValueError, match="needs 2 levels, got 1"):
        Tensor((3, 3), [Dense(3)], (0,), np.ones(3), 0.0)
    with pytest.raises(ValueError, match="level 1 .* has size 4 but stores an axis of length 3"):
        Tensor((3, 3), [Dense(3), Dense(4)], (0, 1), np.ones(12), 0.0)


@pytest.mark.parametrize("dtype", [np.float16, object, "U3", "datetime64[s]", np.longdouble])
def test_unsupported_dtypes(dtype: object) -> None:
    a = np.zeros((2, 2), dtype=dtype)
    with pytest.raises(TypeError, match="unsupported dtype"):
        Tensor.from_numpy(a, "csr")
    with pytest.raises(TypeError, match="unsupported dtype"):
        Tensor((2, 2), [Dense(2), Dense(2)], (0, 1), a.reshape(-1), 0)
    with pytest.raises(TypeError, match="unsupported dtype"):
        random((2, 2), 0.5, dtype=dtype)


def test_index_arrays_must_be_integers() -> None:
    levels = [Dense(2), Compressed(2, np.array([0.0, 1.0, 1.0]), np.array([0.5]))]
    with pytest.raises(TypeError, match="must hold integers, got dtype float64"):
        Tensor((2, 2), levels, (0, 1), np.ones(1), 0)
    with pytest.raises(TypeError, match="levels must be Level objects"):
        Tensor((2,), [np.arange(2)], (0,), np.ones(2), 0)


@pytest.mark.parametrize("shape", [(-1, 2), (3, -5)])
def test_negative_shapes(shape: tuple[int, int]) -> None:
    with pytest.raises(ValueError, match="shape entries must be >= 0"):
        random(shape, 0.1)
    with pytest.raises(ValueError, match="shape entries must be >= 0"):
        Tensor.from_coords([[0], [0]], [1.0], shape)


@pytest.mark.parametrize("shape", [(2.5, 2), ("3",), (True, 2), None])
def test_non_integer_shapes(shape: object) -> None:
    with pytest.raises(TypeError, match="shape"):
        random(shape, 0.1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("dtype", "fill", "why"),
    [
        (np.int8, 300, r"outside \[-128, 127\]"),
        (np.uint8, -1, r"outside \[0, 255\]"),
        (np.int32, 0.5, "not an integer"),
        (np.int64, np.nan, "not an integer"),
        (np.bool_, 2, "bool holds only"),
        (np.float32, 1e300, "overflows float32"),
        (np.float64, 1j, "nonzero imaginary part"),
        (np.float64, "x", "not a number"),
    ],
)
def test_fill_value_must_fit(dtype: type, fill: object, why: str) -> None:
    a = np.zeros((2, 2), dtype=dtype)
    with pytest.raises(ValueError, match=why) as info:
        Tensor.from_numpy(a, "csr", fill_value=fill)
    assert str(info.value).startswith("fill value")


def test_fill_values_that_fit() -> None:
    assert Tensor.from_numpy(np.zeros(2, np.int8), "coo", fill_value=127.0).fill_value == 127
    assert Tensor.from_numpy(np.zeros(2, bool), "coo", fill_value=1).fill_value
    t = Tensor.from_numpy(np.zeros(2, np.float32), "coo", fill_value=np.inf)
    assert t.fill_value == np.inf and t.fill_value.dtype == np.float32
    t = Tensor.from_numpy(np.zeros(2, np.complex64), "coo", fill_value=1 + 2j)
    assert t.fill_value == 1 + 2j


def test_format_errors() -> None:
    a = np.zeros((2, 2, 2))
    with pytest.raises(ValueError, match="'csr' is for 2-D tensors, got ndim=3"):
        Tensor.from_numpy(a, "csr")
    with pytest.raises(ValueError, match="unknown format 'csx'"):
        Tensor.from_numpy(a, "csx")
    with pytest.raises(ValueError, match="not a permutation"):
        Tensor.from_numpy(a, "csf", mode_order=(0, 0, 1))
    with pytest.raises(ValueError, match="use format 'csc'"):
        format_spec("csr", 2, (1, 0))
    with pytest.raises(TypeError, match="expected a lazysparse Tensor"):
        convert(np.eye(2), "csr")
    with pytest.raises(ValueError, match="must follow a compressed-nonunique"):
        FormatSpec("x", ("dense", "singleton"), (0, 1))
    with pytest.raises(ValueError, match="unknown level kind 'sorted-hash'"):
        FormatSpec("x", ("dense", "sorted-hash"), (0, 1))
