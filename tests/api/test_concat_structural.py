"""``concat``/``stack`` of compressed arrays by pointer offset and copy (formats.concat):
values against NumPy, stored counts and formats against scipy's vstack/hstack, every
result a valid tensor (rebuilt with the full structure check), and a 200k x 100k case in
an address-space-capped child process that could not hold anything dense."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.formats import Tensor, set_densify_limit
from lazysparse.formats.concat import Join, concat_tensors, join_layout, with_leading_axis
from lazysparse.formats.specs import format_spec

FORMATS = ("csr", "csc", "coo")


def _rand(shape: tuple[int, ...], fmt: str, seed: int, density: float = 0.3,
          dtype: Any = np.float64) -> sp.sparray:
    rng = np.random.default_rng(seed)
    m = sp.random_array(shape, density=density, format="coo", random_state=rng)
    m = sp.coo_array(((m.data * 10).astype(dtype), m.coords), shape=shape)
    return m.asformat(fmt)


def _valid(out: xp.LazyArray) -> Tensor:
    """``out``'s tensor, rebuilt with the full structure check (order, ranges, lengths)."""
    t = out.tensor()
    return Tensor(t.shape, t.levels, t.mode_order, t.values, t.fill_value, format=t.spec)


def _stacked(blocks: list[sp.sparray], axis: int) -> sp.sparray:
    stack = sp.vstack if axis % 2 == 0 else sp.hstack
    return stack(blocks, format="csr")


@pytest.mark.parametrize("first", FORMATS)
@pytest.mark.parametrize("second", FORMATS)
@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_formats_and_axes_match_scipy(first: str, second: str, axis: int) -> None:
    along = axis % 2
    shape_a = (6, 9)
    shape_b = (4, 9) if along == 0 else (6, 3)
    empty = (0, 9) if along == 0 else (6, 0)
    blocks = [_rand(shape_a, first, 1), _rand(shape_b, second, 2),
              _rand(empty, second, 3), _rand(shape_b, first, 4, density=0.0)]
    out = xp.compute(xp.concat([xp.asarray(b) for b in blocks], axis=axis))
    ref = np.concatenate([b.toarray() for b in blocks], axis=axis)
    np.testing.assert_array_equal(np.asarray(out), ref)
    t = _valid(out)
    assert out.format == first and t.nnz == _stacked(blocks, axis).nnz
    assert out.shape == ref.shape


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_result_format_is_scipys(fmt: str) -> None:
    a, b = _rand((30, 20), fmt, 5), _rand((30, 20), fmt, 6)
    for axis, stack in ((0, sp.vstack), (1, sp.hstack)):
        ref = stack([a, b])
        out = xp.compute(xp.concat([xp.asarray(a), xp.asarray(b)], axis=axis))
        assert out.format == ref.format == fmt
        got = xp.to_scipy(out)
        np.testing.assert_array_equal(got.indptr, ref.indptr)
        np.testing.assert_array_equal(got.indices, ref.indices)
        np.testing.assert_array_equal(got.data, ref.data)


@pytest.mark.parametrize("d1, d2", [
    ("bool", "bool"), ("int8", "int64"), ("int32", "int32"), ("float32", "float32"),
    ("bool", "float32"), ("int16", "complex64"), ("float32", "complex128"),
    ("complex64", "complex64"), ("uint8", "int16"),
])
@pytest.mark.parametrize("axis", [0, 1])
def test_dtypes_promote_as_numpy(d1: str, d2: str, axis: int) -> None:
    a, b = _rand((5, 8), "csr", 7, dtype=d1), _rand((5, 8), "csr", 8, dtype=d2)
    out = xp.compute(xp.concat([xp.asarray(a), xp.asarray(b)], axis=axis))
    ref = np.concatenate([a.toarray(), b.toarray()], axis=axis)
    assert out.dtype == ref.dtype
    np.testing.assert_array_equal(np.asarray(out), ref)
    assert _valid(out).nnz == _stacked([a, b], axis).nnz


@pytest.mark.parametrize("fill", [0.0, np.nan, 1.0])
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("axis", [0, 1])
def test_one_fill_value_stays_sparse(fill: float, fmt: str, axis: int) -> None:
    rng = np.random.default_rng(9)
    a = np.where(rng.random((5, 6)) < 0.4, rng.random((5, 6)), fill)
    b = np.where(rng.random((5, 6)) < 0.4, rng.random((5, 6)), fill)
    x = xp.asarray(a, format=fmt, fill_value=fill)
    y = xp.asarray(b, format="csr", fill_value=fill)
    out = xp.compute(xp.concat([x, y], axis=axis))
    np.testing.assert_array_equal(np.asarray(out), np.concatenate([a, b], axis=axis))
    t = _valid(out)
    assert out.format == fmt and np.array_equal(t.fill_value, fill, equal_nan=True)
    stored = int(np.sum(~np.isnan(a) if np.isnan(fill) else a != fill)) \
        + int(np.sum(~np.isnan(b) if np.isnan(fill) else b != fill))
    assert t.nnz == stored


