"""Per-call cost (issue 23 item 4): a repeated expression shape with new data reuses its
cached plan and recipe, and still computes the new data's values (checked against NumPy);
the caches on that path are bounded; the fast paths of keys, tensors and scalars keep the
general paths' results and errors."""

from __future__ import annotations

import gc
import math
import weakref

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.api.building.lazy_plans import stored_bound
from lazysparse.engine import plan_cache
from lazysparse.formats import Tensor
from lazysparse.formats.dtypes import normalize_fill
from lazysparse.formats.levels import Compressed, Dense
from lazysparse.formats.validation.inputs import as_values_array, check_shape
from lazysparse.logic.dtypes import scalar_as
from lazysparse.logic.nodes import Table, _scalar_key
from lazysparse.logic.operator_registry import _aggregate_dtype
from lazysparse.logic.operators import aggregate_dtype, get_operator
from lazysparse.logic.structural_key import scalar_kind
from lazysparse.logic.traversal import walk


@pytest.fixture(autouse=True)
def compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAZYSPARSE_EXECUTOR", raising=False)
    plan_cache.clear_plan_cache()


def _stats() -> tuple[int, int]:
    return plan_cache.STATS["hits"], plan_cache.STATS["misses"]


def _dense(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith("complex"):
        return (rng.random(shape) + 1j * rng.random(shape)).astype(dtype)
    if dtype.startswith("int"):
        return rng.integers(-5, 6, shape).astype(dtype)
    return rng.random(shape).astype(dtype)


@pytest.mark.parametrize("dtype", ["bool", "int64", "float32", "float64", "complex128"])
@pytest.mark.parametrize("shape", [(), (7,), (4, 5), (0,)])
def test_repeated_shape_hits_the_cache_with_new_values(dtype: str, shape: tuple[int, ...]
                                                       ) -> None:
    rng = np.random.default_rng(0)
    results = []
    h0, m0 = _stats()
    for _ in range(4):  # new data of the same shape, dtype and layout each time
        a, b = _dense(rng, shape, dtype), _dense(rng, shape, dtype)
        x, y = xp.asarray(a), xp.asarray(b)
        got = np.asarray(xp.compute(x * y if dtype == "bool" else x + y))
        want = a * b if dtype == "bool" else a + b
        np.testing.assert_array_equal(got, want)
        results.append(got)
    h1, m1 = _stats()
    if shape == ():  # computed 0-d operands fold at once (api.building.elementwise.scalar_now)
        assert m1 - m0 == 0 and h1 - h0 == 0
    else:
        assert m1 - m0 == 1 and h1 - h0 == 3  # one optimization, then the cached plan
    if math.prod(shape) > 1:  # each call read its own data, not the first call's
        assert not all(np.array_equal(results[0], r) for r in results[1:])


@pytest.mark.parametrize("fill", [0.0, 1.0, np.nan])
def test_repeated_sparse_shape_with_new_patterns_and_fills(fill: float) -> None:
    rng = np.random.default_rng(1)
    h0, m0 = _stats()
    for seed in range(3):
        m = sp.random_array((30, 40), density=0.1, format="csr", rng=seed)
        m.data[:] = rng.random(m.nnz)
        dense = m.toarray()
        dense[m.toarray() == 0] = fill
        x = xp.asarray(dense, format="csr", fill_value=fill)
        assert x.tensor().nnz == m.nnz  # the fill-valued entries are not stored
        y = xp.sum(x * 2.0, axis=1)
        np.testing.assert_allclose(np.asarray(y), np.sum(dense * 2.0, axis=1))
        z = float(xp.sum(x * 3.0))
        np.testing.assert_allclose(z, float(np.sum(dense * 3.0)))
    h1, m1 = _stats()
    assert m1 - m0 <= 2 and h1 - h0 >= 4  # the two shapes, then hits


def test_scalar_parameters_change_values_not_the_plan() -> None:
    v = np.random.default_rng(2).random(50)
    x = xp.asarray(v)
    float(xp.sum(x * 2.0))
    h0, m0 = _stats()
    for c in (3.5, 1e-3, 7.0, -2.25, -4.0):  # a negative constant is a class of its own
        assert float(xp.sum(x * c)) == pytest.approx(float(np.sum(v * c)))
    h1, m1 = _stats()
    assert (h1 - h0, m1 - m0) == (4, 1)
    # special constants are classes of their own: a new plan, still the right value
    assert float(xp.sum(x * 0.0)) == 0.0
    assert float(xp.sum(x * 1.0)) == pytest.approx(float(np.sum(v)))


def test_plan_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_cache, "CAPACITY", 3)
    for n in range(2, 9):  # seven shapes: seven entries offered, three kept
        v = np.arange(n, dtype=np.float64)
        np.testing.assert_array_equal(np.asarray(xp.asarray(v) + 1.0), v + 1.0)
        assert len(plan_cache._CACHE) <= 3
    h0, m0 = _stats()
    np.asarray(xp.asarray(np.arange(2.0)) + 1.0)  # the oldest shape was evicted
    assert _stats()[1] == m0 + 1


