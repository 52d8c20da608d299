"""A picture of a stored 2-D array's sparsity pattern: entries counted into at most
``MAX_BINS × MAX_BINS`` bins, written as a grayscale PNG with NumPy and zlib only.

The work is O(stored data): a sparse tensor's coordinates are binned (``np.bincount``), so a
10⁹ × 10⁹ array with three entries costs three entries; a run-length level adds each run's
overlap with at most ``MAX_BINS`` column bins; a dense tensor's entries that differ from its
fill value are summed block by block (``np.add.reduceat``). Nothing is densified.
"""

from __future__ import annotations

import base64
import struct
import zlib
from dataclasses import dataclass, field

import numpy as np

from lazysparse.formats import Tensor
from lazysparse.formats import tensor_ops as T

MAX_BINS = 64
# the picture's longer side in CSS pixels (bins are scaled up, never smoothed)
PICTURE_PIXELS = 128


@dataclass(frozen=True)
class Thumbnail:
    """Entries per bin (``counts[r, c]``) of a 2-D array, each bin ``step`` = (rows,
    columns) of the array."""

    counts: np.ndarray = field(repr=False)
    step: tuple[int, int]

    @property
    def bins(self) -> tuple[int, int]:
        """Number of (row, column) bins."""
        return self.counts.shape[0], self.counts.shape[1]

    def gray(self) -> np.ndarray:
        """One uint8 pixel per bin: white where empty, darker for more entries (log scale,
        so a single entry is still visible next to a full bin)."""
        c = self.counts.astype(np.float64)
        top = c.max() if c.size else 0.0
        if top <= 0:
            return np.full(c.shape, 255, np.uint8)
        shade = 0.3 + 0.7 * np.log1p(c) / np.log1p(top)
        return np.where(c > 0, np.round(255 * (1 - shade)), 255).astype(np.uint8)

    def png(self) -> bytes:
        """The picture as PNG bytes (8-bit grayscale, one pixel per bin)."""
        return png_gray(self.gray())

    def html(self) -> str:
        """An ``<img>`` of the picture (inline base64 PNG), scaled to ``PICTURE_PIXELS``."""
        rows, cols = self.bins
        scale = PICTURE_PIXELS / max(rows, cols)
        data = base64.b64encode(self.png()).decode("ascii")
        return (f'<img class="lazysparse-thumbnail" alt="sparsity pattern, {rows}x{cols} '
                f'bins of {self.step[0]}x{self.step[1]}" width="{max(1, round(cols * scale))}" '
                f'height="{max(1, round(rows * scale))}" style="image-rendering: pixelated; '
                f'border: 1px solid #888" src="data:image/png;base64,{data}"/>')


def png_gray(pixels: np.ndarray) -> bytes:
    """A PNG (8-bit grayscale, no filter) of a 2-D uint8 array."""
    if pixels.ndim != 2 or pixels.dtype != np.uint8:
        raise ValueError(f"png_gray takes a 2-D uint8 array, got {pixels.ndim}-D {pixels.dtype}")
    h, w = pixels.shape
    rows = np.hstack([np.zeros((h, 1), np.uint8), pixels])  # filter byte 0 per row

    def chunk(tag: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows.tobytes(), 9)) + chunk(b"IEND", b""))


def bin_step(n: int) -> int:
    """Coordinates per bin along an axis of ``n`` (at most ``MAX_BINS`` bins)."""
    return max(1, -(-n // MAX_BINS))


def thumbnail(t: Tensor) -> Thumbnail | None:
    """The binned pattern of a stored 2-D host tensor (None for other ndims or an empty
    shape): stored entries of a sparse tensor, entries other than the fill of a dense one."""
    if t.ndim != 2 or 0 in t.shape:
        return None
    step = (bin_step(t.shape[0]), bin_step(t.shape[1]))
    bins = (-(-t.shape[0] // step[0]), -(-t.shape[1] // step[1]))
    if t.full:
        counts = _dense_counts(t, step)
    elif t.levels[-1].run_valued:
        counts = _run_counts(t, step, bins)
    else:
        coords, _ = T.coo_parts(t)
        flat = (coords[0] // step[0]) * bins[1] + coords[1] // step[1]
        counts = np.bincount(flat, minlength=bins[0] * bins[1]).reshape(bins)
    return Thumbnail(counts.astype(np.int64), step)


def _dense_counts(t: Tensor, step: tuple[int, int]) -> np.ndarray:
    """Entries other than the fill (NaN-aware) per bin of a dense tensor, reducing the
    longer axis first (the intermediate is at most ``MAX_BINS`` wide)."""
    a = t.to_numpy()
    fill = t.fill_value
    differs = a == a if fill != fill else a != fill  # a NaN fill: the non-NaN entries
    axes = (1, 0) if a.shape[1] >= a.shape[0] else (0, 1)
    for axis in axes:
        starts = np.arange(0, a.shape[axis], step[axis])
        differs = np.add.reduceat(differs, starts, axis=axis, dtype=np.int64)
    return differs


def _run_counts(t: Tensor, step: tuple[int, int], bins: tuple[int, int]) -> np.ndarray:
    """Covered coordinates per bin of a 2-D tensor whose last level stores runs: each run's
    overlap with each bin along its axis (O(runs × bins), never per coordinate)."""
    outer, inner = t.mode_order
    top = t.levels[0]
    _, coord, pos = top.children(np.zeros(1, np.int64))
    runs = t.levels[-1].arrays()
    ptr, start, end = (runs[k].astype(np.int64) for k in ("ptr", "idx", "end"))
    n = ptr[pos + 1] - ptr[pos]
    run = np.arange(int(n.sum()), dtype=np.int64) + np.repeat(ptr[pos] - (np.cumsum(n) - n), n)
    at = np.repeat(coord, n) // step[outer]
    counts = np.zeros((bins[outer], bins[inner]), np.int64)
    s, e = start[run], end[run]
    for b in range(bins[inner]):
        lo, hi = b * step[inner], (b + 1) * step[inner]
        overlap = np.clip(np.minimum(e, hi) - np.maximum(s, lo), 0, None)
        np.add.at(counts[:, b], at, overlap)
    return counts if outer == 0 else counts.T
