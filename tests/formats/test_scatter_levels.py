"""Hashed and Bytemap levels: round trips with every format, locate, the builder, validation."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from lazysparse.formats import (
    Bytemap,
    Compressed,
    Dense,
    FormatSpec,
    Hashed,
    Tensor,
    convert,
    format_spec,
)
from lazysparse.formats.compiled.hash_insert import HashedBuilder, builder_from_tensor
from lazysparse.formats.levels import build_table, bytemap_locate, hashed_locate
from lazysparse.formats.levels.hashed import HASH_MULTIPLIER, table_size
from lazysparse.formats.ordering import ordered
from lazysparse.formats.specs import infer_spec
from tests.conftest import examples

from .helpers import DTYPES, assert_same, fills_for, formats_for, random_array

SCATTER = ["hash", "bytemap"]


def unordered_csr(a: np.ndarray, fill: object, seed: int) -> Tensor:
    """``a`` (2-D) as csr with each row's entries shuffled (an unordered compressed level)."""
    t = Tensor.from_numpy(a, "csr", fill)
    ptr, idx, vals = t.levels[1].ptr, t.levels[1].idx.copy(), t.values.copy()
    rng = np.random.default_rng(seed)
    for r in range(a.shape[0]):
        lo, hi = int(ptr[r]), int(ptr[r + 1])
        perm = lo + rng.permutation(hi - lo)
        idx[lo:hi], vals[lo:hi] = idx[perm], vals[perm]
    levels = [Dense(a.shape[0]), Compressed(a.shape[1], ptr, idx, ordered=False)]
    return Tensor(a.shape, levels, (0, 1), vals, fill)


def sources(a: np.ndarray, fill: object, order: tuple[int, ...]) -> list[Tensor]:
    """``a`` in every named format (and mode orders, and unordered csr for 2-D)."""
    out = [Tensor.from_numpy(a, f, fill) for f in formats_for(a.ndim)]
    out += [Tensor.from_numpy(a, "csf", fill, mode_order=order),
            Tensor.from_numpy(a, "coo", fill, mode_order=order)]
    if a.ndim == 2:
        out.append(unordered_csr(a, fill, 0))
    return out


@st.composite
def cases(draw: st.DrawFn) -> tuple[np.ndarray, object, tuple[int, ...]]:
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(0, 6), min_size=ndim, max_size=ndim)))
    dtype = draw(st.sampled_from(DTYPES))
    fill = draw(st.sampled_from(fills_for(dtype)))
    density = draw(st.sampled_from([0.0, 0.2, 0.6, 1.0]))
    seed = draw(st.integers(0, 2**16))
    order = tuple(draw(st.permutations(range(ndim))))
    return random_array(shape, density, dtype, fill, seed), fill, order


def check_valid(t: Tensor) -> None:
    """``t``'s levels pass validation (the constructor's checks)."""
    Tensor(t.shape, t.levels, t.mode_order, t.values, t.fill_value, format=t.spec)


@settings(max_examples=examples(60), deadline=None)
@given(cases())
def test_round_trips_with_every_format(case: tuple[np.ndarray, object, tuple[int, ...]]) -> None:
    a, fill, order = case
    for name in SCATTER:
        for mo in (None, order):
            t = Tensor.from_numpy(a, name, fill, mode_order=mo)
            assert t.format == name and t.levels[-1].kind == ("hashed" if name == "hash"
                                                              else "bytemap")
            check_valid(t)
            assert_same(t.to_numpy(), a)
            spec = format_spec(name, a.ndim, mo)
            for s in sources(a, fill, order):
                u = convert(s, spec)
                assert u.spec == spec
                check_valid(u)
                assert_same(u.to_numpy(), a)
                back = convert(u, s.spec)
                assert back.spec == s.spec
                assert_same(back.to_numpy(), a)
            for other in SCATTER:
                assert_same(convert(t, other).to_numpy(), a)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("fill", [0, 1, np.nan])
@pytest.mark.parametrize("shape", [(0,), (7,), (0, 4), (5, 0), (6, 9), (3, 4, 5)])
def test_dtypes_fills_shapes(dtype: np.dtype, fill: object, shape: tuple[int, ...]) -> None:
    if isinstance(fill, float) and np.isnan(fill) and dtype.kind not in "fc":
        pytest.skip("NaN fill only for floating dtypes")
    fill = dtype.type(fill)
    a = random_array(shape, 0.4, dtype, fill, 7)
    for name in SCATTER:
        t = Tensor.from_numpy(a, name, fill)
        check_valid(t)
        assert t.dtype == dtype
        assert_same(t.to_numpy(), a)
        assert_same(ordered(t).to_numpy(), a)
        for f in formats_for(a.ndim):
            assert_same(convert(t, f).to_numpy(), a)
            assert_same(convert(Tensor.from_numpy(a, f, fill), name).to_numpy(), a)


