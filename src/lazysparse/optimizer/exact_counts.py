"""Exact result sizes where an estimate is unsure and the format choice depends on it.

The estimates (``analysis.py``, ``degrees.py``) decide a result's format from its estimated
density, assuming the operands independent. Two kinds of queries break that assumption:

* a product of one stored tensor with itself (``A @ A``, ``A @ A.T``, ``X.T @ X``): its
  two accesses share every entry (a symmetric graph's ``A @ A`` has its diagonal wherever a
  row is nonempty). The uniform model prices the Florentine families' ``A @ A`` (45 %
  dense) at 38 %, over its 25 % threshold, and Davis' women (43 %) at 62 %;
* a map of one stored tensor whose values decide its pattern: ``X * (X > 8)`` of the
  digits (29 % dense) is sized as ``X`` (51 %).

When such a query's estimated density is at least ``EXACT_DENSE_THRESHOLD / COUNT_BAND``
(the choice may go either way) and its operand is a stored tensor (its statistics still
reach it), an exact count decides, before any kernel allocates, as scipy's symbolic pass
sizes a product's output:

* the product ``sum_t A[i, t] A[t, j]`` (any axes of ``A``) counts the distinct ``(i, j)``
  reached through some ``t``, row by row (``formats.pattern_counts``): O(work + n);
* the map evaluates itself on the stored values and counts those unequal to the result's
  fill (which must be the tensor's): O(nnz).

A counted result is dense past ``EXACT_DENSE_THRESHOLD`` (0.5, where a sparse library keeps
sparse up to the break-even density). Products of independent operands keep the estimate
and its thresholds (the uniform model is right about them). Counts are memoized with the
tensor's statistics (weakly keyed), so the loop-order candidates and a repeated call count
once.
"""

from __future__ import annotations

import enum
import weakref
from collections.abc import Callable, Sequence
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


# counts by what they read (axes, the map), kept with the tensor's statistics (weakly keyed)
_MEMO: weakref.WeakKeyDictionary[TensorStats, dict[Any, int]] = weakref.WeakKeyDictionary()


def _memoized(stats: TensorStats, key: Any, count: Callable[[], int | None]) -> int | None:
    """``count()`` once per ``key`` and tensor statistics (None: not countable)."""
    memo = _MEMO.setdefault(stats, {})
    n = memo.get(key)
    if n is None:
        n = count()
        if n is not None:
            memo[key] = n
    return n


def product_count(accs: Sequence[Access], axes: tuple[Field, ...],
                  sizes: dict[Field, int]) -> ExactCount | None:
    """The exact entries of a product of one stored tensor with itself: two accesses
    sharing one field, reduced, whose other fields are the result's two axes; None for any
    other shape and for independent operands (the estimate is right about those)."""
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
    tensor = va.stats.tensor() if va.stats is vb.stats else None
    if tensor is None:
        return None
    row_axis, mid_axis = va.axes[fa.index(la)], vb.axes[fb.index(t)]
    if tensor.shape[va.axes[fa.index(t)]] != tensor.shape[mid_axis]:
        return None
    ncols = int(tensor.shape[vb.axes[fb.index(lb)]])
    n = _memoized(va.stats, ("product", row_axis, mid_axis), lambda: product_pattern_entries(
        adjacency(tensor, row_axis), adjacency(tensor, mid_axis), ncols))
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

    n = _memoized(view.stats, ("map", view.axes, expr), count)
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
