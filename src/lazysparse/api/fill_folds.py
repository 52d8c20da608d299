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

from lazysparse.api.elementwise import where
from lazysparse.api.interop import asformat
from lazysparse.api.lazy_array import LazyArray
from lazysparse.api.plans import (
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
from lazysparse.formats.dtypes import same_value
from lazysparse.logic import dtypes as _dt
from lazysparse.logic.operators import Operator, aggregate_dtype

# the operators rewritten; ``logical_and``/``logical_or`` reduce ``x != 0``
_FOLDED = ("maximum", "minimum", "multiply", "logical_and", "logical_or")
_INT64_MAX = int(np.iinfo(np.int64).max)


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
    f = x.fill_value
    nan_fill = x.dtype.kind == "f" and bool(np.isnan(f))
    # entries unequal to the fill: x's pattern (fill False) whatever the fill is
    keep = lazy_map(op("equal"), x, x) if nan_fill else lazy_map(op("not_equal"), x, f.item())
    ident = o.identity_for(x.dtype)
    stored = lazy_reduce(o, where(keep, x, ident.item()), axes, keepdims, init)
    n = math.prod(x.shape[a] for a in axes)
    count = lazy_reduce(op("add"), astype(keep, np.dtype(np.int64)), axes, keepdims)
    missing = lazy_map(op("less"), count, n)
    if o.idempotent:
        out = where(missing, lazy_map(o, stored, f.item()), stored)
    else:
        out = where(missing, _product_with_fill(x, axes, keepdims, stored, count, n), stored)
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


def _product_with_fill(x: LazyArray, axes: Sequence[int], keepdims: bool,
                       stored: LazyArray, count: LazyArray, n: int) -> LazyArray:
    """``stored * fill ** (n - count)``: where the fill is 0, a float product is NaN when
    the region stores an ``inf`` or NaN (``0 * inf``), else a zero (of the stored
    product's sign times the fill's)."""
    f = x.fill_value
    if x.dtype.kind != "f" or f != 0:
        power = lazy_map(op("pow"), f.item(), lazy_map(op("subtract"), n, count))
        return lazy_map(op("multiply"), stored, astype(power, x.dtype))
    odd = lazy_map(op("logical_not"), lazy_map(op("isfinite"), x))
    nonfinite = lazy_reduce(op("logical_or"), odd, axes, keepdims, np.bool_(False))
    sign = lazy_map(op("copysign"), 1.0, stored)
    zero = lazy_map(op("multiply"), sign, f.item())
    return where(nonfinite, np.nan, astype(zero, x.dtype))


__all__ = ["reduce_folding_fill"]