def test_bytemap_keeps_stored_fill_entries() -> None:
    ptr, idx = np.array([0, 2]), np.array([1, 3])
    t = Tensor((5,), [Bytemap(5, np.array([0, 1, 0, 1, 0], np.uint8), ptr, idx)], (0,),
               np.array([0.0, 0.0, 0.0, 2.0, 0.0]), 0.0)
    assert t.format == "bytemap"
    u = convert(t, "coo")
    assert u.nnz == 2 and list(u.levels[0].idx) == [1, 3]
    assert_same(u.to_numpy(), np.array([0.0, 0.0, 0.0, 2.0, 0.0]))


def test_scipy_round_trips_including_unsorted_csr() -> None:
    a = random_array((8, 11), 0.3, np.dtype(np.float64), 0.0, 5)
    m = sp.csr_array(a)
    # scipy csr with unsorted indices: reverse each row
    indices, data = m.indices.copy(), m.data.copy()
    for r in range(8):
        lo, hi = m.indptr[r], m.indptr[r + 1]
        indices[lo:hi], data[lo:hi] = indices[lo:hi][::-1], data[lo:hi][::-1]
    u = sp.csr_array((data, indices, m.indptr.copy()), shape=m.shape)
    u.has_sorted_indices = False
    t = Tensor((8, 11), [Dense(8), Compressed(11, u.indptr, u.indices, ordered=False)], (0, 1),
               u.data, 0.0)
    assert t.format == "csr" and not t.spec.ordered
    for name in SCATTER:
        h = convert(t, name)
        assert_same(h.to_numpy(), a)
        s = h.to_scipy()
        assert s.format == "csr" and s.has_sorted_indices
        np.testing.assert_array_equal(s.toarray(), a)
        np.testing.assert_array_equal(h.to_scipy("csc").toarray(), a)
        assert_same(convert(Tensor.from_scipy(m), name).to_numpy(), a)


def test_hash_is_the_documented_function() -> None:
    t = Tensor.from_numpy(np.array([[0, 5, 0, 7], [1, 0, 0, 0]]), "hash")
    level = t.levels[1]
    n = level.table.size
    assert n == 8 and n >= 2 * level.idx.size
    shift = 64 - (n.bit_length() - 1)
    for p in range(2):
        for q in range(int(level.ptr[p]), int(level.ptr[p + 1])):
            key = (p * level.size + int(level.idx[q])) % 2**64
            slot = ((key * HASH_MULTIPLIER) % 2**64) >> shift
            while level.table[slot] != q:
                assert level.table[slot] != -1
                slot = (slot + 1) & (n - 1)


@settings(max_examples=examples(30), deadline=None)
@given(st.integers(1, 6), st.integers(1, 40), st.floats(0.0, 1.0), st.integers(0, 2**16))
def test_locate_agrees_with_a_dict(rows: int, cols: int, density: float, seed: int) -> None:
    a = random_array((rows, cols), density, np.dtype(np.int64), 0, seed)
    h = Tensor.from_numpy(a, "hash")
    level = h.levels[1]
    want = {(p, int(level.idx[q])): q for p in range(rows)
            for q in range(int(level.ptr[p]), int(level.ptr[p + 1]))}
    b = Tensor.from_numpy(a, "bytemap")
    bm = b.levels[1]
    for p in range(rows):
        for c in range(cols):
            q = int(hashed_locate(level.ptr, level.idx, level.table, cols, p, c))
            assert q == want.get((p, c), -1)
            assert level.locate(p, c) == q
            r = int(bytemap_locate(bm.mask, cols, p, c))
            assert r == (p * cols + c if (p, c) in want else -1)
            assert bm.locate(p, c) == r
    # a table built for a shuffled order finds the same entries
    ptr, idx = level.ptr, level.idx.copy()
    rng = np.random.default_rng(seed)
    for p in range(rows):
        lo, hi = int(ptr[p]), int(ptr[p + 1])
        idx[lo:hi] = rng.permutation(idx[lo:hi])
    table = build_table(ptr, idx, cols)
    for p in range(rows):
        for q in range(int(ptr[p]), int(ptr[p + 1])):
            assert hashed_locate(ptr, idx, table, cols, p, idx[q]) == q


