"""Degree statistics of stored tensors, for the optimizer's size and work estimates.

Real sparse data is skewed (zipf text, power-law graphs): a uniform-density estimate of
``sum_t A[i,t] B[t,j]`` misses the heavy columns that dominate the work. Following the
degree-constraint statistics of Deeds, Galley et al. ("Galley", cost-based optimization of
sparse tensor programs), each stored tensor carries, per axis, the number of stored entries
at each coordinate (its *degree vector*): the exact work of a one-index contraction is
``sum_t deg_A(t) * deg_B(t)``, and output sizes follow from the same vectors.

:func:`statistics` returns a tensor's :class:`TensorStats`, computed once and kept in a
weakly keyed side table (a dropped tensor drops its statistics). The counts per level come
from the level arrays in O(levels); a degree vector is computed on first ask: a
csr-like tensor's row degrees are ``diff(ptr)``, its column degrees ``bincount(idx)``
(O(nnz)); other layouts expand their coordinates once. Degrees count stored entries
(an explicitly stored fill counts), so they bound the nonzeros from above.
"""

from __future__ import annotations

import math
import weakref
from typing import TYPE_CHECKING

import numpy as np

from lazysparse.formats.assemble import expand
from lazysparse.formats.levels import Compressed, Dense

if TYPE_CHECKING:
    from lazysparse.formats.tensor import Tensor

# a degree vector longer than this many entries per stored entry (and past the floor) is not
# kept: a hypersparse axis (10^9 coordinates, a few entries) would take more memory than
# the tensor; its degrees are unknown and the uniform model decides
DEGREE_EXTENT_RATIO = 8
DEGREE_EXTENT_FLOOR = 1 << 16
# degrees whose variance exceeds this multiple of their mean are skewed (uniformly random
# entries have binomial degrees: about 1)
SKEW_DISPERSION = 4.0
# how many of the heaviest coordinates ``TensorStats.heaviest`` reports by default
HEAVY_COUNT = 4


class TensorStats:
    """Per-axis degree statistics of one stored tensor (degree vectors computed lazily).

    Compared and hashed by identity: the optimizer keys caches on it, and two tensors'
    statistics are the same only when they are the same object.
    """

    __slots__ = ("shape", "nnz", "level_entries", "_source", "_levels", "_degrees",
                 "_dispersion", "_covers", "__weakref__")

    def __init__(self, t: Tensor) -> None:
        self.shape: tuple[int, ...] = tuple(int(d) for d in t.shape)
        self.nnz: int = int(t.nnz)
        self.level_entries: tuple[int, ...] = _level_entries(t)
        self._source = weakref.ref(t)
        self._levels = t.levels
        self._degrees: dict[int, np.ndarray] = {}
        self._dispersion: dict[int, float] = {}
        self._covers: dict[int, bool] = {}

    def degrees(self, axis: int) -> np.ndarray | None:
        """Stored entries at each coordinate of ``axis`` (int64, one per coordinate), or
        None when unknown: the tensor is gone or changed its levels before the first ask,
        or the axis is too long for its entries (``DEGREE_EXTENT_RATIO``)."""
        if not 0 <= axis < len(self.shape):
            raise IndexError(f"axis {axis} is out of bounds for a {len(self.shape)}-d tensor")
        if axis not in self._degrees:
            t = self._source()
            if t is None or t.levels is not self._levels or not _kept(self.shape[axis],
                                                                      self.nnz):
                return None
            self._degrees.update(_degree_vectors(t, axis))
        return self._degrees[axis]

    def tensor(self) -> Tensor | None:
        """The stored tensor these statistics describe, while it is alive and keeps its
        levels (an exact count reads its pattern); else None."""
        t = self._source()
        return t if t is not None and t.levels is self._levels else None

    def covers(self, axis: int) -> bool:
        """Whether every coordinate of ``axis`` holds a stored entry (no empty slice along
        it: a product with this tensor reaches every coordinate of that axis), computed
        once; False when the degrees are unknown (the safe answer)."""
        if axis not in self._covers:
            d = self.degrees(axis)
            self._covers[axis] = d is not None and bool(d.size) and int(d.min()) > 0
        return self._covers[axis]

    def max_degree(self, axis: int) -> int | None:
        """The largest degree along ``axis`` (None when unknown)."""
        d = self.degrees(axis)
        return None if d is None else int(d.max(initial=0))

    def mean_degree(self, axis: int) -> float:
        """Stored entries per coordinate of ``axis`` (nnz / extent)."""
        n = self.shape[axis]
        return self.nnz / n if n else 0.0

    def dispersion(self, axis: int) -> float | None:
        """The index of dispersion (variance / mean) of the degrees along ``axis``: about 1
        for uniformly random entries (binomial degrees), below for regular ones (a band),
        far above for skewed ones (zipf terms, power-law graphs); None when unknown."""
        if axis not in self._dispersion:
            d = self.degrees(axis)
            if d is None or not d.size:
                return None
            mean = float(d.mean())
            self._dispersion[axis] = float(d.var()) / mean if mean > 0 else 0.0
        return self._dispersion[axis]

    def heaviest(self, axis: int, k: int = HEAVY_COUNT) -> tuple[tuple[int, int], ...]:
        """The ``k`` coordinates of ``axis`` with the most stored entries, heaviest first,
        as ``(coordinate, degree)`` pairs (empty when unknown)."""
        d = self.degrees(axis)
        if d is None or d.size == 0:
            return ()
        k = min(k, d.size)
        top = np.argpartition(-d, k - 1)[:k]
        top = top[np.argsort(-d[top], kind="stable")]
        return tuple((int(c), int(d[c])) for c in top)

    def describe(self) -> str:
        """``nnz=…; axis 0: max …, mean …; …`` for reports."""
        parts = [f"nnz={self.nnz}"]
        for axis in range(len(self.shape)):
            mx = self.max_degree(axis)
            parts.append(f"axis {axis}: max {mx if mx is not None else '?'}, "
                         f"mean {self.mean_degree(axis):.3g}")
        return "; ".join(parts)

    def __repr__(self) -> str:
        return f"TensorStats(shape={self.shape}, {self.describe()})"


