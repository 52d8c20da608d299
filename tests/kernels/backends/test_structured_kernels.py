"""Kernels over the structured levels of issue 16 (DIA, BSR, ELL, run-length inputs),
checked against NumPy on the dense equivalent: SpMV, Aᵀx, SpGEMM, add, multiply, maps,
reductions; which kernels walk the structure natively (``xp.explain``); which results
keep it (``A * 2`` on DIA stays DIA, sharing the index arrays)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import lazysparse as xp
from lazysparse.formats.conversion.convert import to_structured
from tests.conftest import rotation, slow_except

STRUCTURED = ("dia", "bsr", "ell", "rle")


def banded(n: int, dtype: Any = np.float64, seed: int = 0) -> np.ndarray:
    """A matrix with a few diagonals (one of them partly zero) and a 2x2-block pattern."""
    rng = np.random.default_rng(seed)
    a = np.zeros((n, n), dtype=np.float64)
    for off in (-3, -1, 0, 2):
        k = np.arange(max(0, -off), min(n, n - off))
        a[k, k + off] = rng.integers(1, 5, k.size)
    a[::5, :] = 0  # empty rows
    if n > 4:
        a[2:4, n - 2:] = 7  # a block off the band
    return a.astype(dtype)


def lazy(dense: np.ndarray, fmt: str, fill: Any = 0) -> Any:
    """``dense`` stored in structured format ``fmt`` (bsr with 2x2 blocks)."""
    base = xp.asarray(dense, format="coo", fill_value=fill)
    if fmt == "bsr":
        return xp.asarray(to_structured(base.tensor(), "bsr", blocksize=(2, 2)))
    return xp.asformat(base, fmt)


OPS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "spmv": (lambda a, x: a @ x, lambda d, x: d @ x),
    "spmv_t": (lambda a, x: a.T @ x, lambda d, x: d.T @ x),
    "spgemm": (lambda a, x: a @ a, lambda d, x: d @ d),
    "matmul_dense": (lambda a, x: a @ xp.reshape(x, (-1, 1)), lambda d, x: d @ x[:, None]),
    "add": (lambda a, x: a + a, lambda d, x: d + d),
    "add_transpose": (lambda a, x: a + a.T, lambda d, x: d + d.T),
    "multiply": (lambda a, x: a * a, lambda d, x: d * d),
    "scale": (lambda a, x: a * 2 - 1, lambda d, x: d * 2 - 1),
    "row_scale": (lambda a, x: a * x, lambda d, x: d * x),
    "where": (lambda a, x: xp.where(a > 2, a, 0), lambda d, x: np.where(d > 2, d, 0)),
    "sum_rows": (lambda a, x: xp.sum(a, axis=1), lambda d, x: d.sum(axis=1)),
    "sum_cols": (lambda a, x: xp.sum(a, axis=0), lambda d, x: d.sum(axis=0)),
    "sum": (lambda a, x: xp.sum(a), lambda d, x: d.sum()),
    "max_rows": (lambda a, x: xp.max(a, axis=1), lambda d, x: d.max(axis=1)),
    # a row sum reading dense operands by row and by column (storage-order DIA/BSR loops)
    "weighted_row_sum": (
        lambda a, x: xp.sum(a * (xp.reshape(x, (-1, 1)) - xp.reshape(x, (1, -1))), axis=1),
        lambda d, x: (d * (x[:, None] - x[None, :])).sum(axis=1)),
    "count": (lambda a, x: xp.count_nonzero(a), lambda d, x: np.count_nonzero(d)),
}


# the fast tier: an elementwise op, a reduction, the products and a masked select per level
@pytest.mark.parametrize("fmt", STRUCTURED)
@pytest.mark.parametrize("op", slow_except(sorted(OPS), ["add", "sum_rows", "spmv", "spmv_t",
                                                         "spgemm", "matmul_dense", "where"]))
def test_ops_match_numpy_and_oracle(fmt: str, op: str, monkeypatch: pytest.MonkeyPatch
                                    ) -> None:
    """Compiled kernels and the reference interpreter (the oracle) against NumPy."""
    d = banded(12)
    x = np.arange(12, dtype=np.float64) - 3
    f, ref = OPS[op]
    got = np.asarray(f(lazy(d, fmt), xp.asarray(x)))
    np.testing.assert_allclose(got, ref(d, x))
    monkeypatch.setenv("LAZYSPARSE_EXECUTOR", "reference")
    oracle = np.asarray(f(lazy(d, fmt), xp.asarray(x)))
    np.testing.assert_allclose(oracle, ref(d, x))


# the fast tier: one of bool, int64 and complex128 per level, in turn
@pytest.mark.parametrize("fmt, dtype", rotation(STRUCTURED, ["bool", "int64", "complex128"],
                                                slow_choices=["int8", "uint16", "float32"]))
def test_dtypes(fmt: str, dtype: str) -> None:
    d = banded(8, dtype=dtype, seed=3)
    x = np.arange(8).astype(dtype)
    a = lazy(d, fmt)
    if dtype != "bool":  # the standard's matmul is numeric only
        np.testing.assert_array_equal(np.asarray(a @ xp.asarray(x)), d @ x)
        np.testing.assert_array_equal(np.asarray(a * a), d * d)
    else:
        np.testing.assert_array_equal(np.asarray(a & a), d & d)
    np.testing.assert_array_equal(np.asarray(xp.sum(a, axis=1)), d.sum(axis=1))


@pytest.mark.parametrize("fmt", STRUCTURED)
@pytest.mark.parametrize("fill", [np.nan, 1.0])
def test_fill_values(fmt: str, fill: float) -> None:
    d = banded(10)
    d[d == 0] = fill
    a = lazy(d, fmt, fill=fill)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(np.asarray(a + 1), d + 1)
        np.testing.assert_array_equal(np.asarray(xp.max(a, axis=0)), d.max(axis=0))
        np.testing.assert_array_equal(np.asarray(xp.where(a > 2, a, -1.0)),
                                      np.where(d > 2, d, -1.0))


@pytest.mark.parametrize("fmt", STRUCTURED)
def test_empty(fmt: str) -> None:
    d = np.zeros((6, 6))
    a = lazy(d, fmt)
    np.testing.assert_array_equal(np.asarray(a @ xp.ones(6)), np.zeros(6))
    np.testing.assert_array_equal(np.asarray(a * 3), d)


def test_rle_nd_and_other_axis() -> None:
    d = np.repeat(np.arange(24.0).reshape(2, 3, 4) % 5, 3, axis=2)
    a = xp.asformat(xp.asarray(d), "rle")
    np.testing.assert_array_equal(np.asarray(xp.sum(a, axis=1)), d.sum(axis=1))
    np.testing.assert_array_equal(np.asarray(a * xp.asarray(d)), d * d)
    np.testing.assert_array_equal(np.asarray(xp.sum(a, axis=(0, 2))), d.sum(axis=(0, 2)))


@pytest.mark.parametrize("fmt", ["dia", "bsr", "ell", "rle"])
def test_spmv_walks_structure(fmt: str) -> None:
    """SpMV and a map read the structured level as it is; SpGEMM (a sparse append with
    host-side bounds over compressed positions) reads a csr-like copy, and says so."""
    a = lazy(banded(256), fmt)
    x = xp.asarray(np.ones(256))
    assert "as csr-like" not in str(xp.explain(a @ x))
    assert "as csr-like" not in str(xp.explain(a * 2))
    assert "reads A0 as csr-like" in str(xp.explain(a @ a)).replace("A0, A0", "A0")


@pytest.mark.parametrize("fmt", ["dia", "bsr", "ell", "rle"])
def test_maps_keep_structure(fmt: str) -> None:
    d = banded(64)
    a = lazy(d, fmt)
    src = xp.compute(a).tensor()
    row = np.arange(64.0)
    cases = ((a * 2, d * 2, fmt), (-a, -d, fmt),
             (xp.where(a > 2, a, 0), np.where(d > 2, d, 0), fmt),
             # a run holds one value: R * x, varying along the run, is not run-length
             (a * xp.asarray(row), d * row, "csr" if fmt == "rle" else fmt))
    for expr, want, kept in cases:
        res = xp.compute(expr)
        assert res.format == kept
        np.testing.assert_array_equal(np.asarray(res), want)
        if fmt == "rle":  # the run-length executor lays out fresh runs
            continue
        out = res.tensor()
        name = next(iter(src.levels[-1].arrays()))
        assert np.shares_memory(out.levels[-1].arrays()[name], src.levels[-1].arrays()[name])


def test_dia_plus_dia_stays_dia() -> None:
    """Two DIAs with different diagonals: written csr-like, laid out as DIA again."""
    d1, d2 = banded(20, seed=1), np.diag(np.arange(1.0, 20), 5)[:20, :20]
    res = xp.compute(lazy(d1, "dia") + lazy(d2, "dia"))
    assert res.format == "dia"
    np.testing.assert_array_equal(np.asarray(res), d1 + d2)


def test_loop_rebinding_dia() -> None:
    """A user's Jacobi-style loop: rebinds, float() each iteration, scipy input."""
    sp = pytest.importorskip("scipy.sparse")
    n = 40
    m = sp.diags([-1.0, 4.0, -1.0], [-1, 0, 1], shape=(n, n), format="dia")
    a = xp.asarray(m)
    b = np.ones(n)
    x = xp.zeros(n)
    xs = np.zeros(n)
    for _ in range(5):
        r = xp.asarray(b) - a @ x
        rs = b - m @ xs
        assert float(xp.linalg.vector_norm(r)) == pytest.approx(np.linalg.norm(rs))
        x = x + r / 4.0
        xs = xs + rs / 4.0
    np.testing.assert_allclose(np.asarray(x), xs)