def test_level_declarations() -> None:
    spec = format_spec("hash", 3, (2, 0, 1))
    assert spec.level_kinds == ("dense", "dense", "hashed") and not spec.ordered
    props, caps = spec.level_properties()[-1], spec.level_capabilities()[-1]
    assert (props.full, props.ordered, props.unique, props.branchless, props.compact) == (
        False, False, True, False, True)
    assert (caps.iterate, caps.locate, caps.append, caps.insert) == ("position", True, False, True)
    spec = format_spec("bytemap", 1)
    assert spec.level_kinds == ("bytemap",) and spec.ordered
    props, caps = spec.level_properties()[0], spec.level_capabilities()[0]
    assert (props.full, props.ordered, props.unique, props.branchless, props.compact) == (
        False, True, True, False, False)
    assert (caps.iterate, caps.locate, caps.append, caps.insert) == ("position", True, False, True)
    assert infer_spec(("dense", "hashed"), (1, 0)).name == "hash"
    assert infer_spec(("dense", "bytemap"), (0, 1)).name == "bytemap"
    assert infer_spec(("hashed", "hashed"), (0, 1)).name == "custom"
    assert format_spec("hash", 2).ordered_spec() == format_spec("csr", 2)
    with pytest.raises(ValueError, match="needs ndim >= 1"):
        format_spec("hash", 0)
    t = ordered(Tensor.from_numpy(np.eye(3), "hash", mode_order=(1, 0)))
    assert t.format == "csc" and t.spec.ordered


def test_custom_layouts_with_inner_scatter_levels() -> None:
    a = random_array((4, 5, 3), 0.3, np.dtype(np.float32), 0.0, 11)
    for kinds in [("hashed", "hashed", "hashed"), ("bytemap", "dense", "compressed"),
                  ("compressed", "bytemap", "hashed"), ("bytemap", "bytemap", "bytemap")]:
        spec = FormatSpec("custom", kinds, (0, 1, 2))
        t = Tensor.from_numpy(a, spec)
        check_valid(t)
        assert_same(t.to_numpy(), a)
        assert_same(convert(t, "coo").to_numpy(), a)
        assert_same(convert(t, "hash").to_numpy(), a)
        assert_same(ordered(t).to_numpy(), a)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.complex64, np.bool_], ids=str)
def test_builder_inserts_equal_numpy_assignment(dtype: type) -> None:
    rng = np.random.default_rng(1)
    shape = (13, 29)
    ref = np.zeros(shape, dtype=dtype)
    b = HashedBuilder(29, 13, dtype)  # starts small: grows many times
    for _ in range(6):
        m = int(rng.integers(0, 300))
        i, j = rng.integers(0, 13, m), rng.integers(0, 29, m)
        v = random_array((m,), 1.0, np.dtype(dtype), 0, int(rng.integers(99)))
        b.insert(i, j, v)
        ref[i, j] = v  # NumPy: the last write of a repeated index wins
        t = b.freeze(shape)
        assert t.format == "hash" and t.nnz == len(b)
        check_valid(t)
        assert_same(t.to_numpy(), ref)
    b.insert([0], [0], dtype(1))
    ref[0, 0] = 1
    assert_same(b.freeze(shape).to_numpy(), ref)


def test_builder_combine_and_restart() -> None:
    rng = np.random.default_rng(2)
    shape = (4, 6, 50)
    ref = np.zeros(shape)
    b = HashedBuilder(50, 24, np.float64)
    i, j, k = (rng.integers(0, n, 5000) for n in shape)
    v = rng.random(5000)
    b.insert(i * 6 + j, k, v, combine="add")
    np.add.at(ref, (i, j, k), v)
    t = b.freeze(shape, (0, 1, 2), 0.0)
    np.testing.assert_allclose(t.to_numpy(), ref)
    for start in (t, convert(t, "csf"), convert(t, FormatSpec("x", ("dense", "dense", "compressed"),
                                                              (0, 1, 2)))):
        np.testing.assert_allclose(builder_from_tensor(start).freeze().to_numpy(), ref)
    b2 = builder_from_tensor(t)
    w = rng.random(5000)
    b2.insert(i * 6 + j, k, w, combine=np.maximum)
    np.maximum.at(ref, (i, j, k), w)
    np.testing.assert_allclose(b2.freeze().to_numpy(), ref)
    # from a csf tensor: parents are positions of its middle compressed level
    c = convert(b2.freeze(), "csf")
    b3 = builder_from_tensor(c)
    b3.insert([0, 0], [1, 1], [5.0, 6.0], combine=lambda x, y: x - y)
    u = b3.freeze()
    assert u.levels[:2] == c.levels[:2] and u.levels[-1].kind == "hashed"
    check_valid(u)
    expected = ref.copy()
    e = (int(c.levels[0].idx[0]), int(c.levels[1].idx[0]), 1)
    was_stored = 1 in c.levels[2].idx[c.levels[2].ptr[0]:c.levels[2].ptr[1]]
    expected[e] = expected[e] - 11.0 if was_stored else -1.0
    np.testing.assert_allclose(u.to_numpy(), expected)


