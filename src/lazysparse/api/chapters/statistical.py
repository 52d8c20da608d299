"""Array API statistical functions: sum, prod, max, min, mean, var, std (lazy aggregates)
and cumulative_sum, cumulative_prod (materialized).

Reductions are ``Aggregate`` nodes over the input's expression, so a reduction of a product
(``sum(A[:, :, None] * B[None], axis=1)``) is one aggregate directly over one mapjoin, which
the optimizer fuses into a contraction. Operators, inits and result dtypes come from the
operator registry; the only rule decided here is the standard's default accumulation dtype of
``sum``/``prod`` (small integers accumulate in the default integer dtype).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.building.elementwise import where
from lazysparse.api.building.lazy_plans import (
    astype,
    check_array,
    check_kind,
    lazy_map,
    lazy_reduce,
    normalize_axes,
    normalize_axis,
    op,
)
from lazysparse.api.chapters.fill_folds import reduce_folding_fill
from lazysparse.api.stored import eager
from lazysparse.logic import dtypes as _dt

_DEFAULT_UINT = np.dtype("uint64")


def accumulation_dtype(d: np.dtype, dtype: Any, fname: str) -> np.dtype:
    """The dtype ``sum``/``prod``/``cumulative_*`` compute in: ``dtype`` when given, else
    the default integer for bool/signed ints, ``uint64`` for unsigned ints, ``d`` otherwise."""
    if dtype is not None:
        try:
            return _dt.as_dtype(dtype)
        except TypeError as e:
            raise TypeError(f"{fname}: {e}") from None
    if d == _dt.BOOL or d.kind == "i":
        return _dt.DEFAULT_INT
    if d.kind == "u":
        return _DEFAULT_UINT
    return d


def _reduce_accumulating(name: str, fname: str, x: Any, axis: Any, dtype: Any,
                         keepdims: bool) -> LazyArray:
    x = check_array(x, fname)
    axes = normalize_axes(axis, x.ndim, fname)
    acc = accumulation_dtype(x.dtype, dtype, fname)
    return reduce_folding_fill(op(name), astype(x, acc), axes, keepdims)


def sum(x: Any, /, *, axis: Any = None, dtype: Any = None,  # noqa: A001 - the standard's name
        keepdims: bool = False) -> LazyArray:
    """Sum over ``axis`` (all axes by default): ``Aggregate(add, 0, x, axes)``."""
    return _reduce_accumulating("add", "sum", x, axis, dtype, keepdims)


def prod(x: Any, /, *, axis: Any = None, dtype: Any = None,
         keepdims: bool = False) -> LazyArray:
    """Product over ``axis``: ``Aggregate(multiply, 1, x, axes)``."""
    return _reduce_accumulating("multiply", "prod", x, axis, dtype, keepdims)


def _extremum(name: str, fname: str, x: Any, axis: Any, keepdims: bool) -> LazyArray:
    x = check_array(x, fname)
    axes = normalize_axes(axis, x.ndim, fname)
    o = op(name)
    o.check_args(x.dtype, x.dtype)
    if any(x.shape[a] == 0 for a in axes):
        # NumPy's wording: Dask recognizes it when it reduces a 0-size meta array
        raise ValueError(f"{fname}: zero-size array to reduction operation {name} which has "
                         f"no identity (axes {axes} of an array of shape {x.shape})")
    return reduce_folding_fill(o, x, axes, keepdims)


def max(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> LazyArray:  # noqa: A001
    """Maximum over ``axis``: ``Aggregate(maximum, dtype_min, x, axes)`` (NaN propagates)."""
    return _extremum("maximum", "max", x, axis, keepdims)


def min(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> LazyArray:  # noqa: A001
    """Minimum over ``axis``: ``Aggregate(minimum, dtype_max, x, axes)`` (NaN propagates)."""
    return _extremum("minimum", "min", x, axis, keepdims)


def _count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def _float_input(x: Any, fname: str, kind: str) -> LazyArray:
    """``x`` checked numeric; integers are computed in the default floating dtype."""
    x = check_array(x, fname)
    check_kind(x, "numeric", fname)
    if not _dt.isdtype(x.dtype, kind):
        if _dt.isdtype(x.dtype, "integral"):
            return astype(x, _dt.DEFAULT_FLOAT)
        raise TypeError(f"{fname}: x has dtype {x.dtype}, expected a {kind} dtype")
    return x


def mean(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> LazyArray:
    """Arithmetic mean: ``sum(x) / n`` (NaN for an empty reduction; ints compute in float64)."""
    x = _float_input(x, "mean", "floating-point")
    axes = normalize_axes(axis, x.ndim, "mean")
    total = lazy_reduce(op("add"), x, axes, keepdims)
    return lazy_map(op("divide"), total, _count(x.shape, axes))


def var(x: Any, /, *, axis: Any = None, correction: int | float = 0.0,
        keepdims: bool = False) -> LazyArray:
    """Variance: ``sum((x - mean)**2) / (n - correction)``, all lazy (two fusable reductions).
    """
    x = _float_input(x, "var", "real floating")
    if isinstance(correction, bool) or not isinstance(correction, int | float | np.number):
        raise TypeError(f"var: correction must be a number, got {type(correction).__name__}")
    axes = normalize_axes(axis, x.ndim, "var")
    n = _count(x.shape, axes)
    m = mean(x, axis=axes, keepdims=True)
    d = lazy_map(op("subtract"), x, m)
    sq = lazy_map(op("square"), d)  # d read once: stays fused into the masked sum
    f = x.fill_value
    if x.full or f is None or not np.isfinite(f):
        ss = lazy_reduce(op("add"), sq, axes, keepdims)
    else:  # sparse: stored entries' squares, then the implicit ones' (f - mean)**2 at once
        stored = lazy_map(op("not_equal"), x, f.item())  # a literal: x's pattern, not dense
        ss = lazy_reduce(op("add"), where(stored, sq, 0.0), axes, keepdims)
        implicit = lazy_map(op("subtract"), float(n), lazy_reduce(
            op("add"), astype(stored, x.dtype), axes, keepdims))
        mk = mean(x, axis=axes, keepdims=keepdims)
        df = lazy_map(op("subtract"), mk, f)
        ss = lazy_map(op("add"), ss, lazy_map(op("multiply"), implicit,
                                              lazy_map(op("multiply"), df, df)))
    return lazy_map(op("divide"), ss, float(n - correction))


def std(x: Any, /, *, axis: Any = None, correction: int | float = 0.0,
        keepdims: bool = False) -> LazyArray:
    """Standard deviation: ``sqrt(var(x))``."""
    return lazy_map(op("sqrt"), var(x, axis=axis, correction=correction, keepdims=keepdims))


def _cumulative(name: str, fname: str, x: Any, axis: Any, dtype: Any,
                include_initial: bool) -> LazyArray:
    x = check_array(x, fname)
    if x.ndim == 0:
        raise ValueError(f"{fname}: x must have at least one dimension (got a 0-d array)")
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{fname}: axis is required for an array of {x.ndim} dimensions")
        axis = 0
    ax = normalize_axis(axis, x.ndim, fname)
    acc = accumulation_dtype(x.dtype, dtype, fname)
    o = op(name)
    o.check_args(acc, acc)
    dense = eager.to_numpy(astype(x, acc), fname)
    fn = np.cumulative_sum if name == "add" else np.cumulative_prod
    with np.errstate(all="ignore"):
        out = fn(dense, axis=ax, dtype=acc, include_initial=include_initial)
    return eager.from_numpy(out, x.device)


def cumulative_sum(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: bool = False) -> LazyArray:
    """Cumulative sum along ``axis`` (materializes ``x``; the result is dense)."""
    return _cumulative("add", "cumulative_sum", x, axis, dtype, include_initial)


def cumulative_prod(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: bool = False) -> LazyArray:
    """Cumulative product along ``axis`` (materializes ``x``; the result is dense)."""
    return _cumulative("multiply", "cumulative_prod", x, axis, dtype, include_initial)


__all__ = ["cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var"]