def test_leaf_keys_leave_with_their_arrays() -> None:
    """A leaf's key is kept on its node (``Subquery.key_cache``) and holds no reference to
    the array or its tensor: both are collected once the user drops them."""
    arrays = [xp.asarray(np.full(5, float(i))) for i in range(20)]
    for a in arrays:
        np.asarray(a * 2.0)
    assert all(a.expr.key_cache is not None for a in arrays)  # keyed, kept on the leaf
    refs = [weakref.ref(a) for a in arrays] + [weakref.ref(a.tensor()) for a in arrays]
    del arrays, a
    gc.collect()
    assert all(r() is None for r in refs)


def test_leaf_keys_carry_shape_and_density() -> None:
    """The plan cache's data key (cached with a computed array's leaf) holds the shape and
    the density bucket: two arrays of one format but other shapes or densities differ."""
    sparse = sp.random_array((40, 40), density=0.01, format="csr", rng=0)
    dense = sp.random_array((40, 40), density=0.9, format="csr", rng=0)
    small = sp.random_array((20, 40), density=0.01, format="csr", rng=0)
    keys = {plan_cache.input_key(xp.asarray(m).tensor()) for m in (sparse, dense, small)}
    assert len(keys) == 3
    assert plan_cache.input_key(3.0) is None


@pytest.mark.parametrize("val", [2.0, -3.5, 0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf,
                                 1e308, 5e-324, np.float32(1.0000001), np.float16(2.0),
                                 np.float64(-7.0), np.longdouble(3.0)])
def test_const_class_fast_path_matches_the_general_rule(val: float) -> None:
    kind, parts = plan_cache.const_class(val)
    x = float(val)
    if math.isnan(x) or math.isinf(x) or x in (0.0, 1.0, -1.0):
        assert parts == (_scalar_key(x), _scalar_key(0.0))
    else:
        assert parts == ("pos" if x > 0 else "neg", _scalar_key(0.0))
    assert kind == scalar_kind(val)


def test_float_of_a_0d_result_is_its_scalar() -> None:
    x = xp.asarray(np.array([1.5, 2.5]))
    assert float(xp.sum(x)) == 4.0 and isinstance(float(xp.sum(x)), float)
    assert int(xp.sum(xp.asarray(np.array([2, 3])))) == 5
    assert bool(xp.sum(xp.asarray(np.array([True, False]))))
    assert complex(xp.sum(xp.asarray(np.array([1j, 2.0])))) == 2 + 1j
    with pytest.raises(TypeError, match="complex"):
        float(xp.sum(xp.asarray(np.array([1j]))))
    with pytest.raises(ValueError):
        int(xp.sum(xp.asarray(np.array([np.nan]))))
    with pytest.raises(TypeError, match="0-d"):
        float(x)