def test_different_fills_give_the_dense_result() -> None:
    a = np.array([[0.0, 2.0], [3.0, 0.0]])
    b = np.array([[1.0, 5.0], [1.0, 1.0]])
    x, y = xp.asarray(a, format="csr"), xp.asarray(b, format="csr", fill_value=1.0)
    out = xp.compute(xp.concat([x, y], axis=1))
    assert out.format == "dense"
    np.testing.assert_array_equal(np.asarray(out), np.concatenate([a, b], axis=1))


def test_dense_and_sparse_operands() -> None:
    a, b = _rand((4, 5), "csr", 10), np.arange(20.0).reshape(4, 5)
    for axis in (0, 1):
        out = xp.compute(xp.concat([xp.asarray(a), xp.asarray(b)], axis=axis))
        np.testing.assert_array_equal(np.asarray(out),
                                      np.concatenate([a.toarray(), b], axis=axis))


def test_one_dimensional_and_flattened() -> None:
    v = np.array([0.0, 1.5, 0.0, 0.0, -2.0])
    w = np.array([3.0, 0.0, 0.0])
    x, y = xp.asarray(v, format="csf"), xp.asarray(w, format="coo")
    out = xp.compute(xp.concat([x, y, x]))
    np.testing.assert_array_equal(np.asarray(out), np.concatenate([v, w, v]))
    assert out.format == "csf" and _valid(out).nnz == 5
    out = xp.compute(xp.concat([x, y], axis=-1))
    np.testing.assert_array_equal(np.asarray(out), np.concatenate([v, w]))
    a, b = _rand((3, 4), "csr", 11), _rand((2, 2), "csc", 12)
    flat = xp.compute(xp.concat([xp.asarray(a), xp.asarray(b)], axis=None))
    np.testing.assert_array_equal(np.asarray(flat),
                                  np.concatenate([a.toarray().ravel(), b.toarray().ravel()]))


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_stack_matrices(axis: int) -> None:
    a, b = _rand((4, 6), "csr", 13), _rand((4, 6), "csc", 14)
    out = xp.compute(xp.stack([xp.asarray(a), xp.asarray(b), xp.asarray(a)], axis=axis))
    np.testing.assert_array_equal(np.asarray(out),
                                  np.stack([a.toarray(), b.toarray(), a.toarray()], axis=axis))
    assert _valid(out).nnz == 2 * a.nnz + b.nnz


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "dcsr", "csf"])
@pytest.mark.parametrize("empty", [False, True])
def test_stack_along_a_new_leading_axis(fmt: str, empty: bool) -> None:
    """Each operand's arrays under one new coordinate: csr/csc/dcsr/csf give csf, coo coo
    (the formats an ``expand_dims`` computes), empty rows and empty operands included."""
    a, c = _rand((6, 5), "csr", 24), _rand((6, 5), "csc", 25)
    b = _rand((6, 5), "csr", 26, density=0.0 if empty else 0.2)
    x = xp.asformat(xp.asarray(a), fmt)
    out = xp.compute(xp.stack([x, xp.asarray(b), xp.asarray(c)]))
    np.testing.assert_array_equal(np.asarray(out),
                                  np.stack([a.toarray(), b.toarray(), c.toarray()]))
    t = _valid(out)
    assert out.format == ("coo" if fmt == "coo" else "csf")
    assert t.nnz == a.nnz + b.nnz + c.nnz


@pytest.mark.parametrize("fmt", ["csf", "coo"])
def test_stack_vectors_leading(fmt: str) -> None:
    v = np.array([0.0, 1.0, 0.0, 4.0])
    out = xp.compute(xp.stack([xp.asarray(v, format=fmt), xp.asarray(np.zeros(4), format=fmt),
                               xp.asarray(v * 3, format=fmt)]))
    np.testing.assert_array_equal(np.asarray(out), np.stack([v, np.zeros(4), 3 * v]))
    assert out.format == fmt and _valid(out).nnz == 4


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_stack_vectors(axis: int) -> None:
    v = np.array([0.0, 1.0, 0.0, 4.0])
    w = np.array([2.0, 0.0, 0.0, 0.0])
    out = xp.compute(xp.stack([xp.asarray(v, format="csf"), xp.asarray(w, format="csf")],
                              axis=axis))
    np.testing.assert_array_equal(np.asarray(out), np.stack([v, w], axis=axis))
    assert _valid(out).nnz == 3