_TABLE: weakref.WeakKeyDictionary[Tensor, TensorStats] = weakref.WeakKeyDictionary()


def statistics(t: Tensor) -> TensorStats:
    """The statistics of stored tensor ``t``, computed once (recomputed if its levels were
    replaced)."""
    stats = _TABLE.get(t)
    if stats is None or stats._levels is not t.levels:
        stats = TensorStats(t)
        _TABLE[t] = stats
    return stats


def skew_signature(t: Tensor) -> tuple[int, ...]:
    """Per axis, 0 when ``t``'s degrees look uniform (or are unknown), else the rounded log2
    of their dispersion: what a cache of optimized plans must tell apart besides shape and
    density (the optimizer sizes skewed operands by their degrees)."""
    stats = statistics(t)
    out = []
    for axis in range(len(stats.shape)):
        disp = stats.dispersion(axis)
        out.append(0 if disp is None or disp <= SKEW_DISPERSION else round(math.log2(disp)))
    return tuple(out)


def _level_entries(t: Tensor) -> tuple[int, ...]:
    """Positions of each level, outermost first, from the level arrays (O(levels))."""
    out: list[int] = []
    npos = 1
    for level in t.levels:
        npos = int(level.npositions(npos))
        out.append(npos)
    return tuple(out)


def _degree_vectors(t: Tensor, axis: int) -> dict[int, np.ndarray]:
    """Stored entries at each coordinate of ``axis`` (of every axis when the coordinates
    had to be expanded: one pass serves them all)."""
    n = t.shape[axis]
    if t.full:
        return {axis: np.full(n, t.size // n if n else 0, dtype=np.int64)}
    level = t.mode_order.index(axis)
    lv = t.levels
    if len(lv) == 2 and isinstance(lv[0], Dense) and isinstance(lv[1], Compressed):
        if level == 0:
            return {axis: np.diff(lv[1].ptr).astype(np.int64, copy=False)}
        return {axis: np.bincount(lv[1].idx, minlength=n).astype(np.int64, copy=False)}
    if len(lv) == 1 and isinstance(lv[0], Compressed):
        return {axis: np.bincount(lv[0].idx[: int(lv[0].ptr[1])], minlength=n).astype(np.int64)}
    coords, _ = expand(t)
    nnz = int(t.nnz)
    return {m: np.bincount(np.asarray(c, dtype=np.int64), minlength=t.shape[m]).astype(np.int64)
            for m, c in zip(t.mode_order, coords, strict=True) if _kept(t.shape[m], nnz)}


def _kept(extent: int, nnz: int) -> bool:
    """Whether a degree vector of ``extent`` entries is kept (``DEGREE_EXTENT_RATIO``)."""
    return extent <= max(DEGREE_EXTENT_FLOOR, DEGREE_EXTENT_RATIO * nnz)


def holds_nonfinite(t: Tensor) -> bool:
    """Whether ``t`` may hold ±inf or NaN: a stored value, or the fill where some entry is
    implicit (False for integer and bool data). Read fresh on every ask, O(stored): one sum,
    which is finite only when every value is (an overflowing sum of finite values answers
    True, the safe side); not kept, since a computed array may be written in place and a
    NumPy leaf shares its memory with the caller's array (docs/api.md, "The fill rule")."""
    values = t.values
    if values.dtype.kind not in "fc":
        return False
    if not t.full and not _finite_scalar(t.fill_value):
        return True
    with np.errstate(over="ignore", invalid="ignore"):
        total = values.sum()
    return values.size > 0 and not _finite_scalar(total)


def _finite_scalar(x: object) -> bool:
    """Whether the scalar ``x`` (real or complex, NumPy or CuPy) is finite."""
    c = complex(x)  # type: ignore[arg-type]
    return math.isfinite(c.real) and math.isfinite(c.imag)
