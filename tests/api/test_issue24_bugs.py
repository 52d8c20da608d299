"""Regressions of issue 24 (bugs met running scipy and xarray on lazysparse), each checked
against NumPy on the dense equivalent."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import lazysparse as xp


def _np_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(np.asarray(k) if isinstance(k, xp.LazyArray) else k for k in key)


_ELLIPSIS_KEYS = [
    (xp.asarray([0, 2]), ...),
    (np.array([0, 2]), ...),
    ([0, 2], ...),
    (..., xp.asarray([0, 3])),
    (..., np.array([3, 0, 3])),
    (0, ..., xp.asarray([1, 2])),
    (xp.asarray([1]), ..., 2),
    (np.array([True, False, True]), ...),
    (..., xp.asarray([True, False, False, True])),
    (xp.asarray(np.zeros(3, bool)), ...),
    (xp.asarray([], dtype=xp.int64), ...),
    (..., None, xp.asarray([0])),
]


@pytest.mark.parametrize("fmt", ["dense", "coo"])
@pytest.mark.parametrize("key", _ELLIPSIS_KEYS, ids=range(len(_ELLIPSIS_KEYS)))
def test_index_array_with_ellipsis(fmt: str, key: tuple[Any, ...]) -> None:
    """`x[xp.asarray([0, 2]), ...]` used to compare the index array with `==` while
    looking for the ellipsis ("truth value of an array ... is ambiguous")."""
    a = np.where(np.arange(36).reshape(3, 3, 4) % 3 == 0, 0.0, np.arange(36.0).reshape(3, 3, 4))
    x = xp.asarray(a) if fmt == "dense" else xp.asarray(a, format=fmt)
    np.testing.assert_array_equal(np.asarray(x[key]), a[_np_key(key)])


@pytest.mark.parametrize("key", _ELLIPSIS_KEYS[:8], ids=range(8))
def test_setitem_index_array_with_ellipsis(key: tuple[Any, ...]) -> None:
    a = np.arange(36.0).reshape(3, 3, 4)
    x = xp.asarray(a)
    x[key] = -1.0
    a[_np_key(key)] = -1.0
    np.testing.assert_array_equal(np.asarray(x), a)


def test_two_ellipses_still_an_index_error() -> None:
    with pytest.raises(IndexError):
        xp.asarray(np.ones((2, 2)))[..., xp.asarray([0]), ...]


def _concat_cases(p: Any) -> list[tuple[Any, ...]]:
    return [(p, p + 1.0), (p + 1.0, p), (p * 2.0, p - 1.0), (p, p), (p[:, :1] + 1.0, p)]


@pytest.mark.parametrize("axis", [1, -1, 0])
@pytest.mark.parametrize("case", range(5))
def test_concat_of_transposed_dense_operands(axis: int, case: int) -> None:
    """`xp.concat((p, p + 1.0), axis=1)` with `p` a transposed dense array raised
    NormalFormError (ACCESS concordance); scipy's cumulative_simpson and savgol_filter."""
    a = np.arange(6.0).reshape(2, 3)
    ops, want_ops = _concat_cases(xp.asarray(a).T)[case], _concat_cases(a.T)[case]
    if axis == 0 and case == 4:
        with pytest.raises(ValueError):
            xp.concat(ops, axis=axis)
        return
    np.testing.assert_array_equal(np.asarray(xp.concat(ops, axis=axis)),
                                  np.concatenate(want_ops, axis=axis))


def test_concat_of_transposed_3d_and_ones() -> None:
    p = xp.asarray(np.ones((2, 3)))
    np.testing.assert_array_equal(np.asarray(xp.concat((p.T, p.T + 1.0), axis=1)),
                                  np.concatenate((np.ones((3, 2)), np.full((3, 2), 2.0)), 1))
    b = np.arange(24.0).reshape(2, 3, 4)
    q = xp.permute_dims(xp.asarray(b), (2, 0, 1))
    bt = b.transpose(2, 0, 1)
    for axis in (0, 1, 2):
        np.testing.assert_array_equal(np.asarray(xp.concat((q, q * 2.0 + 1.0), axis=axis)),
                                      np.concatenate((bt, bt * 2.0 + 1.0), axis=axis))


_POW_CASES = [([1, 2], [2, 3]), ([1, 2], [1, 2]), ([0, 3, 5], [1, 2, 1]), ([], [])]


@pytest.mark.parametrize(("base", "exp"), _POW_CASES)
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
def test_integer_power_of_shifted_dense_exponent(base: list[int], exp: list[int],
                                                 dtype: Any) -> None:
    """`xp.asarray([1, 2]) ** (xp.asarray([2, 3]) - 1)` raised at build time: the nominal
    fill `0 ** -1` of dense operands was computed in integers."""
    b, e = np.asarray(base, dtype), np.asarray(exp, dtype)
    got = xp.asarray(b) ** (xp.asarray(e) - 1)
    want = b ** (e - dtype(1))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), want)


