"""Exact result sizes where an estimate is unsure and the format choice depends on it.

The estimates (``analysis.py``, ``degrees.py``) decide a result's format from its estimated
density. Near the break-even density that choice can go either way: the uniform model
prices the Florentine families' ``A @ A`` (45 % dense) over its threshold, and
``X * (X > 8)`` of the digits (29 % dense) is sized as ``X`` (51 %). When the estimated
density lies within a factor ``COUNT_BAND`` of ``EXACT_DENSE_THRESHOLD`` and the operands
are stored tensors (their statistics still reach them), an exact count decides, before any
kernel allocates, as scipy's symbolic pass sizes a product's output:

* a product ``sum_t A[i, t] B[t, j]`` (a star of two stored operands on one reduced field,
  its leaves the result's axes) counts the distinct ``(i, j)`` reached through some ``t``,
  row by row (``formats.pattern_counts``): O(work + n);
* a map of one stored tensor (every access the same, other operands scalars) evaluates the
  map on the stored values and counts those unequal to the result's fill: O(nnz).

A counted result is dense past ``EXACT_DENSE_THRESHOLD`` (0.5, where a sparse library keeps
sparse up to the break-even density). Counts are memoized with the operands' statistics
(weakly keyed), so the loop-order candidates and a repeated call count once.
"""

from __future__ import annotations

import enum
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lazysparse.formats.dtypes import is_nan_scalar
from lazysparse.formats.pattern_counts import adjacency, product_pattern_entries, stored_values
from lazysparse.formats.statistics import TensorStats
from lazysparse.logic.nodes import (
    Alias,
    Field,
    Immediate,
    LogicNode,
    MapJoin,
    Relabel,
    Reorder,
)
from lazysparse.optimizer.degrees import Access, StatsView

# a counted result is stored dense past this density
EXACT_DENSE_THRESHOLD = 0.5
# the count decides when the estimated density is at least this factor below the threshold
COUNT_BAND = 4.0


class CountKind(enum.Enum):
    """How an exact count was taken."""

    PRODUCT = "symbolic product count"
    MAP = "count of the map over stored values"


@dataclass(frozen=True)
class ExactCount:
    """A result's exact stored entries, and how they were counted."""

    kind: CountKind
    entries: int
    size: int

    @property
    def density(self) -> float:
        """Stored fraction of the result's entries."""
        return self.entries / self.size if self.size else 0.0

    @property
    def dense(self) -> bool:
        """Whether the result is stored dense (``EXACT_DENSE_THRESHOLD``)."""
        return self.size == 0 or self.density > EXACT_DENSE_THRESHOLD


def unsure(p: float) -> bool:
    """Whether an estimated density ``p`` is close enough to the threshold (within
    ``COUNT_BAND``) that the format choice may be wrong: an exact count decides."""
    return p >= EXACT_DENSE_THRESHOLD / COUNT_BAND


# counts by the statistics and axes they read, kept with the first operand's statistics
# (weakly keyed; the other's by weak reference, checked on a hit)
_Memo = dict[Any, tuple["weakref.ref[TensorStats] | None", int]]
_MEMO: weakref.WeakKeyDictionary[TensorStats, _Memo] = weakref.WeakKeyDictionary()


def _memoized(first: TensorStats, other: TensorStats | None, key: Any,
              count: Any) -> int | None:
    """``count()`` once per ``key`` and pair of statistics (None: not countable)."""
    memo = _MEMO.setdefault(first, {})
    hit = memo.get(key)
    if hit is not None and (hit[0] is None if other is None else hit[0]() is other):
        return hit[1]
    n = count()
    if n is not None:
        memo[key] = (None if other is None else weakref.ref(other), n)
    return n


def product_count(accs: Sequence[Access], axes: tuple[Field, ...],
                  sizes: dict[Field, int]) -> ExactCount | None:
    """The exact entries of a product: two stored accesses sharing one field, reduced,
    whose other fields are the result's two axes; None for any other shape."""
    if len(accs) != 2 or len(axes) != 2 or any(len(f) != 2 for f, _ in accs):
        return None
    (fa, va), (fb, vb) = accs
    common = set(fa) & set(fb)
    if len(common) != 1:
        return None
    (t,) = common
    (la,), (lb,) = set(fa) - {t}, set(fb) - {t}
    if la == lb or {la, lb} != set(axes) or t in axes:
        return None
    ta, tb = va.stats.tensor(), vb.stats.tensor()
    if ta is None or tb is None:
        return None
    row_axis, mid_axis = va.axes[fa.index(la)], vb.axes[fb.index(t)]
    if ta.shape[va.axes[fa.index(t)]] != tb.shape[mid_axis]:
        return None
    ncols = int(tb.shape[vb.axes[fb.index(lb)]])
    n = _memoized(va.stats, vb.stats, ("product", row_axis, mid_axis), lambda: (
        product_pattern_entries(adjacency(ta, row_axis), adjacency(tb, mid_axis), ncols)))
    return None if n is None else ExactCount(CountKind.PRODUCT, n, sizes[la] * sizes[lb])


def map_count(expr: LogicNode, view: StatsView, fill: Any, size: int) -> ExactCount | None:
    """The exact entries of a map of one stored tensor (``view``'s) whose result has fill
    ``fill``: the stored values where the map differs from it; None when the map reads
    something else (another tensor, a field as a value)."""
    t = view.stats.tensor()
    if t is None or fill is None:
        return None

    def count() -> int | None:
        with np.errstate(all="ignore"):
            out = _evaluate(expr, stored_values(t))
        if out is None:
            return None
        out = np.asarray(out)
        if is_nan_scalar(fill):
            return int(np.count_nonzero(out == out))  # noqa: PLR0124 - NaN test
        differs = out != fill
        return int(np.count_nonzero(differs)) if differs.ndim else int(bool(differs)) * \
            int(t.nnz)

    n = _memoized(view.stats, None, ("map", view.axes, expr), count)
    return None if n is None else ExactCount(CountKind.MAP, n, size)


def _evaluate(expr: LogicNode, values: np.ndarray) -> Any:
    """``expr`` at every stored position, its one tensor's access standing for ``values``
    (None when it holds another kind of leaf)."""
    match expr:
        case Relabel(arg=Alias()):
            return values
        case Immediate(val=v):
            return v
        case MapJoin(op=Immediate(val=op), args=args):
            vals = [_evaluate(a, values) for a in args]
            return None if any(v is None for v in vals) else op.apply(*vals)
        case Reorder(arg=arg):
            return _evaluate(arg, values)
    return None


__all__ = ["COUNT_BAND", "EXACT_DENSE_THRESHOLD", "CountKind", "ExactCount", "map_count",
           "product_count", "unsure"]
