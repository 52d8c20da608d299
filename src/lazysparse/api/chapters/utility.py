"""Array API utility functions: all, any (lazy aggregates) and diff (computed).

``all``/``any`` are ``Aggregate(logical_and, True, x)`` / ``Aggregate(logical_or, False, x)``.
``diff`` needs shifted views, which Finch-Logic cannot express (slicing is not a logic
node), so it computes ``x``: a dense input (or one with ``prepend``/``append``) goes through
NumPy; a sparse one is differenced on its stored entries: an output position is stored only
when one of its two inputs is, every other output is ``fill - fill``.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.array.operands import as_operand
from lazysparse.api.building.lazy_plans import check_array, normalize_axes, normalize_axis, op
from lazysparse.api.chapters.fill_folds import reduce_folding_fill
from lazysparse.api.stored import eager
from lazysparse.logic import dtypes as _dt


def all(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> LazyArray:  # noqa: A001
    """Whether every element over ``axis`` is true (nonzero); True for empty reductions."""
    x = check_array(x, "all")
    return reduce_folding_fill(op("logical_and"), x, normalize_axes(axis, x.ndim, "all"),
                               keepdims, init=np.bool_(True))


def any(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> LazyArray:  # noqa: A001
    """Whether some element over ``axis`` is true (nonzero); False for empty reductions."""
    x = check_array(x, "any")
    return reduce_folding_fill(op("logical_or"), x, normalize_axes(axis, x.ndim, "any"),
                               keepdims, init=np.bool_(False))


def _edge(v: Any, x: LazyArray, axis: int, what: str) -> np.ndarray:
    """``prepend``/``append`` (an array or a Python scalar) as a NumPy array of ``x``'s
    shape along the other axes."""
    v = as_operand(v, "diff", what)
    if isinstance(v, LazyArray):
        if v.ndim != x.ndim:
            raise ValueError(f"diff: {what} must have {x.ndim} dimensions, got {v.ndim}")
        return eager.to_numpy(v, "diff")
    shape = list(x.shape)
    shape[axis] = 1
    return np.full(shape, _dt.scalar_as(v, _dt.result_type(x.dtype, v)))


def _diff_sparse(coords: tuple[np.ndarray, ...], values: np.ndarray, shape: tuple[int, ...],
                 fill: np.generic, axis: int) -> tuple[tuple[np.ndarray, ...], np.ndarray,
                                                       tuple[int, ...], np.generic]:
    """One first difference along ``axis`` on stored entries (values and fill)."""
    sub = op("subtract")
    out_shape = tuple(d - 1 if k == axis else d for k, d in enumerate(shape))
    out_fill = sub.apply(fill, fill)
    if values.size == 0 or out_shape[axis] == 0:
        return tuple(np.zeros(0, np.int64) for _ in shape), sub.apply(values, values)[:0], \
            out_shape, out_fill
    flat = np.ravel_multi_index(coords, shape)
    order = np.argsort(flat)
    flat, vals = flat[order], values[order]
    c = coords[axis][order]
    step = int(np.prod(shape[axis + 1:], dtype=np.int64))
    # outputs touched: position i where input i or i+1 is stored (flat index of input i)
    cand = np.concatenate([flat[c < shape[axis] - 1], flat[c > 0] - step])
    cand = np.unique(cand)

    def lookup(f: np.ndarray) -> np.ndarray:
        k = np.clip(np.searchsorted(flat, f), 0, flat.size - 1)
        found = flat[k] == f
        return np.where(found, vals[k], fill)

    diff = sub.apply(lookup(cand + step), lookup(cand))
    in_coords = np.unravel_index(cand, shape)
    return tuple(np.asarray(a, np.int64) for a in in_coords), np.asarray(diff), out_shape, \
        out_fill


def diff(x: Any, /, *, axis: int = -1, n: int = 1, prepend: Any = None,
         append: Any = None) -> LazyArray:
    """The ``n``-th discrete difference along ``axis`` (computes ``x``)."""
    x = check_array(x, "diff")
    if x.ndim == 0:
        raise ValueError("diff: x must have at least one dimension (got a 0-d array)")
    if isinstance(n, bool) or not isinstance(n, int | np.integer):
        raise TypeError(f"diff: n must be an int, got {type(n).__name__}")
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"diff: n must be non-negative, got {n}")
    ax = normalize_axis(axis, x.ndim, "diff")
    if x.dtype == _dt.BOOL:
        raise TypeError("diff: x must have a numeric dtype, got bool")
    t = eager.tensor_of(x)
    if prepend is not None or append is not None or eager.is_dense(t) or n == 0:
        parts = [eager.to_numpy(x, "diff")]
        if prepend is not None:
            parts.insert(0, _edge(prepend, x, ax, "prepend"))
        if append is not None:
            parts.append(_edge(append, x, ax, "append"))
        a = np.concatenate(parts, axis=ax) if len(parts) > 1 else parts[0]
        with np.errstate(all="ignore"):
            return eager.from_numpy(np.diff(a, n=n, axis=ax), x.device)
    coords, values = eager.stored_entries(t)
    shape, fill = t.shape, t.fill_value
    for _ in range(n):
        if shape[ax] == 0:
            break
        with np.errstate(all="ignore"):
            coords, values, shape, fill = _diff_sparse(coords, values, shape, fill, ax)
    return eager.from_coords(coords, values, shape, fill, x.device)


__all__ = ["all", "any", "diff"]