def test_tensor_fast_paths_keep_checks_and_conversions() -> None:
    assert check_shape((3, 4)) == (3, 4)
    assert check_shape([3, np.int64(4)]) == (3, 4)
    with pytest.raises(ValueError, match=">= 0"):
        check_shape((3, -1))
    with pytest.raises(TypeError):
        check_shape((3, True))
    swapped = np.arange(4, dtype=">f8")
    native = as_values_array(swapped)
    assert native.dtype == np.dtype("float64") and native.dtype.isnative
    np.testing.assert_array_equal(native, swapped)
    with pytest.raises(TypeError, match="unsupported dtype"):
        as_values_array(np.array(["a"]))
    f = np.float32(2.5)
    assert normalize_fill(f, np.dtype("float32")) is f
    with pytest.raises(ValueError, match="does not fit"):
        normalize_fill(np.float64(1e300), np.dtype("float32"))
    with pytest.raises(ValueError, match="does not fit"):
        normalize_fill(2.5, np.dtype("int64"))
    # index arrays of two dtypes still unify; one dtype that fits is kept as is
    ptr, idx = np.array([0, 1, 2], dtype=np.int64), np.array([1, 0], dtype=np.int32)
    t = Tensor((2, 3), [Dense(2), Compressed(3, ptr, idx)], (0, 1), np.ones(2), 0.0)
    assert t.index_dtype == np.int32 and t.levels[1].ptr.dtype == np.int32
    idx64 = idx.astype(np.int64)
    t = Tensor((2, 3), [Dense(2), Compressed(3, ptr, idx64)], (0, 1), np.ones(2), 0.0)
    assert t.levels[1].ptr is ptr and t.levels[1].idx is idx64 and t.index_dtype == np.int64
    with pytest.raises(ValueError, match="positions"):
        Tensor((2, 3), [Dense(2), Compressed(3, ptr, idx)], (0, 1), np.ones(3), 0.0)


def test_scalar_as_fast_path() -> None:
    v = np.float64(2.5)
    assert scalar_as(v, np.dtype("float64")) is v
    out = scalar_as(v, np.dtype("float32"))
    assert type(out) is np.float32 and out == 2.5
    with pytest.raises(OverflowError):
        scalar_as(300, np.dtype("int8"))
    with pytest.raises(TypeError):
        scalar_as(np.complex128(1 + 1j), np.dtype("float64"))


def _walked_bound(x: xp.LazyArray) -> int:
    """The largest stored input of ``x``'s history by a walk of every node (the rule
    ``plans.stored_bound`` answers from per-array records)."""
    t = x.result
    if t is not None:
        return int(t.nnz)
    return max((int(getattr(n.tns.val, "nnz", 0)) for n in walk(x.expr)
                if isinstance(n, Table)), default=0)


def test_stored_bound_records_match_a_full_walk() -> None:
    big = xp.asarray(sp.random_array((40, 50), density=0.3, format="csr", rng=0))
    small = xp.asarray(sp.random_array((40, 50), density=0.02, format="csr", rng=1))
    v = xp.asarray(np.ones(50))
    chain = small * 2.0
    cases = [small, small + 1.0, chain, chain + big, xp.sum(chain, axis=1)]
    cases.append(cases[-1] * 3.0)
    cases.append((chain @ v) + xp.sum(big, axis=1))
    computed = xp.compute(small * 5.0)  # a computed array inside a later history
    cases.append(computed + chain)
    inplace = small * 1.0
    inplace += big  # the array's plan is replaced: its record must follow
    cases.append(inplace)
    for x in cases:
        assert stored_bound(x) == _walked_bound(x)
    assert stored_bound(chain + big) == big.tensor().nnz
    assert stored_bound(chain) == small.tensor().nnz
    # a reduction's result dense or sparse follows the bound, as it did
    np.testing.assert_allclose(np.asarray(xp.sum(chain, axis=0)),
                               np.asarray(small).sum(axis=0) * 2.0)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "dense", "hash", "bytemap", "dcsr",
                                 "csf"])
def test_nnz_fast_path_matches_scipy(fmt: str) -> None:
    m = sp.random_array((30, 40), density=0.1, format="csr", rng=3)
    t = xp.asarray(m, format=fmt).tensor()
    assert t.nnz == (30 * 40 if fmt == "dense" else m.nnz)
    np.testing.assert_array_equal(t.to_numpy(), m.toarray())
    assert xp.asarray(np.float64(2.0)).tensor().nnz == 1  # 0-d: its one value


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "logical_or"])
def test_aggregate_dtype_memo_matches_the_rule(name: str) -> None:
    op = get_operator(name)
    for init in (0, 0.0, True, np.int8(0), np.float32(1), np.bool_(False), 0j):
        for d in ("bool", "int8", "int64", "uint32", "float32", "float64", "complex64"):
            try:
                want = _aggregate_dtype(op, init, np.dtype(d))
            except TypeError:
                with pytest.raises(TypeError):
                    aggregate_dtype(op, init, np.dtype(d))
                continue
            assert aggregate_dtype(op, init, np.dtype(d)) == want
            assert aggregate_dtype(op, init, np.dtype(d)) == want  # from the memo
