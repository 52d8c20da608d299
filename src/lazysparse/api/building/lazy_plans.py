"""LazyArray-level plan builders for the computational functions: pointwise maps, casts and
reductions whose result dtype and fill value come from the operator registry.

Everything here stays lazy: it wraps ``building.build_mapjoin`` / ``counted_aggregate`` and
returns a new :class:`LazyArray`; nothing is computed.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lazysparse.api.array.lazy_array import LazyArray, operands_extent
from lazysparse.api.array.operands import as_array
from lazysparse.api.array.plan_nodes import counted_aggregate
from lazysparse.api.building.elementwise import apply_operator, value_key
from lazysparse.formats.config import get_densify_limit
from lazysparse.logic import dtypes as _dt
from lazysparse.logic.operators import (
    Operator,
    aggregate_dtype,
    aggregate_fill,
    astype_op,
    get_operator,
)

Operand = LazyArray | bool | int | float | complex | np.generic


def op(name: str) -> Operator:
    """The registered operator ``name``."""
    return get_operator(name)


def check_array(x: Any, fname: str, arg: str = "x") -> LazyArray:
    """``x`` as a lazysparse array: NumPy and scipy.sparse inputs become leaves sharing
    their memory (``operands.as_array``); TypeError naming ``fname`` and ``arg`` otherwise."""
    return as_array(x, fname, arg)


def check_kind(x: LazyArray, kind: str, fname: str, arg: str = "x") -> None:
    """TypeError when ``x.dtype`` is not of dtype ``kind`` (``logic.dtypes.isdtype`` kinds)."""
    if not _dt.isdtype(x.dtype, kind):
        raise TypeError(f"{fname}: {arg} has dtype {x.dtype}, expected a {kind} dtype")


def normalize_axis(axis: Any, ndim: int, fname: str) -> int:
    """``axis`` as a non-negative int in ``[0, ndim)``.

    TypeError for a non-integer; ``numpy.exceptions.AxisError`` (both a ValueError and an
    IndexError, as NumPy raises) when out of range.
    """
    if isinstance(axis, bool) or not isinstance(axis, int | np.integer):
        raise TypeError(f"{fname}: axis must be an int, got {type(axis).__name__}")
    a = operator.index(axis)
    if not -ndim <= a < ndim:
        raise np.exceptions.AxisError(a, ndim, fname)
    return a % ndim if ndim else a


def normalize_axes(axis: Any, ndim: int, fname: str) -> tuple[int, ...]:
    """``axis`` (None, int or tuple of ints) as sorted, distinct, non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, tuple | list):
        axes = [normalize_axis(a, ndim, fname) for a in axis]
        if len(set(axes)) != len(axes):
            raise ValueError(f"{fname}: repeated axis in {tuple(axis)}")
        return tuple(sorted(axes))
    return (normalize_axis(axis, ndim, fname),)


def reduced_shape(shape: Sequence[int], axes: Sequence[int], keepdims: bool) -> tuple[int, ...]:
    """The shape left after reducing ``axes`` (kept as size 1 with ``keepdims``)."""
    if keepdims:
        return tuple(1 if k in axes else d for k, d in enumerate(shape))
    return tuple(d for k, d in enumerate(shape) if k not in axes)


def lazy_map(o: Operator, *args: Operand) -> LazyArray:
    """``MapJoin(o, args...)`` with broadcasting (``elementwise.apply_operator``): result
    dtype ``o.result_dtype``, fill value ``o(fills...)``, scalars as typed Immediates."""
    return apply_operator(o, *args)


def astype(x: LazyArray, dtype: Any) -> LazyArray:
    """``x`` cast to ``dtype`` lazily (``x`` itself when it already has it)."""
    d = _dt.as_dtype(dtype)
    if x.dtype == d:
        return x
    return apply_operator(astype_op(d), x, fname="astype")


@dataclass(frozen=True)
class _Reduction:
    """What a reduction of one operator over an operand of one dtype and shape infers: the
    result dtype, the init at it, the result shape, the kept axes' shape and the fill."""

    dtype: np.dtype
    init: Any
    shape: tuple[int, ...]
    kept: tuple[int, ...]
    fill: Any


