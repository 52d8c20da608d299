"""The run-length executor (``backends.run_length``): queries over "rle" operands evaluated a
run (a merged segment) at a time, through the public API, against NumPy on dense arrays."""

from __future__ import annotations

import numpy as np
import pytest

import lazysparse as xp
from lazysparse.kernels.backends import run_length


def piecewise(rng: np.random.Generator, shape: tuple[int, ...], dtype: object = np.float64,
              nvals: int = 4, p_break: float = 0.25, empty_rows: bool = True) -> np.ndarray:
    """A piecewise-constant array along the last axis (runs of a few values, zeros
    included), some rows all zero."""
    vals = rng.integers(0, nvals, shape)
    if shape[-1]:
        brk = rng.random(shape) < p_break
        brk[..., 0] = True
        pos = np.where(brk, np.arange(shape[-1]), 0)
        src = np.maximum.accumulate(pos, axis=-1)
        vals = np.take_along_axis(vals, src, axis=-1)
    if empty_rows and vals.ndim > 1 and vals.shape[0] > 1:
        vals[0] = 0
    d = np.dtype(dtype)
    if d.kind == "f":
        return (vals * 1.5 - 1).astype(d)
    if d.kind == "c":
        return (vals * (1.5 - 0.5j)).astype(d)
    if d.kind == "b":
        return vals > 1
    return vals.astype(d)


def rle(a: np.ndarray, fill: object = None) -> xp.LazyArray:
    if fill is None:
        return xp.asformat(xp.asarray(a), "rle")
    return xp.asarray(a, format="rle", fill_value=fill)


