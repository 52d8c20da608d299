"""Kernels over the scatter-friendly levels (issue 14), checked against NumPy on the dense
equivalent: unordered compressed (scipy's unsorted CSR), hashed and bytemap levels as inputs
of SpMV, Aᵀx, SpGEMM, add, multiply and reductions, and as the layouts results are asked
for; the optimizer's own choice of an unordered result for scattered writes; sorting only
where a kernel merges."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.formats import Tensor, convert
from lazysparse.formats.levels import Compressed
from tests.conftest import rotation, slow_except

RNG = np.random.default_rng(7)


def shuffled(t: Tensor) -> Tensor:
    """``t`` (2-D, csr) with each row's entries in a random order, as an unordered level."""
    t = convert(t, "csr")
    low = t.levels[1]
    idx, vals = low.idx.copy(), t.values.copy()
    for r in range(t.shape[0]):
        a, b = int(low.ptr[r]), int(low.ptr[r + 1])
        p = RNG.permutation(b - a) + a
        idx[a:b], vals[a:b] = idx[p], vals[p]
    level = Compressed(low.size, low.ptr, idx, ordered=False)
    return Tensor(t.shape, [t.levels[0], level], (0, 1), vals, t.fill_value)


def make(dense: np.ndarray, fmt: str, fill: Any = 0) -> Any:
    """``dense`` stored as ``fmt``: ``unordered`` (shuffled rows), ``hash`` or ``bytemap``."""
    base = xp.asarray(dense, format="csr", fill_value=fill)
    if fmt == "unordered":
        return xp.asarray(shuffled(base.tensor()))
    return xp.asformat(base, fmt)


