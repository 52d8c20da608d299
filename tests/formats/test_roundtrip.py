"""Hypothesis: every pair of formats, converting then densifying gives the dense original."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lazysparse.formats import FormatSpec, Tensor, convert, format_spec
from tests.conftest import examples

from .helpers import DTYPES, assert_same, fills_for, formats_for, random_array


@st.composite
def cases(draw: st.DrawFn) -> tuple[np.ndarray, object, tuple[int, ...]]:
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=ndim, max_size=ndim)))
    dtype = draw(st.sampled_from(DTYPES))
    fill = draw(st.sampled_from(fills_for(dtype)))
    density = draw(st.sampled_from([0.0, 0.2, 0.6, 1.0]))
    seed = draw(st.integers(0, 2**16))
    order = tuple(draw(st.permutations(range(ndim))))
    return random_array(shape, density, dtype, fill, seed), fill, order


@settings(max_examples=examples(60), deadline=None)
@given(cases())
def test_every_pair_of_formats(case: tuple[np.ndarray, object, tuple[int, ...]]) -> None:
    a, fill, order = case
    names = formats_for(a.ndim)
    sources = [Tensor.from_numpy(a, f, fill) for f in names]
    sources.append(Tensor.from_numpy(a, "csf", fill, mode_order=order))
    sources.append(Tensor.from_numpy(a, "coo", fill, mode_order=order))
    for t in sources:
        assert t.shape == a.shape and t.dtype == a.dtype
        assert_same(t.to_numpy(), a)
    targets = [format_spec(f, a.ndim) for f in names]
    targets += [format_spec("csf", a.ndim, order), format_spec("dense", a.ndim, order)]
    for t, spec in itertools.product(sources, targets):
        u = convert(t, spec)
        assert u.spec == spec and u.format == spec.name
        assert u.fill_value.dtype == a.dtype
        assert (u.fill_value == t.fill_value) or (np.isnan(u.fill_value) and np.isnan(t.fill_value))
        assert_same(u.to_numpy(), a)


@settings(max_examples=examples(40), deadline=None)
@given(cases())
def test_sparse_formats_store_no_fill(case: tuple[np.ndarray, object, tuple[int, ...]]) -> None:
    a, fill, _ = case
    keep = ~(np.isnan(a) if isinstance(fill, float) and np.isnan(fill) else a == fill)
    for f in formats_for(a.ndim):
        t = Tensor.from_numpy(a, f, fill)
        if f == "dense" or a.ndim == 0:
            assert t.nnz == a.size
        else:
            assert t.nnz == int(keep.sum())
        assert t.index_dtype == np.int32


@settings(max_examples=examples(30), deadline=None)
@given(cases())
def test_from_coords_any_order(case: tuple[np.ndarray, object, tuple[int, ...]]) -> None:
    a, fill, order = case
    keep = ~(np.isnan(a) if isinstance(fill, float) and np.isnan(fill) else a == fill)
    if a.ndim:
        coords = np.array(np.nonzero(keep)).reshape(a.ndim, -1)
    else:
        coords = np.zeros((0, int(keep)), dtype=np.int64)
    values = a[keep] if a.ndim else a.reshape(-1)[keep.reshape(-1)]
    perm = np.random.default_rng(0).permutation(values.size)
    for f in formats_for(a.ndim):
        t = Tensor.from_coords(coords[:, perm], values[perm], a.shape, format=f, fill_value=fill)
        assert_same(t.to_numpy(), a)
    t = Tensor.from_coords(
        coords[:, perm], values[perm], a.shape, format="csf", fill_value=fill, mode_order=order
    )
    assert_same(t.to_numpy(), a)


CUSTOM_KINDS = [
    ("compressed", "dense"),
    ("dense", "dense", "compressed"),
    ("compressed", "dense", "compressed"),
    ("dense", "compressed", "dense"),
    ("dense", "compressed-nonunique", "singleton"),
    ("compressed", "compressed-nonunique", "singleton"),
    ("compressed-nonunique", "singleton", "singleton"),
]


@settings(max_examples=examples(30), deadline=None)
@given(st.sampled_from(CUSTOM_KINDS), st.data())
def test_custom_layouts(kinds: tuple[str, ...], data: st.DataObject) -> None:
    ndim = len(kinds)
    shape = tuple(data.draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    dtype = data.draw(st.sampled_from(DTYPES))
    fill = data.draw(st.sampled_from(fills_for(dtype)))
    density = data.draw(st.sampled_from([0.0, 0.3, 1.0]))
    b = random_array(shape, density, dtype, fill, data.draw(st.integers(0, 999)))
    order = tuple(data.draw(st.permutations(range(ndim))))
    spec = FormatSpec("custom", kinds, order)
    for name in formats_for(ndim):
        u = convert(Tensor.from_numpy(b, name, fill), spec)
        assert u.format == "custom" and u.spec == spec
        assert_same(u.to_numpy(), b)
        assert_same(convert(u, name).to_numpy(), b)
    direct = Tensor.from_numpy(b, spec, fill)
    rebuilt = Tensor(direct.shape, direct.levels, direct.mode_order, direct.values, fill)
    assert (rebuilt.spec.level_kinds, rebuilt.mode_order) == (kinds, order)
    assert_same(rebuilt.to_numpy(), b)