@pytest.mark.parametrize(("fmt", "order"), [("dia", "diagonal-major"),
                                            ("bsr", "block-row-major")])
def test_row_sums_walk_storage_order(fmt: str, order: str,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """``A @ x`` on DIA/BSR walks the storage's own order (``xp.explain`` says which);
    chunks of rows that split a block row or a diagonal still give scipy's answer."""
    sp = pytest.importorskip("scipy.sparse")
    from lazysparse.kernels.backends.numba import cpu_host

    n = 3 * 701
    rng = np.random.default_rng(5)
    if fmt == "dia":
        m = sp.diags([rng.random(n - 4), rng.random(n), rng.random(n - 1)], [-4, 0, 1],
                     format="dia")
    else:
        m = sp.random_array((n, n), density=0.002, random_state=6).tobsr(blocksize=(3, 3))
    a = xp.asarray(m)
    x = rng.random(n)
    assert order in str(xp.explain(a @ xp.asarray(x)))
    monkeypatch.setattr(cpu_host, "chunk_count", lambda *args: 7)
    for _ in range(2):  # a loop computing each iteration, as users write it
        y = a @ xp.asarray(x)
        np.testing.assert_allclose(np.asarray(y), m @ x)
        x = x * 0.5


def test_dia_transpose_product_walks_diagonals(monkeypatch: pytest.MonkeyPatch) -> None:
    """``A.T @ x`` on DIA scatters diagonal by diagonal, also split into chunks that
    reduce into partials."""
    sp = pytest.importorskip("scipy.sparse")
    from lazysparse.kernels.backends.numba import cpu_host

    n = 5003
    rng = np.random.default_rng(8)
    m = sp.diags([rng.random(n - 7), rng.random(n), rng.random(n - 2)], [-7, 0, 2],
                 format="dia")
    a, x = xp.asarray(m), rng.random(n)
    assert "diagonal-major" in str(xp.explain(a.T @ xp.asarray(x)))
    np.testing.assert_allclose(np.asarray(a.T @ xp.asarray(x)), m.T @ x)
    monkeypatch.setattr(cpu_host, "chunk_count", lambda *args: 3)
    np.testing.assert_allclose(np.asarray(a.T @ xp.asarray(x)), m.T @ x)
