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

A product of two *different* stored tensors (``Tn[:200] @ Tn.T``, ``A[:k] @ B``) is counted
the same way when degree statistics sized it dense (skewed operands: the degree model
assumes the heavy rows and columns independent, and clustered data meets fewer pairs:
``analysis._pair_estimated_dense``) and the count is cheap next to the product: its
work ``W = sum_t deg_a(t) deg_b(t)`` (exact from the degrees, what the count walks) is at
most ``COUNT_WORK_RATIO`` times the result's size, and more than half of it (below, every
entry needing a product, the result is surely sparse). Past the ratio the count would cost
about the product itself and the degree estimate decides. The count walks the rows of
whichever operand lets both read their lists with the fewer sorted entries.

A counted result is dense past ``EXACT_DENSE_THRESHOLD`` (0.5, where a sparse library keeps
sparse up to the break-even density). Products of independent uniform operands keep the
estimate and its thresholds (the uniform model is right about them). Counts are memoized
with the tensor's statistics (a pair's with both, weakly keyed), so the loop-order
candidates and a repeated call count once; a pair's also by both patterns
(``pattern_memo``), so a slice taken again (a new tensor) counts once too.
"""

from __future__ import annotations

import enum
import math
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from lazysparse.formats.dtypes import is_nan_scalar
from lazysparse.formats.pattern_counts import (
    adjacency,
    native_axis,
    product_pattern_entries,
    stored_values,
)
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
from lazysparse.optimizer.degrees import Access, StatsView, dot_degrees
from lazysparse.optimizer.pattern_memo import count_by_pattern, pattern_digest

if TYPE_CHECKING:
    from lazysparse.formats.tensor import Tensor

# a counted result is stored dense past this density
EXACT_DENSE_THRESHOLD = 0.5
# the count decides when the estimated density is at least this factor below the threshold
COUNT_BAND = 4.0


class CountKind(enum.Enum):
    """How an exact count was taken."""

    PRODUCT = "symbolic product count"
    PAIR = "symbolic product count of two tensors"
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


# a product of two different stored tensors is counted only while its work (``sum_t
# deg_a(t) deg_b(t)``, exact from the degrees: what the count walks) is at most this many
# times the result's size; past it the count would cost about the product itself, and the
# degree estimate decides
COUNT_WORK_RATIO = 2.0

# counts by what they read (axes, the map), kept with the tensor's statistics (weakly keyed)
_MEMO: weakref.WeakKeyDictionary[TensorStats, dict[Any, int]] = weakref.WeakKeyDictionary()
# counts of products of two tensors, by the first's and then the second's statistics
_PAIR_MEMO: weakref.WeakKeyDictionary[
    TensorStats, weakref.WeakKeyDictionary[TensorStats, dict[Any, int]]]
_PAIR_MEMO = weakref.WeakKeyDictionary()


def _memoized(memo: dict[Any, int], key: Any, count: Callable[[], int | None]) -> int | None:
    """``count()`` once per ``key`` in ``memo`` (None: not countable, not kept)."""
    n = memo.get(key)
    if n is None:
        n = count()
        if n is not None:
            memo[key] = n
    return n


def _stats_memo(stats: TensorStats, other: TensorStats | None = None) -> dict[Any, int]:
    """The counts kept with ``stats`` (with the pair ``stats``, ``other`` when given)."""
    if other is None:
        return _MEMO.setdefault(stats, {})
    return _PAIR_MEMO.setdefault(stats, weakref.WeakKeyDictionary()).setdefault(other, {})


@dataclass(frozen=True)
class _Side:
    """One operand of a counted product ``sum_t A[i, t] B[t, j]``: its stored tensor, the
    tensor axis of its result coordinate (``i`` or ``j``) and of the contracted ``t``."""

    tensor: Tensor
    stats: TensorStats
    free: int
    shared: int


def product_count(accs: Sequence[Access], axes: tuple[Field, ...],
                  sizes: dict[Field, int]) -> ExactCount | None:
    """The exact entries of a product of two stored tensors' accesses sharing one field,
    reduced, whose other fields are the result's two axes; None for any other shape. A
    tensor with itself is always counted; two different tensors only while the count is
    cheap next to the product (``COUNT_WORK_RATIO``) and a sparse result is not already
    certain (work at most half the result's size: each entry takes a product)."""
    sides = _product_sides(accs, axes)
    if sides is None:
        return None
    a, b = sides
    size = math.prod(sizes[f] for f in axes)
    if a.stats is b.stats:
        n = _memoized(_stats_memo(a.stats), ("product", a.free, b.shared),
                      lambda: _count(a, b))
        return None if n is None else ExactCount(CountKind.PRODUCT, n, size)
    work = _product_work(a, b)
    if work is None or not EXACT_DENSE_THRESHOLD * size < work <= COUNT_WORK_RATIO * size:
        return None
    key = ("pair", a.free, a.shared, b.shared, b.free)
    n = _memoized(_stats_memo(a.stats, b.stats), key,
                  lambda: count_by_pattern(_pattern_key(a, b, key), lambda: _count(a, b)))
    return None if n is None else ExactCount(CountKind.PAIR, n, size)


def _pattern_key(a: _Side, b: _Side, key: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """``key`` with both operands' pattern digests (``pattern_memo``), or None."""
    da, db = pattern_digest(a.tensor, a.stats), pattern_digest(b.tensor, b.stats)
    return None if da is None or db is None else (da, db, *key)


def _product_sides(accs: Sequence[Access], axes: tuple[Field, ...]
                   ) -> tuple[_Side, _Side] | None:
    """The two operands of a countable product (``product_count``), or None."""
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
    if ta is None or tb is None or ta.ndim != 2 or tb.ndim != 2:
        return None
    a = _Side(ta, va.stats, va.axes[fa.index(la)], va.axes[fa.index(t)])
    b = _Side(tb, vb.stats, vb.axes[fb.index(lb)], vb.axes[fb.index(t)])
    return (a, b) if ta.shape[a.shared] == tb.shape[b.shared] else None


def _product_work(a: _Side, b: _Side) -> float | None:
    """``sum_t deg_a(t) deg_b(t)``: the products (and the count's steps), None when a
    degree vector is unknown."""
    da, db = a.stats.degrees(a.shared), b.stats.degrees(b.shared)
    if da is None or db is None or da.size != db.size:
        return None
    return dot_degrees(da, db)


def _count(a: _Side, b: _Side) -> int:
    """The distinct ``(i, j)`` of ``a``'s and ``b``'s product, row by row over whichever
    side's result coordinate lets both operands' lists be read with the fewer sorted
    entries (``pattern_counts.adjacency``: a csr-like tensor's own arrays need none)."""
    def sorted_entries(rows: _Side, cols: _Side) -> int:
        return sum(int(s.tensor.nnz) for s, axis in ((rows, rows.free), (cols, cols.shared))
                   if native_axis(s.tensor) != axis)

    if sorted_entries(b, a) < sorted_entries(a, b):
        a, b = b, a
    return product_pattern_entries(adjacency(a.tensor, a.free),
                                   adjacency(b.tensor, b.shared), int(b.tensor.shape[b.free]))


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

    n = _memoized(_stats_memo(view.stats), ("map", view.axes, expr), count)
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


__all__ = ["COUNT_BAND", "COUNT_WORK_RATIO", "EXACT_DENSE_THRESHOLD", "CountKind", "ExactCount",
           "map_count", "product_count", "unsure"]
