"""LazyArray-level plan builders for the computational functions: pointwise maps, casts and
reductions whose result dtype and fill value come from the operator registry.

Everything here stays lazy: it wraps ``building.build_mapjoin`` / ``build_aggregate`` and
returns a new :class:`LazyArray`; nothing is computed.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from lazysparse.api.building import broadcast_shapes, build_aggregate, build_mapjoin
from lazysparse.api.lazy_array import LazyArray
from lazysparse.logic import dtypes as _dt
from lazysparse.logic.nodes import Immediate
from lazysparse.logic.operators import (
    Operator,
    aggregate_dtype,
    aggregate_fill,
    astype_op,
    get_operator,
    mapjoin_fill,
)

Operand = LazyArray | bool | int | float | complex | np.generic


def op(name: str) -> Operator:
    """The registered operator ``name``."""
    return get_operator(name)


def check_array(x: Any, fname: str, arg: str = "x") -> LazyArray:
    """``x`` itself when it is a lazysparse array; TypeError naming ``fname`` otherwise."""
    if not isinstance(x, LazyArray):
        raise TypeError(f"{fname}: {arg} must be a lazysparse array, got {type(x).__name__}")
    return x


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
        raise np.exceptions.AxisError(
            f"{fname}: axis {a} is out of bounds for an array of dimension {ndim}")
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


def _dtype_or_scalar(a: Operand) -> Any:
    return a.dtype if isinstance(a, LazyArray) else a


def _fill_or_scalar(a: Operand) -> Any:
    return a.fill_value if isinstance(a, LazyArray) else a


def _immediate(a: Any, dtype: np.dtype) -> Immediate:
    """A scalar operand as an Immediate of the dtype the op computes it in."""
    return Immediate(_dt.scalar_as(a, dtype))


def lazy_map(o: Operator, *args: Operand) -> LazyArray:
    """``MapJoin(o, args...)`` with broadcasting; scalars become typed Immediates.

    The result dtype is ``o.result_dtype`` and the fill value ``o(fills...)`` (registry).
    """
    arrays = [a for a in args if isinstance(a, LazyArray)]
    if not arrays:
        raise TypeError(f"{o.name}: at least one argument must be a lazysparse array")
    dts = tuple(_dtype_or_scalar(a) for a in args)
    res_dtype = o.result_dtype(*dts)
    operand_dts = o.operand_dtypes(*dts)
    shape = broadcast_shapes(*(a.shape for a in arrays))
    operands: list[Any] = []
    for a, d in zip(args, operand_dts, strict=True):
        if isinstance(a, LazyArray):
            operands.append((a.expr, a.shape))
        else:
            operands.append(_immediate(a, d))
    fill = mapjoin_fill(o, tuple(_fill_or_scalar(a) for a in args))
    expr, _ = build_mapjoin(o, operands, shape)
    return LazyArray(expr, shape, res_dtype, fill, arrays[0].device)


def astype(x: LazyArray, dtype: Any) -> LazyArray:
    """``x`` cast to ``dtype`` lazily (``x`` itself when it already has it)."""
    d = _dt.as_dtype(dtype)
    if x.dtype == d:
        return x
    return lazy_map(astype_op(d), x)


def lazy_reduce(o: Operator, x: LazyArray, axes: Sequence[int], keepdims: bool = False,
                init: Any = None) -> LazyArray:
    """``Aggregate(o, init, x, axes)``; ``init`` defaults to the registry's init for x's dtype.

    The result dtype is the registry's aggregate dtype, its fill value ``init``.
    """
    if init is None:
        init = o.init_for(x.dtype)
        if init is None:
            raise TypeError(f"{o.name} has no default reduction init for dtype {x.dtype}")
    dtype = aggregate_dtype(o, init, x.dtype)
    init = _dt.scalar_as(init, dtype)
    expr = build_aggregate(o, init, x.expr, x.ndim, axes, keepdims)
    fill = aggregate_fill(o, init, x.dtype)
    return LazyArray(expr, reduced_shape(x.shape, axes, keepdims), dtype, fill, x.device)
