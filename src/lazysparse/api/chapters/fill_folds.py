"""Reductions of a sparse array whose fill is not the operator's identity (``max``, ``min``,
``prod``, ``all`` of a fill-0 array), in time of its stored entries (issue 32 item 3).

Such a reduction, computed directly, gives a dense result whose every entry folds in the
fill of its unstored points; a float ``prod`` over fill 0 even visits every point (NumPy
meets the 0 before an overflowing ``inf``). On a hypersparse operand it is rewritten into
fill-keeping reductions, which visit only stored entries:

- ``r = init ⊕ (⊕ of the entries unequal to the fill)``: the entries equal to the fill
  (unstored or not) are mapped to the operator's identity first;
- ``c``: how many entries of each reduced region are unequal to the fill;
- where ``c < n`` (``n`` points per region) the fill contributes: once for an idempotent
  operator (``max(r, fill)``), ``fill ** (n - c)`` for a product. A fill-0 float product
  is 0 there, or NaN where the region stores an ``inf`` or a NaN (``0 * inf``), as NumPy.

The result keeps the fill of a region holding only the fill (``max`` of fill 0: 0), so it
stays sparse; it is dense when ``plans.reduction_is_dense`` says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.building.elementwise import where
from lazysparse.api.building.lazy_plans import (
    DENSE_REDUCTION_ENTRIES,
    DENSE_REDUCTION_RATIO,
    astype,
    lazy_map,
    lazy_reduce,
    op,
    reduced_shape,
    reduction_is_dense,
    stored_bound,
)
from lazysparse.api.chapters.interop import asformat
from lazysparse.formats.dtypes import same_value
from lazysparse.logic import dtypes as _dt
from lazysparse.logic.operators import Operator, aggregate_dtype

# the operators rewritten; ``logical_and``/``logical_or`` reduce ``x != 0``
_FOLDED = ("maximum", "minimum", "multiply", "logical_and", "logical_or")
_INT64_MAX = int(np.iinfo(np.int64).max)
# for an idempotent operator, the comparison of (stored, fill) where o(stored, fill) is the
# fill (a NaN stored wins ``max``/``min``; a where-map keeps the result's pattern sparse)
_FILL_WINS = {"maximum": "less", "minimum": "greater", "logical_and": "logical_xor",
              "logical_or": "logical_xor"}


def reduce_folding_fill(o: Operator, x: LazyArray, axes: Sequence[int],
                        keepdims: bool = False, init: Any = None) -> LazyArray:
    """``lazy_reduce(o, x, axes, keepdims, init)``, over the stored entries plus the fill's
    contribution where that is cheaper (see the module doc)."""
    if not _worth_folding(o, x, axes):
        return lazy_reduce(o, x, axes, keepdims, init)
    if _logical(o) and x.dtype != _dt.BOOL:
        x = lazy_map(op("not_equal"), x, 0)
    if init is None:
        init = o.init_for(x.dtype)
    parts = _Parts(o, x, tuple(axes), keepdims, init)
    if o.idempotent:  # o(stored, fill) is one of them: where the fill wins, the fill
        stored = parts.stored()
        wins = "not_equal" if parts.nan_fill else _FILL_WINS[o.name]  # NaN always wins
        folded = where(lazy_map(op(wins), stored, parts.fill), parts.fill, stored)
    elif x.dtype.kind == "f" and parts.fill == 0:
        folded = _zero_product(parts)
    else:  # stored * fill ** (n - count)
        power = lazy_map(op("pow"), parts.fill, lazy_map(op("subtract"), parts.n,
                                                         parts.count()))
        folded = lazy_map(op("multiply"), parts.stored(), astype(power, x.dtype))
    t = x.result
    if t is not None and parts.n > int(t.nnz):  # every region has an unstored point
        out = folded
    else:
        out = where(lazy_map(op("less"), parts.count(), parts.n), folded, parts.stored())
    dtype = aggregate_dtype(o, init, x.dtype)
    out = astype(out, dtype)
    shape = reduced_shape(x.shape, axes, False)
    if reduction_is_dense(shape, dtype, stored_bound(x)) and out.ndim:
        return asformat(out, "dense")
    return out


def _worth_folding(o: Operator, x: LazyArray, axes: Sequence[int]) -> bool:
    """Whether ``o`` over ``axes`` of ``x`` meets a fill that is not its identity, over far
    more points than ``x`` stores (a small reduction keeps its direct plan)."""
    if o.name not in _FOLDED or not axes or x.full or x.dtype.kind not in "biuf":
        return False
    f = x.fill_value
    if f is None:
        return False
    dtype = _dt.BOOL if _logical(o) else x.dtype
    f = np.bool_(f != 0) if _logical(o) else _dt.scalar_as(f, dtype)
    ident = o.identity_for(dtype)
    if ident is None or same_value(f, ident):
        return False
    points = math.prod(x.shape)
    if math.prod(x.shape[a] for a in axes) > _INT64_MAX:
        return False
    return points > max(DENSE_REDUCTION_ENTRIES, DENSE_REDUCTION_RATIO * stored_bound(x))


def _logical(o: Operator) -> bool:
    """Whether ``o`` reduces truth values (``all``/``any`` of any dtype: ``x != 0``)."""
    return o.name in ("logical_and", "logical_or")


class _Parts:
    """The fill-keeping pieces of one rewritten reduction, each built once when needed."""

    def __init__(self, o: Operator, x: LazyArray, axes: tuple[int, ...], keepdims: bool,
                 init: Any) -> None:
        self.o, self.x, self.axes, self.keepdims, self.init = o, x, axes, keepdims, init
        f = x.fill_value
        self.fill = f.item()
        self.n = math.prod(x.shape[a] for a in axes)
        # the entries unequal to the fill: x's pattern (fill False) whatever the fill is
        self.nan_fill = x.dtype.kind == "f" and bool(np.isnan(f))
        self.keep = (lazy_map(op("equal"), x, x) if self.nan_fill
                     else lazy_map(op("not_equal"), x, self.fill))
        self._stored: LazyArray | None = None
        self._count: LazyArray | None = None

    def stored(self) -> LazyArray:
        """``init ⊕`` the entries unequal to the fill (the others made the identity)."""
        if self._stored is None:
            ident = self.o.identity_for(self.x.dtype).item()
            self._stored = lazy_reduce(self.o, where(self.keep, self.x, ident), self.axes,
                                       self.keepdims, self.init)
        return self._stored

    def count(self) -> LazyArray:
        """How many entries of each region are unequal to the fill (int64)."""
        if self._count is None:
            self._count = lazy_reduce(op("add"), astype(self.keep, np.dtype(np.int64)),
                                      self.axes, self.keepdims)
        return self._count


def _zero_product(parts: _Parts) -> LazyArray:
    """A float product over an unstored 0, as NumPy's in order: NaN where the region stores
    an ``inf`` or NaN (``0 * inf``), else a zero of the sign of every factor's product
    (one reduction of each stored entry's sign, NaN for a non-finite one)."""
    x = parts.x
    sign = where(lazy_map(op("isfinite"), x), lazy_map(op("copysign"), 1.0, x), np.nan)
    signs = lazy_reduce(op("multiply"), astype(where(parts.keep, sign, 1.0), x.dtype),
                        parts.axes, parts.keepdims, np.asarray(1.0, x.dtype)[()])
    z = parts.fill
    zero = where(lazy_map(op("less"), signs, 0.0), -z, z)
    return astype(where(lazy_map(op("isnan"), signs), np.nan, zero), x.dtype)


__all__ = ["reduce_folding_fill"]