def test_builder_errors() -> None:
    b = HashedBuilder(5, 2, np.float64)
    with pytest.raises(IndexError, match="coordinate 5 is out of range"):
        b.insert([0], [5], [1.0])
    with pytest.raises(IndexError, match="parent position 2"):
        b.insert([2], [0], [1.0])
    with pytest.raises(ValueError, match="unknown combine"):
        b.insert([0], [0], [1.0], combine="xor")
    with pytest.raises(ValueError, match="does not end in"):
        b.freeze((2, 4))
    with pytest.raises(ValueError, match="last level is hashed or unique compressed"):
        builder_from_tensor(Tensor.from_numpy(np.eye(3), "coo"))


def _hash_parts() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    ptr, idx = np.array([0, 2, 3]), np.array([3, 1, 0])
    return ptr, idx, build_table(ptr, idx, 4), np.array([1.0, 2.0, 3.0])


def test_hashed_validation_errors() -> None:
    ptr, idx, table, vals = _hash_parts()
    Tensor((2, 4), [Dense(2), Hashed(4, ptr, idx, table)], (0, 1), vals)
    cases = [
        (dict(idx=np.array([3, 3, 0])), "stored twice under parent 0"),
        (dict(idx=np.array([3, 4, 0])), "out of range"),
        (dict(ptr=np.array([0, 3, 2])), "not monotone"),
        (dict(table=np.full(4, -1)), "expected a power of two >= 8"),
        (dict(table=np.full(12, -1)), "power of two"),
        (dict(table=np.full(8, -1)), "table holds 0 positions"),
        (dict(table=np.where(table == 0, 7, table)), r"table\[\d\]=7 is neither"),
        (dict(table=np.roll(table, 3)), "position \\d .* not found by probing"),
    ]
    for change, message in cases:
        parts = dict(ptr=ptr, idx=idx, table=table) | change
        level = Hashed(4, parts["ptr"], parts["idx"], parts["table"])
        with pytest.raises(ValueError, match=message):
            Tensor((2, 4), [Dense(2), level], (0, 1), vals)
    with pytest.raises(ValueError, match="values has length 2"):
        Tensor((2, 4), [Dense(2), Hashed(4, ptr, idx, table)], (0, 1), vals[:2])
    assert table_size(3) == 8 and table_size(5) == 16


def test_bytemap_validation_errors() -> None:
    mask = np.zeros(8, np.uint8)
    mask[[1, 3, 4]] = 1
    ptr, idx, vals = np.array([0, 2, 3]), np.array([1, 3, 0]), np.arange(8.0)
    Tensor((2, 4), [Dense(2), Bytemap(4, mask, ptr, idx)], (0, 1), vals)
    Tensor((2, 4), [Dense(2), Bytemap(4, mask.astype(bool), ptr, idx)], (0, 1), vals)
    cases = [
        (dict(mask=mask[:7]), "mask has length 7, expected 8"),
        (dict(idx=np.array([3, 1, 0])), "unsorted coordinates 3, 1"),
        (dict(idx=np.array([1, 1, 0])), "duplicate coordinates"),
        (dict(idx=np.array([1, 2, 0])), "coordinate 2 of parent 0 .* not marked"),
        (dict(mask=np.where(np.arange(8) == 6, 1, mask)), "mask marks 4 positions"),
        (dict(ptr=np.array([0, 2, 4])), "ptr\\[-1\\]=4 must equal len\\(idx\\)=3"),
    ]
    for change, message in cases:
        parts = dict(mask=mask, ptr=ptr, idx=idx) | change
        level = Bytemap(4, parts["mask"], parts["ptr"], parts["idx"])
        with pytest.raises(ValueError, match=message):
            Tensor((2, 4), [Dense(2), level], (0, 1), vals)
    with pytest.raises(ValueError, match="values has length 3, but the levels have 8"):
        Tensor((2, 4), [Dense(2), Bytemap(4, mask, ptr, idx)], (0, 1), vals[:3])
