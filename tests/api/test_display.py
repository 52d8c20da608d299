"""The display of an array (``api/array/display.py``): ``_repr_html_`` of stored and lazy arrays,
the ``repr`` of a lazy array, the sparsity thumbnail (``api/array/thumbnail.py``), and that
displaying computes nothing."""

from __future__ import annotations

import base64
import re
import struct
import tracemalloc
import zlib

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.api.array import display
from lazysparse.api.array.materialize import build_plan
from lazysparse.api.array.thumbnail import MAX_BINS, bin_step, png_gray, thumbnail
from lazysparse.engine import preview_plan
from lazysparse.formats import Tensor
from lazysparse.kernels import backends


def fields(page: str) -> dict[str, str]:
    """The (field -> value) rows of a rendered display."""
    rows = re.findall(r"<tr><th[^>]*>(.*?)</th><td[^>]*>(.*?)</td></tr>", page)
    return dict(rows)


def decode_png(data: bytes) -> np.ndarray:
    """The pixels of an 8-bit grayscale, unfiltered PNG (what ``png_gray`` writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        tag, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        assert crc == zlib.crc32(tag + body) & 0xFFFFFFFF
        chunks[tag] = chunks.get(tag, b"") + body
        pos += 12 + n
    w, h, depth, color = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert (depth, color) == (8, 0)
    raw = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(h, w + 1)
    assert not raw[:, 0].any()  # filter type 0 on every row
    return raw[:, 1:]


def reference_counts(a: np.ndarray, fill: float = 0.0) -> np.ndarray:
    """Entries other than ``fill`` per thumbnail bin, by loops over the dense array."""
    sr, sc = bin_step(a.shape[0]), bin_step(a.shape[1])
    differs = ~np.isnan(a) if np.isnan(fill) else a != fill
    rows, cols = -(-a.shape[0] // sr), -(-a.shape[1] // sc)
    return np.array([[differs[r * sr:(r + 1) * sr, c * sc:(c + 1) * sc].sum()
                      for c in range(cols)] for r in range(rows)])


@pytest.fixture
def no_compute(count_executions: list, monkeypatch: pytest.MonkeyPatch):
    """Fails the test if anything executes a plan or generates, compiles or loads a kernel
    while displaying; yields a function checking it."""
    before = dict(backends.STATS)

    def check() -> None:
        assert count_executions == []
        assert {k: backends.STATS[k] - before[k] for k in ("generated", "compiled",
                                                           "disk_loaded", "numpy")} \
            == {"generated": 0, "compiled": 0, "disk_loaded": 0, "numpy": 0}

    return check


def sprand(m: int, n: int, density: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.random((m, n))
    a[rng.random((m, n)) > density] = 0.0
    return a


# ---------------------------------------------------------------- stored arrays


def test_csr_fields_are_exact() -> None:
    a = sprand(200, 300, 0.02)
    x = xp.asarray(sp.csr_array(a))
    f = fields(x._repr_html_())
    assert f["shape"] == "(200, 300)" and f["dtype"] == "float64"
    assert f["format"] == "csr [dense, compressed] (stored)"
    nnz = np.count_nonzero(a)
    assert f["stored entries"] == f"{nnz:,}"
    assert f["density"] == f"{100 * (nnz / a.size):.3g} %"
    t = x.tensor()
    nbytes = t.values.nbytes + sum(v.nbytes for lv in t.levels for v in lv.arrays().values())
    assert f"({nbytes:,} B)" in f["memory"]
    assert f["fill value"] == "0.0" and f["device"] == "cpu"
    assert "pending operations" not in f


def test_dense_fields_and_thumbnail() -> None:
    a = np.zeros((100, 40))
    a[:10] = 1.0  # the top rows only
    x = xp.asarray(a)
    page = x._repr_html_()
    f = fields(page)
    assert f["format"] == "dense [dense, dense] (stored)"
    assert f["stored entries"] == "4,000" and f["density"] == "100 %"
    assert f["memory"] == "32 kB (32,000 B)"
    png = base64.b64decode(re.search(r'base64,([^"]+)"', page)[1])
    pixels = decode_png(png)
    counts = reference_counts(a)
    assert pixels.shape == counts.shape == (50, 40)  # 2 rows per bin, every column
    np.testing.assert_array_equal(pixels < 255, counts > 0)


def test_coo_3d_has_no_thumbnail() -> None:
    a = np.zeros((3, 4, 5))
    a[0, 1, 2], a[2, 3, 4] = 1.5, -2.0
    x = xp.asarray(a, format="coo")
    page = x._repr_html_()
    f = fields(page)
    assert f["shape"] == "(3, 4, 5)" and f["format"].startswith("coo [")
    assert f["stored entries"] == "2" and f["density"] == f"{100 * (2 / 60):.3g} %"
    assert "<img" not in page


def test_zero_d() -> None:
    f = fields(xp.asarray(3.5)._repr_html_())
    assert f["shape"] == "()" and f["stored entries"] == "1" and f["density"] == "100 %"
    assert f["memory"] == "8 B"


def test_empty_shape() -> None:
    x = xp.asarray(np.zeros((0, 5)), format="csr")
    page = x._repr_html_()
    f = fields(page)
    assert f["shape"] == "(0, 5)" and f["stored entries"] == "0"
    assert "density" not in f and "<img" not in page  # no elements, no picture


def test_nan_fill() -> None:
    a = np.full((6, 7), np.nan)
    a[1, 2], a[4, 6] = 1.0, 2.0
    x = xp.asarray(a, format="csr", fill_value=np.nan)
    page = x._repr_html_()
    f = fields(page)
    assert f["fill value"] == "nan" and f["stored entries"] == "2"
    pixels = decode_png(base64.b64decode(re.search(r'base64,([^"]+)"', page)[1]))
    np.testing.assert_array_equal(pixels < 255, reference_counts(a, np.nan) > 0)


def test_huge_hypersparse_thumbnail_is_o_nnz(no_compute) -> None:
    n = 10**9
    m = sp.coo_array(([1.0, 2.0, 3.0], ([0, 5, n - 1], [7, n - 1, 3])), shape=(n, n))
    x = xp.asarray(m)
    assert x.format == "coo"
    tracemalloc.start()
    page = x._repr_html_()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 2**20  # bins and three coordinates, nothing of size n
    f = fields(page)
    assert f["stored entries"] == "3" and f["density"] == f"{100 * (3 / n**2):.3g} %"
    pic = thumbnail(x.tensor())
    assert pic.bins == (MAX_BINS, MAX_BINS) and pic.step == (bin_step(n),) * 2
    want = np.zeros((MAX_BINS, MAX_BINS), np.int64)
    for i, j in [(0, 7), (5, n - 1), (n - 1, 3)]:
        want[i // pic.step[0], j // pic.step[1]] += 1
    np.testing.assert_array_equal(pic.counts, want)
    y = x * 2.0  # lazy: planned sparse, estimated from the three entries
    f = fields(y._repr_html_())
    assert "dense" not in f["format"] and "(planned)" in f["format"]
    assert f["stored entries (estimated)"] == "≈ 3"
    no_compute()


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "dcsr", "rle", "bsr", "ell", "hash",
                                 "bytemap", "dense"])
def test_thumbnail_counts_match_dense_binning(fmt: str) -> None:
    a = sprand(150, 90, 0.05, seed=1)
    a[40, 10:80] = 3.0  # a long run (rle stores it as one)
    t = Tensor.from_numpy(a, fmt)
    np.testing.assert_array_equal(thumbnail(t).counts, reference_counts(a))


def test_thumbnail_of_banded_counts_its_stored_band() -> None:
    a = sp.diags_array([np.arange(1.0, 60.0), np.ones(60), np.ones(59)], offsets=[-1, 0, 1],
                       shape=(60, 60)).toarray()
    t = Tensor.from_numpy(a, "dia")
    pic = thumbnail(t)
    assert pic.counts.sum() == t.nnz
    np.testing.assert_array_equal(pic.counts > 0, reference_counts(a) > 0)


def test_png_gray_round_trips() -> None:
    pixels = np.arange(12, dtype=np.uint8).reshape(3, 4) * 20
    np.testing.assert_array_equal(decode_png(png_gray(pixels)), pixels)
    with pytest.raises(ValueError, match="2-D uint8"):
        png_gray(np.zeros((2, 2)))


# ---------------------------------------------------------------- lazy arrays


def test_lazy_expression_shows_its_plan_without_computing(no_compute) -> None:
    a = sprand(120, 120, 0.03, seed=2)
    A = xp.asarray(sp.csr_array(a))
    y = (A @ A) * 2.0
    page = y._repr_html_()
    text = repr(y)
    no_compute()
    assert y.result is None
    f = fields(page)
    assert "(lazy)" in page
    assert f["stored entries (estimated)"].startswith("≈ ")
    assert f["memory"] == "not allocated (lazy)"
    assert f["pending operations"] == "3"  # multiply, add (the matmul), multiply
    assert f["kernels"].split(";")[0] == f"{len(xp.explain(y).kernels)} planned"
    assert text == (f"<lazysparse array shape=(120, 120) dtype=float64, "
                    f"fill_value={y.fill_value!r}, lazy: 3 pending operations>")
    planned = f["format"]
    np.testing.assert_allclose(np.asarray(y), (a @ a) * 2.0)  # now it computes
    assert planned == f"{y.format} [{', '.join(y.tensor().spec.level_kinds)}] (planned)"
    f = fields(y._repr_html_())
    assert f["stored entries"] == f"{y.nnz:,}" and "pending operations" not in f


def test_kernels_count_the_held_values_a_compute_keeps(no_compute) -> None:
    a = sprand(50, 40, 0.1, seed=4)
    C = xp.asarray(sp.csr_array(a))
    rows = xp.sum(C, axis=1)  # a held reduction: computing y keeps it too
    y = C / rows[:, None]
    f = fields(y._repr_html_())
    no_compute()
    n = len(xp.explain(y).kernels)
    assert f["kernels"].startswith(f"{n} planned; computing it also keeps 1 held value")
    np.testing.assert_allclose(np.asarray(y), a / a.sum(axis=1, keepdims=True))
    assert rows.result is not None  # kept, as the display said


def test_a_plan_that_ran_before_is_noted() -> None:
    def build(seed: int) -> xp.LazyArray:
        x = xp.asarray(np.random.default_rng(seed).random((7, 3)))
        return xp.cos(x) * 1.5 - x

    first = build(5)
    np.asarray(first)
    f = fields(build(6)._repr_html_())  # other data, the same structure: the cached plan
    assert f["kernels"].endswith("; a plan of this structure ran before")


def test_preview_plan_reports_each_result_as_computed() -> None:
    a = sprand(40, 30, 0.1, seed=6)
    A = xp.asarray(sp.csr_array(a))
    y, z = A * 3.0, xp.sum(A, axis=0)
    preview = preview_plan(build_plan((y, z)))
    assert [r.shape for r in preview.results] == [(40, 30), (30,)]
    assert preview.results[0].nnz == pytest.approx(np.count_nonzero(a))  # a map keeps it
    assert preview.kernels >= 2 and not preview.ran_before
    xp.compute(y, z)
    assert [r.format for r in preview.results] == [y.format, z.format]
    assert [r.level_kinds for r in preview.results] == [
        y.tensor().spec.level_kinds, z.tensor().spec.level_kinds]
    assert preview_plan(build_plan((A * 3.0, xp.sum(A, axis=0)))).ran_before


def test_lazy_dense_and_requested_format() -> None:
    x = xp.asarray(np.arange(6.0).reshape(2, 3))
    y = xp.exp(x) + 1
    f = fields(y._repr_html_())
    assert f["format"] == "dense [dense, dense] (planned)"
    assert f["stored entries (estimated)"] == "≈ 6" and f["density"] == "100 %"
    z = xp.asformat(xp.asarray(sp.csr_array(sprand(30, 30, 0.1))) * 3, "coo")
    assert fields(z._repr_html_())["format"].startswith("coo [")
    assert "format='coo' (requested)" in repr(z)
    assert z.result is None
    np.testing.assert_allclose(np.asarray(y), np.exp(np.arange(6.0).reshape(2, 3)) + 1)


def test_lazy_repr_counts_pending_operations_once() -> None:
    y = -xp.asarray(np.ones(3))
    assert repr(y).endswith("lazy: 1 pending operation>")
    z = y + y * 2  # y's negation counted once
    assert repr(z).endswith("lazy: 3 pending operations>")
    xp.compute(y)
    assert repr(z).endswith("lazy: 2 pending operations>")  # y is data now
    assert z.result is None


def test_computed_repr_is_unchanged() -> None:
    y = xp.asarray(np.arange(3.0)) * 2
    xp.compute(y)
    assert repr(y) == "lazysparse.asarray([0., 2., 4.], dtype=float64)"
    assert str(y) == "[0. 2. 4.]"


def test_str_of_a_lazy_array_computes() -> None:
    y = xp.asarray(np.arange(3.0)) + 1
    assert str(y) == "[1. 2. 3.]" and y.result is not None


def test_a_failing_plan_is_shown_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(plan, device="cpu"):
        raise ValueError("no plan today")

    monkeypatch.setattr(display, "preview_plan", fail)
    y = xp.asarray(np.ones(4)) * 3
    f = fields(y._repr_html_())
    assert f["plan"] == "ValueError: no plan today"
    assert "(not planned)" in f["format"] and "stored entries (estimated)" not in f


def test_queued_writes_are_shown_not_merged() -> None:
    x = xp.asarray(sp.csr_array(np.eye(20)))
    x[3, 4] = 7.0  # a new coordinate: queued until x is next read
    assert x._update.dirty
    f = fields(x._repr_html_())
    assert f["queued writes"] == "merged into the storage when next read"
    assert f["stored entries"] == "20" and x._update.dirty  # displaying merged nothing
    want = np.eye(20)
    want[3, 4] = 7.0
    np.testing.assert_array_equal(np.asarray(x), want)
    assert "queued writes" not in fields(x._repr_html_())


@pytest.mark.gpu
def test_device_arrays_display_without_computing(gpu: str, no_compute) -> None:
    from lazysparse.kernels.backends.cuda import runtime

    a = sprand(30, 20, 0.2, seed=5)
    g = xp.asarray(sp.csr_array(a), device="cuda")
    page = g._repr_html_()
    f = fields(page)
    assert f["device"] == "cuda" and f["stored entries"] == f"{np.count_nonzero(a):,}"
    assert f["format"] == "csr [dense, compressed] (stored)" and "<img" not in page
    launches = dict(runtime.STATS)
    y = g @ g.T
    f = fields(y._repr_html_())
    assert f["device"] == "cuda" and "(planned)" in f["format"]
    assert "pending operations" in f and "<lazysparse array" in repr(y)
    assert y.result is None and runtime.STATS == launches
    no_compute()
    np.testing.assert_allclose(np.asarray(y.to_device("cpu")), a @ a.T)
