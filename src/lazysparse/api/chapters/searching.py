"""Array API searching functions: where (``elementwise.where``), count_nonzero (lazy);
argmax, argmin, nonzero, searchsorted (materialized).

argmax/argmin on the CPU compute ``x`` and work on its stored entries
(``api.arg_extremum``: O(nnz log nnz); NaN first and ties to the first index, as NumPy).
On other devices they stay lazy, two aggregates with a Field used as a value (Fig. 23's
``minby`` without tuple values)::

    m      = aggregate(minimum, +inf, x, i)                  # kept as a size-1 axis
    argmin = aggregate(minimum, n, mapjoin(where, mapjoin(isequal, x, m), i, n), i)

whose second pass visits every position (the index differs at each unstored one).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.array.operands import as_operand
from lazysparse.api.array.plan_nodes import access, fresh_field, fresh_fields, identify
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
    reduced_shape,
)
from lazysparse.api.stored import eager
from lazysparse.api.stored.arg_extremum import arg_extremum
from lazysparse.logic import dtypes as _dt
from lazysparse.logic.nodes import Aggregate, Field, Immediate, LogicNode, MapJoin, Relabel, Reorder

_INDEX = _dt.DEFAULT_INT


def _index_value(fields: tuple[Field, ...], shape: tuple[int, ...],
                 axes: tuple[int, ...]) -> LogicNode:
    """The index over ``axes`` as a value: the Field itself, or the row-major flat index."""
    if len(axes) == 1:
        return fields[axes[0]]
    if not axes:  # a 0-d array: its only element is index 0
        return Immediate(_INDEX.type(0))
    mul, add = Immediate(op("multiply")), Immediate(op("add"))
    expr: LogicNode | None = None
    stride = 1
    for a in reversed(axes):
        term: LogicNode = fields[a]
        if stride != 1:
            term = MapJoin(mul, (term, Immediate(_INDEX.type(stride))))
        expr = term if expr is None else MapJoin(add, (term, expr))
        stride *= shape[a]
    assert expr is not None
    return expr


def _arg_extremum(extremum: str, fname: str, x: Any, axis: Any, keepdims: bool) -> LazyArray:
    x = check_array(x, fname)
    o = op(extremum)
    o.check_args(x.dtype, x.dtype)
    axes = tuple(range(x.ndim)) if axis is None else (normalize_axis(axis, x.ndim, fname),)
    n = 1
    for a in axes:
        n *= x.shape[a]
    if n == 0:
        raise ValueError(f"{fname}: attempt to get {fname} of an empty sequence "
                         f"(axis {axis} of shape {x.shape})")
    if x.device.name == "cpu":
        idx = arg_extremum(eager.tensor_of(x), None if axis is None else axes[0],
                           largest=extremum == "maximum")
        if keepdims:
            idx = idx.reshape(reduced_shape(x.shape, axes, True))
        return eager.from_numpy(idx, x.device)
    return lazy_arg_extremum(extremum, x, axes, keepdims)


def lazy_arg_extremum(extremum: str, x: LazyArray, axes: tuple[int, ...],
                      keepdims: bool) -> LazyArray:
    """The lazy two-aggregate form (module docstring), used off the CPU."""
    o = op(extremum)
    n = 1
    for a in axes:
        n *= x.shape[a]
    m = lazy_reduce(o, x, axes, keepdims=True)
    fields = fresh_fields(x.ndim)
    hit = MapJoin(Immediate(op("isequal")),
                  (Relabel(x.expr, fields), access(m.expr, m.shape, fields, x.shape)))
    sentinel = Immediate(_INDEX.type(n))
    cand = MapJoin(Immediate(op("where")), (hit, _index_value(fields, x.shape, axes), sentinel))
    reduced = tuple(fields[a] for a in axes)
    body: LogicNode = Aggregate(Immediate(op("minimum")), sentinel, cand, reduced)
    if keepdims and reduced:
        body = Reorder(body, tuple(fresh_field() if f in reduced else f for f in fields))
    shape = reduced_shape(x.shape, axes, keepdims)
    return LazyArray(identify(body), shape, _INDEX, _INDEX.type(n), x.device)


def argmax(x: Any, /, *, axis: int | None = None, keepdims: bool = False) -> LazyArray:
    """Index of the first maximum along ``axis`` (flat index when ``axis`` is None)."""
    return _arg_extremum("maximum", "argmax", x, axis, keepdims)


def argmin(x: Any, /, *, axis: int | None = None, keepdims: bool = False) -> LazyArray:
    """Index of the first minimum along ``axis`` (flat index when ``axis`` is None)."""
    return _arg_extremum("minimum", "argmin", x, axis, keepdims)


def count_nonzero(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> LazyArray:
    """Number of nonzero entries over ``axis``: ``sum(astype(x != 0, int64))`` (lazy)."""
    x = check_array(x, "count_nonzero")
    axes = normalize_axes(axis, x.ndim, "count_nonzero")
    nz = astype(lazy_map(op("not_equal"), x, 0), _INDEX)
    return lazy_reduce(op("add"), nz, axes, keepdims)


def nonzero(x: Any, /) -> tuple[LazyArray, ...]:
    """Coordinates of the nonzero entries, row-major (computes ``x``).

    Works on the stored entries: stored coordinates whose value is nonzero, plus, when the
    fill value is nonzero, every unstored coordinate (then the result is dense-sized anyway).
    """
    x = check_array(x, "nonzero")
    if x.ndim == 0:
        raise ValueError("nonzero: x must have at least one dimension (got a 0-d array)")
    t = eager.tensor_of(x)
    coords, values = eager.sorted_entries(t)
    nz = np.asarray(op("not_equal").apply(values, values.dtype.type(0)), dtype=bool)
    if not bool(op("not_equal").apply(t.fill_value, t.dtype.type(0))):
        out = tuple(c[nz] for c in coords)
    else:
        eager.check_dense_size(t.shape, np.dtype(bool), "nonzero with a nonzero fill value")
        mask = np.ones(t.shape, dtype=bool)
        zero = ~nz
        mask[tuple(c[zero] for c in coords)] = False
        out = tuple(np.asarray(c, dtype=np.int64) for c in np.nonzero(mask))
    return tuple(eager.from_numpy(c.astype(_INDEX), x.device) for c in out)


def searchsorted(x1: Any, x2: Any, /, *, side: str = "left", sorter: Any = None) -> LazyArray:
    """Insertion indices of ``x2`` into the sorted 1-D ``x1`` (computes both; dense result)."""
    x1 = check_array(x1, "searchsorted", "x1")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-D, got shape {x1.shape}")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    check_kind(x1, "real numeric", "searchsorted", "x1")
    x2 = as_operand(x2, "searchsorted", "x2")
    if isinstance(x2, LazyArray):
        check_kind(x2, "real numeric", "searchsorted", "x2")
        dt = _dt.result_type(x1.dtype, x2.dtype)
        v = eager.to_numpy(x2, "searchsorted").astype(dt)
    elif _dt.is_python_scalar(x2) and not isinstance(x2, bool | complex):
        dt = _dt.result_type(x1.dtype, x2)
        v = np.asarray(_dt.scalar_as(x2, dt))
    else:
        raise TypeError(f"searchsorted: x2 must be a lazysparse array or a real Python scalar, "
                        f"got {type(x2).__name__}")
    a = eager.to_numpy(x1, "searchsorted").astype(dt)
    s = None
    if sorter is not None:
        sorter = check_array(sorter, "searchsorted", "sorter")
        check_kind(sorter, "integral", "searchsorted", "sorter")
        if sorter.shape != x1.shape:
            raise ValueError(f"searchsorted: sorter shape {sorter.shape} != x1 shape {x1.shape}")
        s = eager.to_numpy(sorter, "searchsorted")
    out = np.searchsorted(a, v, side=side, sorter=s)
    return eager.from_numpy(np.asarray(out, dtype=_INDEX), x1.device)


__all__ = ["argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where"]
