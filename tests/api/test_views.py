"""Lazy views: size-1 axes are not loops, basic indexing of a lazy array stays lazy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import lazysparse as xp
from lazysparse.logic.nodes import Aggregate, MapJoin, Subquery, Table
from tests.conftest import examples, slow_except


def _nodes(node, seen=None):
    seen = set() if seen is None else seen
    if id(node) in seen:
        return
    seen.add(id(node))
    yield node
    for name in ("arg", "args", "tns"):
        child = getattr(node, name, None)
        if isinstance(child, tuple):
            for c in child:
                yield from _nodes(c, seen)
        elif child is not None and not isinstance(child, np.ndarray):
            yield from _nodes(child, seen)


def _tables(x) -> list:
    return [n.tns.val for n in _nodes(x.expr) if isinstance(n, Table)]


def _computes(x) -> bool:
    """Whether the array's expression does any work (a mapjoin or aggregate)."""
    return any(isinstance(n, MapJoin | Aggregate) for n in _nodes(x.expr))


def _sparse(seed: int, shape=(7, 5), fmt="csr", dtype=np.float64, density=0.4):
    m = sp.random(*shape, density=density, format=fmt, random_state=seed, dtype=np.float64)
    return sp.csr_array(m).astype(dtype).asformat(fmt)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("spell", ["none", "expand_dims", "reshape"])
def test_unit_axes_of_a_stored_array_are_lazy_views(fmt: str, spell: str) -> None:
    s = xp.asarray(_sparse(0, fmt=fmt))
    if spell == "none":
        v = s[:, None, :]
    elif spell == "expand_dims":
        v = xp.expand_dims(s, axis=1)
    else:
        v = xp.reshape(s, (7, 1, 5))
    # no copy: the view reads the same stored tensor, nothing is computed to build it
    assert v.result is None and v.shape == (7, 1, 5)
    assert len(_tables(v)) == 1 and _tables(v)[0] is s.result and not _computes(v)
    np.testing.assert_array_equal(np.asarray(v), np.asarray(s)[:, None, :])


def test_computing_a_view_of_dense_data_is_a_view() -> None:
    a = xp.asarray(np.arange(12.0).reshape(3, 4))
    v = xp.squeeze(xp.expand_dims(a, axis=(0, 2)), axis=0)
    assert v.shape == (3, 1, 4)
    assert np.shares_memory(v.tensor().values, a.tensor().values)


def test_size_one_axes_are_not_loop_fields() -> None:
    s = xp.asarray(_sparse(1, shape=(400, 300), density=0.01))
    u = xp.asarray(np.random.default_rng(0).random((400, 6)))
    w = xp.asarray(np.random.default_rng(1).random((300, 6)))
    e = xp.sum(s[:, :, None] * u[:, None, :] * w[None, :, :], axis=2)
    (k,) = xp.explain(e).kernels
    assert len(k.loop_order) == 3  # i, j, k: the three None axes are no loops
    want = np.asarray(s) * (np.asarray(u) @ np.asarray(w).T)
    np.testing.assert_allclose(np.asarray(e), want)
    assert xp.compute(e).format == "csr"