@pytest.mark.parametrize("fmt", ["dcsr", "hash", "bytemap", "dia"])
@pytest.mark.parametrize("axis", [0, 1])
def test_other_sparse_formats(fmt: str, axis: int) -> None:
    a, b = _rand((5, 7), "csr", 15), _rand((5, 7), "csr", 16)
    x = xp.asformat(xp.asarray(a), fmt)
    out = xp.compute(xp.concat([x, xp.asarray(b)], axis=axis))
    np.testing.assert_array_equal(np.asarray(out),
                                  np.concatenate([a.toarray(), b.toarray()], axis=axis))
    assert out.format == fmt
    if fmt != "dia":  # dia counts band positions
        assert out.tensor().nnz == _stacked([a, b], axis).nnz


def test_unsorted_scipy_rows() -> None:
    a = sp.csr_array((np.array([1.0, 2.0, 3.0]), np.array([4, 1, 0]), np.array([0, 2, 3])),
                     shape=(2, 5))
    a.has_sorted_indices = False
    b = _rand((2, 3), "csr", 17)
    for axis, other in ((0, _rand((1, 5), "csr", 18)), (1, b)):
        out = xp.compute(xp.concat([xp.asarray(a), xp.asarray(other)], axis=axis))
        np.testing.assert_array_equal(
            np.asarray(out), np.concatenate([a.toarray(), other.toarray()], axis=axis))
        _valid(out)


def test_lazy_operands_are_computed() -> None:
    a, b = _rand((40, 30), "csr", 19, density=0.05), _rand((40, 30), "csr", 20, density=0.05)
    x, y = xp.asarray(a), xp.asarray(b)
    out = xp.compute(xp.concat([x * 2.0, x + y], axis=1))
    ref = np.concatenate([2 * a.toarray(), (a + b).toarray()], axis=1)
    np.testing.assert_array_equal(np.asarray(out), ref)
    np.testing.assert_array_equal(np.asarray(xp.sum(xp.concat([x, y], axis=0), axis=0)),
                                  sp.vstack([a, b]).sum(axis=0))


def test_coordinates_past_int32() -> None:
    """Offsets past int32 give int64 indices (no wraparound of the shifted coordinates)."""
    n = 2**30 + 5
    a = sp.csr_array((np.array([1.0, 2.0]), (np.array([0, 2]), np.array([7, n - 1]))),
                     shape=(3, n))
    for first in ("csr", "coo"):
        x = xp.asformat(xp.asarray(a), first)
        out = xp.compute(xp.concat([x, x, x], axis=1))
        t = _valid(out)
        assert t.index_dtype == np.int64 and out.shape == (3, 3 * n)
        coo = xp.to_scipy(out).tocoo()
        order = np.lexsort((coo.coords[1], coo.coords[0]))
        np.testing.assert_array_equal(coo.coords[1][order],
                                      [7, n + 7, 2 * n + 7, n - 1, 2 * n - 1, 3 * n - 1])
    c = xp.asarray(a.T.tocsc())  # csc joined along its columns: outer, int64 offsets
    out = xp.compute(xp.concat([c, c, c], axis=0))
    assert _valid(out).index_dtype == np.int64
    np.testing.assert_array_equal(np.sort(xp.to_scipy(out).tocoo().coords[0]),
                                  [7, n - 1, n + 7, 2 * n - 1, 2 * n + 7, 3 * n - 1])


def test_hypersparse_rows_never_get_pointers() -> None:
    """Under a densify limit a pointer per row passes, coo joins along its second axis and
    stacks of coo/csc keep to coordinates (no csr pointers are built for them)."""
    n = 10**6
    rows, cols = np.array([3, 70, n - 1]), np.array([2, 2, 9])
    a = sp.coo_array((np.array([1.0, 2.0, 3.0]), (rows, cols)), shape=(n, 16))
    ref = np.concatenate([cols, cols + 16])
    with set_densify_limit(4 * n):
        out = xp.compute(xp.concat([xp.asarray(a), xp.asarray(a)], axis=1))
        assert out.format == "coo" and out.tensor().nnz == 6
        coo = xp.to_scipy(out)
        np.testing.assert_array_equal(np.sort(coo.coords[1]), np.sort(ref))
        for fmt in ("coo", "csc"):
            x = xp.asformat(xp.asarray(a), fmt)
            s = xp.compute(xp.stack([x, x]))
            assert s.shape == (2, n, 16) and s.tensor().nnz == 6
            np.testing.assert_array_equal(np.asarray(xp.sum(s, axis=(0, 1))),
                                          2 * a.sum(axis=0))