def check(expr: object, expected: object, ran: bool = True) -> None:
    before = run_length.STATS["calls"]
    r = np.asarray(xp.compute(expr))
    e = np.asarray(expected)
    assert r.shape == e.shape
    if r.dtype.kind in "fc":
        np.testing.assert_allclose(r, e.astype(r.dtype), rtol=1e-6, atol=1e-9,
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(r, e.astype(r.dtype))
    assert (run_length.STATS["calls"] > before) == ran


DTYPES = [np.bool_, np.int8, np.int64, np.uint8, np.float32, np.float64, np.complex128]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_reductions(dtype: object) -> None:
    rng = np.random.default_rng(1)
    a = piecewise(rng, (7, 40), dtype)
    x = rle(a)
    check(xp.sum(x), np.sum(a))
    check(xp.sum(x, axis=-1), np.sum(a, axis=-1))
    if np.dtype(dtype).kind not in "bc":
        check(xp.max(x, axis=1), np.max(a, axis=1))
        check(xp.min(x), np.min(a))
    check(xp.any(x, axis=1), np.any(a, axis=1))
    check(xp.all(x), np.all(a))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_elementwise(dtype: object) -> None:
    rng = np.random.default_rng(2)
    a = piecewise(rng, (6, 33), dtype)
    m = piecewise(rng, (6, 33), np.bool_, p_break=0.1)
    x, mx = rle(a), rle(m)
    if np.dtype(dtype).kind != "b":
        check(x * 2 + 1, a * 2 + 1)
        check(xp.where(mx, x, 0), np.where(m, a, 0))
        check(xp.sum(xp.where(mx, x, 0), axis=-1), np.sum(np.where(m, a, 0), axis=-1))
    if np.dtype(dtype).kind not in "bc":
        check(x > 1, a > 1)
    check(x == a.flat[5], a == a.flat[5])
    check(xp.asformat(x != 0, "rle"), a != 0)


def test_two_operands_merge_boundaries() -> None:
    rng = np.random.default_rng(3)
    a = piecewise(rng, (9, 120))
    b = piecewise(rng, (9, 120), p_break=0.05)
    m = piecewise(rng, (9, 120), np.float64, nvals=2, p_break=0.1) > 0
    mf = m.astype(np.float64)
    x, y, mx, mfx = rle(a), rle(b), rle(m), rle(mf)
    check(xp.sum(x * mfx), np.sum(a * mf))
    check(xp.sum(x * mfx, axis=-1), np.sum(a * mf, axis=-1))
    check(x + y, a + b)
    check(x * y - 1, a * b - 1)
    check(xp.maximum(x, y), np.maximum(a, b))
    check(xp.max(x + y, axis=-1), np.max(a + b, axis=-1))
    check(xp.where(mx, x, y), np.where(m, a, b))
    check(xp.sum(xp.where(mx, x, y)), np.sum(np.where(m, a, b)))
    check(xp.asformat(x * y, "rle"), a * b)


@pytest.mark.parametrize("fill", [0.0, np.nan, 1.0])
def test_fill_values(fill: float) -> None:
    rng = np.random.default_rng(4)
    a = piecewise(rng, (5, 50))
    a[1, 10:30] = fill
    b = piecewise(rng, (5, 50), p_break=0.1)
    x, y = rle(a, fill), rle(b, fill)
    np.testing.assert_array_equal(np.asarray(xp.compute(x)), a)
    check(xp.sum(x, axis=-1), np.sum(a, axis=-1))
    check(xp.sum(x), np.sum(a))
    check(xp.max(x, axis=-1), np.max(a, axis=-1))
    check(x * 2 + 1, a * 2 + 1)
    check(x + y, a + b)
    check(xp.asformat(x + y, "rle"), a + b)
    check(xp.sum(x + y, axis=1), np.sum(a + b, axis=1))


def test_mean_epilogue_and_result_layout() -> None:
    rng = np.random.default_rng(5)
    a = piecewise(rng, (6, 30))
    x = rle(a)
    check(xp.mean(x, axis=-1), np.mean(a, axis=-1))
    r = xp.compute(xp.asformat(x * 3, "rle"))
    assert r.format == "rle"
    np.testing.assert_allclose(np.asarray(r), a * 3)
    # runs of equal value stay one run (4 distinct values: few runs)
    t = r.tensor()
    assert t.levels[-1].idx.size == x.tensor().levels[-1].idx.size


def test_integer_overflow_and_product() -> None:
    a = np.zeros((3, 300), np.int8)
    a[1, :] = 100
    a[2, 50:250] = -7
    x = rle(a)
    check(xp.sum(x, axis=-1), np.sum(a, axis=-1))
    check(xp.sum(x, dtype=xp.int8), np.sum(a, dtype=np.int8))
    b = np.ones((2, 20), np.int64)
    b[0, 3:9] = 3
    b[1, 5:15] = -2
    check(xp.prod(rle(b, 1), axis=-1), np.prod(b, axis=-1))
    f = np.ones((2, 20))
    f[0, 3:9] = 1.5
    check(xp.prod(rle(f, 1.0)), np.prod(f))


def test_empty_and_zero_size() -> None:
    z = np.zeros((4, 10))
    check(xp.sum(rle(z), axis=-1), np.zeros(4))
    check(rle(z) + 1, z + 1)
    for shape in [(3, 0), (0, 5), (0, 0)]:
        a = np.zeros(shape)
        check(xp.sum(rle(a), axis=-1), np.sum(a, axis=-1))
        check(rle(a) * 2, a * 2)
        check(xp.max(rle(a, -1.0), axis=-1, initial=-5) if False else xp.sum(rle(a)),
              np.sum(a))


def test_1d_and_3d() -> None:
    rng = np.random.default_rng(6)
    v = piecewise(rng, (200,))
    check(xp.sum(rle(v)), np.sum(v))
    check(rle(v) * 2 + 1, v * 2 + 1)
    a = piecewise(rng, (3, 4, 25))
    b = piecewise(rng, (3, 4, 25), p_break=0.1)
    x, y = rle(a), rle(b)
    check(xp.sum(x, axis=-1), np.sum(a, axis=-1))
    check(xp.sum(x, axis=(0, 2)), np.sum(a, axis=(0, 2)))
    check(xp.sum(x * y), np.sum(a * b))
    check(xp.max(x + y, axis=2), np.max(a + b, axis=2))
    check(x - y, a - b)


def test_ineligible_go_to_kernels() -> None:
    rng = np.random.default_rng(7)
    a = piecewise(rng, (8, 8))
    x = rle(a)
    check(xp.sum(x, axis=0), np.sum(a, axis=0), ran=False)  # leading axis only
    check(x + xp.asarray(a), a + a, ran=False)  # a dense operand along the runs
    check(x + x.T, a + a.T, ran=False)  # read across its runs


def test_dense_operands_constant_along_runs() -> None:
    rng = np.random.default_rng(8)
    a = piecewise(rng, (6, 40))
    x = rle(a)
    check(x * xp.asarray(np.float64(2.5)), a * 2.5)  # a 0-d dense operand
    check(x.T * 2, a.T * 2)  # a transposed result: the operand still read along its runs


def test_mixed_fills_and_random_runs() -> None:
    rng = np.random.default_rng(9)
    for trial in range(3):
        a = piecewise(rng, (5, 64), p_break=0.3)
        b = piecewise(rng, (5, 64), p_break=0.08)
        m = piecewise(rng, (5, 64), np.bool_, p_break=0.2)
        x, y, mx = rle(a, 0.0), rle(b, 1.0), rle(m)
        check(x + y, a + b)
        check(x * y, a * b)
        check(xp.sum(x * y, axis=-1), np.sum(a * b, axis=-1))
        check(xp.where(mx, y, x), np.where(m, b, a))
        check(xp.min(xp.where(mx, y, x) - trial), np.min(np.where(m, b, a) - trial))