def sparse_dense(shape: tuple[int, ...], dtype: Any = np.float64, density: float = 0.25,
                 fill: Any = 0) -> np.ndarray:
    """A dense array with about ``density`` of its entries different from ``fill``."""
    vals = RNG.integers(1, 5, size=shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        vals = vals + 1j * RNG.integers(0, 3, size=shape)
    out = np.full(shape, fill, dtype=dtype)
    keep = RNG.random(shape) < density
    out[keep] = vals[keep]
    return out


FORMATS = ("unordered", "hash", "bytemap")

OPS: dict[str, Callable[[Any, Any, Any, Any], Any]] = {
    "spmv": lambda ns, a, b, x: a @ x[: a.shape[1]],
    "atx": lambda ns, a, b, x: a.T @ x,
    "spgemm": lambda ns, a, b, x: a @ b.T,
    "add": lambda ns, a, b, x: a + b,
    "multiply": lambda ns, a, b, x: a * b,
    "scale": lambda ns, a, b, x: a * 3,
    "sum_rows": lambda ns, a, b, x: ns.sum(a, axis=1),
    "sum_cols": lambda ns, a, b, x: ns.sum(a, axis=0),
    "max": lambda ns, a, b, x: ns.max(a, axis=1),
    "chain": lambda ns, a, b, x: ns.sum((a @ b.T) * 2 + a @ b.T, axis=0),
}


# the fast tier: each op with one of the levels in turn (every level among them)
@pytest.mark.parametrize("op, fmt", rotation(list(OPS), FORMATS))
def test_level_as_input(fmt: str, op: str) -> None:
    da, db = sparse_dense((12, 9)), sparse_dense((12, 9))
    x = RNG.random(12)
    got = OPS[op](xp, make(da, fmt), make(db, fmt), xp.asarray(x))
    want = OPS[op](np, da, db, x)
    np.testing.assert_allclose(np.asarray(got), want)


DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64", "complex64", "complex128"]
#: the fast tier's dtypes: bool, a signed and an unsigned int, a float, a complex (each of the
#: three levels among them)
FAST_DTYPES = ("bool", "int64", "uint8", "float32", "complex128")


# every dtype, each with one of the levels in turn (a compile per case: CI time)
@pytest.mark.parametrize(("fmt", "dtype"), slow_except(
    [(FORMATS[k % len(FORMATS)], d) for k, d in enumerate(DTYPES)],
    [(FORMATS[k % len(FORMATS)], d) for k, d in enumerate(DTYPES) if d in FAST_DTYPES]))
def test_dtypes(fmt: str, dtype: str) -> None:
    da, db = sparse_dense((7, 6), dtype), sparse_dense((7, 6), dtype)
    a, b = make(da, fmt), make(db, fmt)
    if dtype == "bool":  # multiply is numeric in the Array API: the logical form
        np.testing.assert_array_equal(np.asarray(xp.logical_and(a, b)), da & db)
    else:
        np.testing.assert_array_equal(np.asarray(a * b), da * db)
    np.testing.assert_array_equal(np.asarray(xp.sum(a, axis=1)), np.sum(da, axis=1))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("fill", [0.0, np.nan, 1.0])
def test_fill_values(fmt: str, fill: float) -> None:
    da, db = sparse_dense((8, 5), fill=fill), sparse_dense((8, 5), fill=fill)
    a, b = make(da, fmt, fill), make(db, fmt, fill)
    np.testing.assert_array_equal(np.asarray(a + b), da + db)
    np.testing.assert_array_equal(np.asarray(a * b), da * db)
    np.testing.assert_array_equal(np.asarray(xp.max(a, axis=0)), np.max(da, axis=0))


@pytest.mark.parametrize("fmt", ["hash", "bytemap", "csr"])
@pytest.mark.parametrize("expr", ["scale", "spgemm", "add"])
def test_level_as_output(fmt: str, expr: str) -> None:
    da, db = sparse_dense((10, 10)), sparse_dense((10, 10))
    a, b = xp.asarray(da, format="csr"), xp.asarray(db, format="csr")
    res = xp.asformat(OPS[expr](xp, a, b, None), fmt)
    t = xp.compute(res).tensor()
    assert t.format == fmt
    np.testing.assert_allclose(t.to_numpy(), OPS[expr](np, da, db, None))


def test_empty_and_one_d() -> None:
    for fmt in ("hash", "bytemap"):
        e = xp.asformat(xp.asarray(np.zeros((4, 0)), format="csr"), fmt)
        assert np.asarray(xp.sum(e, axis=0)).shape == (0,)
        v = sparse_dense((20,))
        x = xp.asformat(xp.asarray(v, format="coo"), fmt)
        np.testing.assert_allclose(np.asarray(x * 2 + x), v * 3)
        np.testing.assert_allclose(float(xp.sum(x)), v.sum())


def test_spgemm_result_is_unordered_and_right() -> None:
    A = sp.random_array((400, 400), density=0.01, format="csr", random_state=3)
    a = xp.asarray(A)
    c = a @ a
    assert "compressed-unordered" in str(xp.explain(c))
    t = xp.compute(c).tensor()
    assert t.spec.level_kinds == ("dense", "compressed-unordered")
    np.testing.assert_allclose(t.to_numpy(), (A @ A).toarray())
    m = xp.to_scipy(c)  # zero-copy, flagged unsorted: scipy sorts where it needs to
    assert m.indices is t.levels[1].idx and not m.has_sorted_indices
    np.testing.assert_allclose((m @ m).toarray(), (A @ A @ A @ A).toarray())
    # canonical format on request
    assert xp.compute(xp.asformat(c, "csr")).tensor().spec.ordered


def test_sorts_only_where_a_merge_needs_order() -> None:
    A = sp.random_array((400, 400), density=0.01, format="csr", random_state=4)
    a = xp.asarray(A)
    c = a @ a  # unordered
    scaled = xp.compute(c * 2).tensor()  # one sparse operand: keeps its order, no sort
    assert scaled.spec.level_kinds[-1] == "compressed-unordered"
    assert "sorts" not in str(xp.explain(c * 2))
    assert "sorts A1 first" in str(xp.explain(c + a))  # A1: the product, made by kernel 1
    added = xp.compute(c + a).tensor()  # a merge: c sorted first, result ordered
    assert added.spec.ordered
    np.testing.assert_allclose(added.to_numpy(), (A @ A + A).toarray())


def test_scipy_unsorted_csr_is_wrapped_without_sorting() -> None:
    A = sp.random_array((30, 30), density=0.2, format="csr", random_state=5)
    B = A.copy()
    for r in range(B.shape[0]):
        a, b = B.indptr[r], B.indptr[r + 1]
        B.indices[a:b], B.data[a:b] = B.indices[a:b][::-1].copy(), B.data[a:b][::-1].copy()
    B.has_sorted_indices = False
    x = xp.asarray(B)
    t = x.tensor()
    assert t.levels[1].idx is not None and not t.spec.ordered
    np.testing.assert_allclose(np.asarray(x @ xp.asarray(np.ones(30))), A @ np.ones(30))
    r = int(np.argmax(np.diff(A.indptr)))  # a row with entries
    for c in range(30):  # element access scans the unordered row
        assert float(x[r, c]) == A.toarray()[r, c]


def test_probe_replaces_merge_for_hashed_operand() -> None:
    da, db = sparse_dense((15, 15)), sparse_dense((15, 15))
    h, c = make(da, "hash"), xp.asarray(db, format="csr")
    text = str(xp.explain(h * c))
    assert "probe" in text and "merge" not in text.split("== 1 kernel")[1].split("source")[0]
    np.testing.assert_allclose(np.asarray(h * c), da * db)


def test_repeated_plan_sorts_new_unordered_operands_each_run() -> None:
    # a loop rebinding its variables: the plan cache replays the first run's recipe, whose
    # kernel read sorted operands; every later run's unordered operands are sorted too
    A = sp.random_array((60, 40), density=0.05, format="csr", rng=1)
    B = sp.random_array((60, 40), density=0.05, format="csr", rng=2).T.tocsr()
    a, b = xp.asarray(A), xp.asarray(B)
    for i in range(3):
        for j in range(2):
            rows, cols = slice(20 * i, 20 * (i + 1)), slice(30 * j, 30 * (j + 1))
            parts = [xp.compute(a[rows, 20 * k:20 * (k + 1)] @ b[20 * k:20 * (k + 1), cols])
                     for k in range(2)]
            assert not parts[0].tensor().spec.ordered
            total = parts[0][..., None, :] + parts[1][..., None, :]
            np.testing.assert_allclose(np.asarray(total)[:, 0], (A[rows] @ B[:, cols]).toarray())


def test_spmspv_push_through_a_hash_workspace() -> None:
    # a 300k-long scattered row touched at a few hundred places: a hash workspace, one pass
    n = 300_000
    rows, cols = RNG.integers(0, n, 3 * n), RNG.integers(0, n, 3 * n)
    A = sp.coo_array((RNG.random(3 * n), (rows, cols)), shape=(n, n)).tocsr()
    idx = np.sort(RNG.choice(n, 50, replace=False))
    x = sp.coo_array((RNG.random(50) + 0.5, (idx,)), shape=(n,))
    y = xp.asarray(A).T @ xp.asarray(x)
    assert "via hashws" in str(xp.explain(y))
    t = xp.compute(y).tensor()
    assert t.spec.level_kinds == ("compressed-unordered",)
    np.testing.assert_allclose(t.to_numpy(), A.T @ x.toarray())


@pytest.mark.slow
def test_hash_workspace_grows_and_matches_dense(monkeypatch: pytest.MonkeyPatch) -> None:
    import lazysparse.kernels.backends.numba.cache as kcache
    import lazysparse.kernels.compile.lowering.workspaces as lws
    import lazysparse.kernels.compile.planning.hash_workspace as hw

    monkeypatch.setattr(hw, "HASH_MIN_BYTES", 0)  # every eligible row hashes
    monkeypatch.setattr(hw, "HASH_RATIO", 0)
    monkeypatch.setattr(lws, "HASH_WS_START", 64)  # a small first table: it must grow
    monkeypatch.setattr(kcache, "memory_get", lambda key: None)  # lowered with that start
    ma = sp.random_array((30, 3000), density=0.002, format="csr", random_state=8)
    mb = sp.random_array((3000, 20000), density=0.015, format="csr", random_state=9)
    for m in (ma, mb):  # small integers times 1+1j: exact complex sums
        m.data = (np.arange(m.data.size) % 7 + 1) * (1 + 1j)
    c = xp.asarray(ma) @ xp.asarray(mb)  # result rows of ~1500 entries: the table grows
    assert "via hashws" in str(xp.explain(c))
    np.testing.assert_allclose(xp.to_scipy(c).toarray(), (ma @ mb).toarray(), rtol=1e-12)