def test_join_layouts() -> None:
    csr, csc, coo = (format_spec(f, 2) for f in FORMATS)
    assert join_layout(csr, 0) == (Join.OUTER, csr)
    assert join_layout(csr, 1) == (Join.INNER, csr)
    assert join_layout(csc, 1) == (Join.OUTER, csc)
    assert join_layout(coo, 1) == (Join.INNER, csr)
    assert join_layout(format_spec("csf", 3), 1) is None
    assert join_layout(format_spec("dense", 2), 0) is None
    t = Tensor.from_coords([[0, 1], [2, 0]], [1.0, 2.0], (2, 3), format="csf")
    assert concat_tensors([t, t], 0, np.dtype(np.float64), 0.0, format_spec("hash", 2)) is None
    assert with_leading_axis(t.asformat("hash")) is None


def test_errors_unchanged() -> None:
    a = xp.asarray(_rand((3, 4), "csr", 21))
    with pytest.raises(ValueError, match="do not match"):
        xp.concat([a, xp.asarray(_rand((3, 5), "csr", 22))], axis=0)
    with pytest.raises(ValueError, match="one shape"):
        xp.stack([a, xp.asarray(_rand((4, 4), "csr", 23))])
    with pytest.raises(ValueError, match="needs at least one"):
        xp.concat([])
    with pytest.raises(TypeError, match="tuple or list"):
        xp.concat(a)
    with pytest.raises((ValueError, IndexError)):
        xp.concat([a, a], axis=2)
    with pytest.raises(ValueError, match="zero-dimensional"):
        xp.concat([xp.asarray(1.0), xp.asarray(2.0)])


_CHILD = textwrap.dedent("""
    import json, resource, sys, tracemalloc
    import numpy as np, scipy.sparse as sp
    import lazysparse as xp

    def vm_size():
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize"))

    n, m, nnz = 200_000, 100_000, 1_000_000
    rng = np.random.default_rng(0)
    def block(seed):
        r = np.random.default_rng(seed)
        return sp.csr_array(sp.coo_array((r.random(nnz), (r.integers(0, n, nnz),
                            r.integers(0, m, nnz))), shape=(n, m)))
    A, B = block(1), block(2)
    small = xp.asarray(sp.random_array((4, 4), density=0.5, format="csr", random_state=0))
    xp.compute(xp.concat([small, small], axis=0)); xp.compute(xp.concat([small, small], axis=1))
    xp.sum(xp.concat([small, small]), axis=0).__array__()  # warm up before the cap
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    cap = vm_size() + (3 << 29)  # 1.5 GiB past what is mapped: a dense block is 160 GB
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard < 0 else min(cap, hard), hard))
    out = {}
    for axis, stack in ((0, sp.vstack), (1, sp.hstack)):
        x, y = xp.asarray(A), xp.asarray(B)
        tracemalloc.start()
        C = xp.compute(xp.concat([x, y], axis=axis))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        t = C.tensor()
        ref = stack([A, B], format="csr")
        result_bytes = sum(a.nbytes for lv in t.levels for a in lv.arrays().values()) \\
            + t.values.nbytes
        sums = np.asarray(xp.sum(C, axis=0))
        out[axis] = dict(fmt=C.format, nnz=t.nnz, ref_nnz=ref.nnz, peak=peak,
                         result=result_bytes,
                         sums=bool(np.allclose(sums, ref.sum(axis=0))),
                         same=bool(np.array_equal(xp.to_scipy(C).indices, ref.indices)
                                   and np.array_equal(xp.to_scipy(C).indptr, ref.indptr)))
    x, y = xp.asarray(A), xp.asarray(B)
    tracemalloc.start()
    S = xp.stack([x, y])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    t = S.tensor()
    ref = sp.vstack([A, B], format="csr")
    sums = np.asarray(xp.sum(S, axis=(0, 1)))
    out["stack"] = dict(fmt=S.format, nnz=t.nnz, ref_nnz=ref.nnz, peak=peak,
                        result=sum(a.nbytes for lv in t.levels for a in lv.arrays().values())
                        + t.values.nbytes, sums=bool(np.allclose(sums, ref.sum(axis=0))))
    print(json.dumps(out))
""")


@pytest.mark.slow  # a fresh process building large blocks under an address-space cap
def test_large_blocks_stay_sparse_in_a_capped_address_space() -> None:
    proc = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    for axis in ("0", "1"):
        r = res[axis]
        assert r["fmt"] == "csr" and r["nnz"] == r["ref_nnz"], r
        assert r["sums"] and r["same"], r
        # the result and its pointers only: no coordinate lists, no dense block
        assert r["peak"] < 1.3 * r["result"], r
    r = res["stack"]
    assert r["fmt"] == "csf" and r["nnz"] == r["ref_nnz"] and r["sums"], r
    assert r["peak"] < 1.5 * r["result"], r  # plus the non-empty rows found per operand