# ``_Reduction`` by (operator, operand dtype and shape, axes, keepdims, init): a repeated
# expression infers nothing again (issue 34; as ``elementwise._FACTS``). Bounded: cleared
# when full. Threads share it: only ``get``/``[]=``/``clear``, each atomic.
_REDUCTIONS: dict[tuple[Any, ...], _Reduction] = {}
_REDUCTIONS_CAPACITY = 4096


def _reduction(o: Operator, x: LazyArray, axes: Sequence[int], keepdims: bool,
               init: Any) -> _Reduction:
    """``_Reduction`` of ``o`` over ``x``; TypeError when ``o`` has no default init for its
    dtype."""
    if init is None:
        init = o.init_for(x.dtype)
        if init is None:
            raise TypeError(f"{o.name} has no default reduction init for dtype {x.dtype}")
    dtype = aggregate_dtype(o, init, x.dtype)
    init = _dt.scalar_as(init, dtype)
    shape = reduced_shape(x.shape, axes, keepdims)
    kept = reduced_shape(x.shape, axes, False)
    return _Reduction(dtype, init, shape, kept, aggregate_fill(o, init, x.dtype))


def _reduction_key(o: Operator, x: LazyArray, axes: Sequence[int], keepdims: bool,
                   init: Any) -> tuple[Any, ...] | None:
    """The key of ``_REDUCTIONS`` (None: an init whose value cannot key it)."""
    ik = None if init is None else value_key(init)
    if init is not None and ik is None:
        return None
    return (o.name, o.params, x._dtype, x._shape, tuple(axes), keepdims, ik)


def lazy_reduce(o: Operator, x: LazyArray, axes: Sequence[int], keepdims: bool = False,
                init: Any = None) -> LazyArray:
    """``Aggregate(o, init, x, axes)``; ``init`` defaults to the registry's init for x's dtype.

    The result dtype is the registry's aggregate dtype, its fill value ``init``; what they
    infer is cached per (operator, operand signature, axes, init): ``_reduction``.
    """
    key = _reduction_key(o, x, axes, keepdims, init)
    found = _REDUCTIONS.get(key) if key is not None else None
    if found is None:
        found = _reduction(o, x, axes, keepdims, init)
        if key is not None:
            if len(_REDUCTIONS) >= _REDUCTIONS_CAPACITY:
                _REDUCTIONS.clear()
            _REDUCTIONS[key] = found
    # only a vector may be dense (the operand's stored bound, a walk, asked only then)
    dense = len(found.kept) == 1 and reduction_is_dense(found.kept, found.dtype,
                                                        stored_bound(x))
    expr, added = counted_aggregate(o, found.init, x.expr, x.shape, axes, keepdims, dense)
    return LazyArray(expr, found.shape, found.dtype, found.fill, x.device,
                     full=True if dense else None, extent=operands_extent((x,), added))


# an axis reduction's result up to this many entries is dense whatever its operand stores
DENSE_REDUCTION_ENTRIES = 1 << 20
# ... and up to this many times the entries its operand stores
DENSE_REDUCTION_RATIO = 16


def reduction_is_dense(shape: tuple[int, ...], dtype: np.dtype, stored: int) -> bool:
    """Whether an axis reduction's result is a dense vector, as NumPy's and scipy's row and
    column sums are: its entries are data (the fill rule: ``X / xp.sum(X, axis=1)[:, None]``
    keeps ``X``'s pattern even where a row sums to 0), stored dense. A 0-d result is dense
    anyway; a result of two or more axes keeps its operand's sparsity like a contraction
    (``sum(S[:, :, None] * U[:, None, :] * V[None], axis=2)`` is SDDMM); a vector
    with more than ``DENSE_REDUCTION_RATIO`` times the entries its operand stores (and
    past ``DENSE_REDUCTION_ENTRIES``) or
    past the densify limit stays sparse: a column sum of a hypersparse 10⁹-column matrix
    holds only its few nonzero columns."""
    if len(shape) != 1:
        return False
    size = math.prod(shape)
    limit = get_densify_limit()
    return size <= max(DENSE_REDUCTION_ENTRIES, DENSE_REDUCTION_RATIO * stored) and (
        limit is None or size * dtype.itemsize <= limit)


def stored_bound(x: LazyArray) -> int:
    """The most entries any tensor in ``x``'s history stores (its size when dense)."""
    t = x.result
    if t is not None:
        return int(t.nnz)
    return x.largest_stored()  # recorded per array: no walk of the whole history