def _np_lazy(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a * 2.0 + b


@settings(max_examples=examples(60), deadline=None)
@given(st.data())
def test_basic_indexing_of_a_lazy_array_is_lazy(data: st.DataObject) -> None:
    shape = (6, 5)
    fmt = data.draw(st.sampled_from(["csr", "csc", "coo", "dense"]))
    a_np = _sparse(2, shape=shape).toarray()
    b_np = np.arange(30.0).reshape(shape)
    a = xp.asarray(a_np) if fmt == "dense" else xp.asarray(_sparse(2, shape=shape, fmt=fmt))
    lazy = a * 2.0 + xp.asarray(b_np)

    def component(n: int):
        return data.draw(st.one_of(
            st.integers(-n, n - 1),
            st.builds(slice, st.one_of(st.none(), st.integers(-n - 2, n + 2)),
                      st.one_of(st.none(), st.integers(-n - 2, n + 2)),
                      st.one_of(st.none(), st.sampled_from([1, 2, 3, -1, -2])))))

    key = [component(6), component(5)]
    if data.draw(st.booleans()):
        key.insert(data.draw(st.integers(0, 2)), None)
    key = tuple(key)
    r = lazy[key]
    assert r.result is None  # nothing computed to index it
    np.testing.assert_array_equal(np.asarray(r), _np_lazy(a_np, b_np)[key])


def test_indexing_pushes_down_to_the_stored_inputs() -> None:
    a_sp = _sparse(3, shape=(50, 40))
    a = xp.asarray(a_sp)
    x = xp.asarray(np.arange(40.0))
    row_sums = xp.sum(a * x[None, :], axis=1)
    part = row_sums[10:20]
    assert part.result is None
    # the table read is the selected rows of a, not all of it
    shapes = sorted(t.shape for t in _tables(part))
    assert (10, 40) in shapes and (50, 40) not in shapes
    np.testing.assert_allclose(np.asarray(part), (a_sp @ np.arange(40.0))[10:20])
    row = (a + 1.0)[3]
    assert row.result is None and all(t.shape != (50, 40) for t in _tables(row))
    np.testing.assert_allclose(np.asarray(row), a_sp.toarray()[3] + 1.0)


@pytest.mark.parametrize("fill", [0.0, np.nan, 1.0])
@pytest.mark.parametrize("dtype", slow_except([np.float64, np.int32, np.bool_, np.complex128,
                                                np.uint8], [np.float64, np.int32]))
def test_indexing_lazy_keeps_dtype_and_fill(dtype, fill) -> None:
    rng = np.random.default_rng(4)
    vals = (rng.random((8, 6)) * 10).astype(dtype)
    base = xp.asarray(sp.csr_array(vals * (rng.random((8, 6)) < 0.3)))
    if np.isnan(fill) and np.dtype(dtype).kind not in "fc":
        pytest.skip("NaN fill needs a float dtype")
    lazy = xp.where(base != 0, base, xp.full_like(base, fill))
    r, last = lazy[2:7:2, ::-1], lazy[-1]
    assert r.result is None and last.result is None
    assert r.dtype == last.dtype == lazy.dtype
    ref = np.asarray(lazy)
    np.testing.assert_array_equal(np.asarray(r), ref[2:7:2, ::-1])
    np.testing.assert_array_equal(np.asarray(last), ref[-1])


def test_loop_index_values_are_computed_before_indexing() -> None:
    a = xp.asarray(_sparse(5))
    t = xp.tril(a + 1.0)  # reads the loop indices: a new origin would change it
    np.testing.assert_array_equal(np.asarray(t[2:5, 1]), np.tril(np.asarray(a) + 1.0)[2:5, 1])


def test_empty_and_zero_d_selections() -> None:
    lazy = xp.asarray(_sparse(6)) + 1.0
    ref = np.asarray(lazy)
    np.testing.assert_array_equal(np.asarray(lazy[3:3]), ref[3:3])
    np.testing.assert_array_equal(np.asarray(lazy[2, 3]), ref[2, 3])
    assert float(lazy[2, 3]) == ref[2, 3]
    v = xp.sum(lazy, axis=1, keepdims=True)[None, 4:6, :]
    np.testing.assert_allclose(np.asarray(v), ref.sum(axis=1, keepdims=True)[None, 4:6, :])
    with pytest.raises(IndexError):
        lazy[7]
    with pytest.raises(IndexError):
        lazy[0, 0, 0]


def test_shared_subexpressions_stay_shared_under_indexing() -> None:
    a = xp.asarray(_sparse(7, shape=(30, 30)))
    shared = a * 3.0
    lazy = shared + shared.T
    r = lazy[5:9]
    subs = {n.lhs for n in _nodes(r.expr) if isinstance(n, Subquery)}
    assert len(subs) < 12
    ref = np.asarray(a) * 3.0
    np.testing.assert_allclose(np.asarray(r), (ref + ref.T)[5:9])