def test_integer_power_negative_stored_exponent_raises_as_numpy() -> None:
    with pytest.raises(ValueError, match="negative integer powers"):
        np.asarray([1, 2]) ** np.asarray([-1, 2])
    with pytest.raises(ValueError, match="negative integer powers"):
        np.asarray(xp.asarray([1, 2]) ** xp.asarray([-1, 2]))
    # sparse operands whose implicit regions meet where the exponent's fill is -1
    x = xp.asarray(np.array([[1, 0], [2, 0]]), format="csr")
    y = xp.asarray(np.array([[2, 0], [3, 1]]), format="csr") - 1
    with pytest.raises(ValueError, match="negative integer powers"):
        np.asarray(x ** y)


_FORMATS = [(1.5, "g"), (1.5, ""), (1.5, ".3f"), (3, "x"), (3, "05d"), (True, ""),
            (1 + 2j, ".2f"), (np.float32(0.1), ".10f"), (np.nan, "g"), (-0.0, "+.1e")]


@pytest.mark.parametrize(("value", "spec"), _FORMATS)
def test_format_of_0d_arrays_matches_numpy(value: Any, spec: str) -> None:
    """`format(xp.asarray(1.5), "g")` raised TypeError: a 0-d array formats its scalar."""
    a = np.asarray(value)
    assert format(xp.asarray(a), spec) == format(a, spec)
    assert f"{xp.asarray(a) * 1:{spec}}" == f"{a * 1:{spec}}"


@pytest.mark.parametrize("shape", [(2,), (0,), (2, 3)])
def test_format_of_nd_arrays_matches_numpy(shape: tuple[int, ...]) -> None:
    a = np.arange(float(np.prod(shape))).reshape(shape)
    assert format(xp.asarray(a)) == format(a)
    assert format(xp.asarray(a), "") == str(a)
    with pytest.raises(TypeError):
        format(xp.asarray(a), "g")
    with pytest.raises(TypeError):
        format(a, "g")


_DEEP = (2,) + (1,) * 19 + (2,)  # 21 axes: one loop each, plus the broadcast's


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_, np.complex128])
def test_kernel_of_21_nested_loops_runs(dtype: Any) -> None:
    """A fused kernel of a loop per axis of a 21-d array is more than Python compiles
    ("too many statically nested blocks"): all-dense ones run on NumPy at any size."""
    a = (np.arange(4).reshape(_DEEP) % 3).astype(dtype)
    b = (np.arange(2**21).reshape((2,) * 21) % 5).astype(dtype)
    x, y = xp.asarray(a), xp.asarray(b)
    np.testing.assert_array_equal(np.asarray(x + y), a + b)
    np.testing.assert_array_equal(np.asarray(xp.sum(x * y, axis=(0, 20))),
                                  np.sum(a * b, axis=(0, 20)))
    np.testing.assert_array_equal(np.asarray(xp.sum(x + y)), np.sum(a + b))


def test_sparse_kernel_too_deep_is_a_clear_error() -> None:
    n = 12  # a sparse 12-d operand times a broadcast one: 22 nested loops
    s = xp.asarray(np.ones((2,) * n), format="coo")
    d = xp.asarray(np.ones((2,) + (1,) * (n - 2) + (2,)))
    with pytest.raises(NotImplementedError, match="nested"):
        np.asarray(s * d)
    np.testing.assert_array_equal(np.asarray(s * 2.0), np.full((2,) * n, 2.0))


_SIX = (10, 10, 10, 10, 10, 10)


@pytest.mark.parametrize("kind", ["numpy", "lazy", "compare", "values", "empty"])
def test_boolean_mask_setitem_on_6d_zeros(kind: str) -> None:
    """`x[mask] = v` on a 6-d `xp.zeros` array raised "iterator is too large": the
    coordinate proxy had the product of the mask's nonzero() sizes as its shape."""
    a = np.zeros(_SIX)
    m = np.arange(a.size).reshape(_SIX) % 3 == 0
    if kind == "empty":
        m[...] = False
    x = xp.zeros(_SIX)
    if kind == "compare":
        x[x == 0] = 3.0
        a[a == 0] = 3.0
    elif kind == "values":
        x[xp.asarray(m)] = xp.arange(int(m.sum()), dtype=xp.float64)
        a[m] = np.arange(m.sum())
    else:
        x[xp.asarray(m) if kind == "lazy" else m] = 2.0
        a[m] = 2.0
    np.testing.assert_array_equal(np.asarray(x), a)
    np.testing.assert_array_equal(np.asarray(x[m]), a[m])


@pytest.mark.parametrize("fmt", ["dense", "coo"])
def test_partial_masks_and_index_arrays_on_6d(fmt: str) -> None:
    shape = (4, 3, 5, 2, 3, 4)
    rng = np.random.default_rng(7)
    a = np.where(rng.random(shape) < 0.3, rng.integers(1, 9, shape), 0).astype(float)
    m3 = rng.random(shape[:3]) < 0.5
    keys = [(m3, ...), (slice(None), m3[0]), (..., np.array([0, 2, 2]), slice(1, 3)),
            (np.array([1, 0]), slice(None), np.array([[4], [2]]), 0),
            (0, slice(None), m3[0, 0], None, np.array([1, 1]))]
    for key in keys:
        b = a.copy()
        x = xp.asarray(a) if fmt == "dense" else xp.asarray(a, format=fmt)
        np.testing.assert_array_equal(np.asarray(x[key]), a[key])
        x[key] = -1.0
        b[key] = -1.0
        np.testing.assert_array_equal(np.asarray(x), b)
