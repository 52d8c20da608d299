"""Lazy views: size-1 axes added or dropped, and basic indexing of uncomputed arrays.

A size-1 axis (``x[:, None]``, ``expand_dims``, ``reshape`` that only adds or drops unit
axes) is a ``Reorder`` over the array's expression that lists a field no access indexes: no
copy, no new table, and no loop in any kernel (the field has extent 1). Computing such a
view of stored data is a view of that data (``computing.stored_view``).

Indexing by integers, slices and one 1-D index array (applied axis by axis) of an array that
is not computed yet is pushed down to the stored tensors its expression reads
(:func:`index_lazy`): ``(A + B)[2:5]`` reads rows 2..4 of ``A`` and ``B``, ``(A + B)[idx]``
their rows ``idx``, and the result stays one lazy, fusable expression. Stored tensors are
indexed by walking their levels (:func:`index_tensor`, ``formats.select``). Selection
commutes with every Finch-Logic node but one: a ``Field`` used as a value (the loop index,
as in ``tril``), whose meaning a new origin would change; such expressions are computed
first, as is data on a GPU.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from lazysparse.api.array.devices import is_device_tensor
from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.array.materialize import stored_tensor, unit_source
from lazysparse.api.array.materialize import stored_view as stored_view
from lazysparse.api.array.plan_nodes import fresh_alias, fresh_field, fresh_fields, identify
from lazysparse.api.stored.selection import locate
from lazysparse.formats import Tensor
from lazysparse.formats import tensor_ops as T
from lazysparse.formats.select import select
from lazysparse.logic.fields import getfields
from lazysparse.logic.nodes import (
    Aggregate,
    Field,
    Immediate,
    LogicNode,
    MapJoin,
    Reformat,
    Relabel,
    Reorder,
    Subquery,
    Table,
)

# one axis's selection: an integer (the axis goes away), a normalized range, or a 1-D int64
# array of in-bounds coordinates (any order, repeats allowed; orthogonal to other axes)
Selection = int | range | np.ndarray


def unit_view(x: LazyArray, shape: tuple[int, ...]) -> LazyArray:
    """``x`` with size-1 axes added or removed so it has ``shape`` (same non-1 extents in
    the same order): a ``Reorder`` whose new fields no access indexes. A view of a view is
    one view of the first one's source."""
    src = unit_source(x)
    expr, src_shape = src if src is not None else (x.expr, x.shape)
    f = fresh_fields(len(src_shape))
    kept = iter([fi for fi, d in zip(f, src_shape, strict=True) if d != 1])
    out = tuple(fresh_field() if d == 1 else next(kept) for d in shape)
    body = Reorder(Relabel(expr, f), out)
    return LazyArray(identify(body), shape, x.dtype, x.fill_value, x.device)


# ---------------------------------------------------------------- NumPy's strides

# Which reshape NumPy makes a view depends on the strides of the array reshaped. A view
# records the strides (in elements) NumPy's view would have (``LazyArray.view_of``); any
# other array is C-ordered.


def c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """C-order strides (in elements) of ``shape``."""
    out, step = [], 1
    for d in reversed(shape):
        out.append(step)
        step *= max(d, 1)
    return tuple(reversed(out))


def strides_of(x: LazyArray) -> tuple[int, ...]:
    """``x``'s strides in elements as NumPy would have them (C order unless a view)."""
    strides = x._strides  # noqa: SLF001 - recorded by view_of
    return strides if strides is not None else c_strides(x.shape)


def indexed_strides(x: LazyArray, items: list[Any]) -> tuple[int, ...]:
    """The strides of ``x[items]`` (normalized basic items, one per axis plus ``None``s):
    integers drop their axis, a slice's step multiplies it, a new axis has stride 0."""
    out: list[int] = []
    axes = iter(zip(x.shape, strides_of(x), strict=True))
    for k in items:
        if k is None:
            out.append(0)
            continue
        n, s = next(axes)
        if isinstance(k, slice):
            out.append(s * k.indices(n)[2])
    return tuple(out)


def reshaped_strides(x: LazyArray, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The strides of NumPy's reshape of ``x`` to ``shape`` (same size) when it is a view,
    None when NumPy copies: NumPy's rule (``_attempt_nocopy_reshape``, C order): a
    C-contiguous or empty array always reshapes in place; otherwise each group of old
    axes merged or split must be contiguous. Axes of size 1 have no say."""
    strides = strides_of(x)
    if math.prod(x.shape) == 0 or strides == c_strides(x.shape) or _c_contiguous(
            x.shape, strides):
        return c_strides(shape)
    old = [(d, s) for d, s in zip(x.shape, strides, strict=True) if d != 1]
    new = list(shape)
    out = [0] * len(new)
    oi = ni = 0
    while ni < len(new) and oi < len(old):
        nj, oj = ni + 1, oi + 1
        np_, op = new[ni], old[oi][0]
        while np_ != op:
            if np_ < op:
                np_ *= new[nj]
                nj += 1
            else:
                op *= old[oj][0]
                oj += 1
        if any(old[k][1] != old[k + 1][0] * old[k + 1][1] for k in range(oi, oj - 1)):
            return None  # the old axes merged here are not contiguous
        out[nj - 1] = old[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            out[k - 1] = out[k] * new[k]
        ni, oi = nj, oj
    last = out[ni - 1] if ni else 1
    for k in range(ni, len(new)):
        out[k] = last  # trailing size-1 axes
    return tuple(out)


def _c_contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether ``strides`` lay ``shape`` out in C order (size-1 axes aside)."""
    step = 1
    for d, s in zip(reversed(shape), reversed(strides), strict=True):
        if d != 1:
            if s != step:
                return False
            step *= d
    return True


# ---------------------------------------------------------------- basic indexing


def _slice_of(r: range) -> slice:
    """The slice selecting ``r`` (a normalized range: a negative stop means "past 0")."""
    if not r:
        return slice(0, 0)
    return slice(r.start, r.stop if r.stop >= 0 else None, r.step)


def index_tensor(t: Tensor, items: list[Selection]) -> Tensor:
    """Stored ``t`` indexed by one selection per axis, orthogonally (integers drop their
    axis; ranges and integer arrays renumber it in their order): a copy for dense data (the
    result owns it); for sparse data the selected parts only, found by walking its levels
    (``formats.select``: time and memory proportional to the selected rows' pointers and
    entries), or one element located by binary search. Layouts the walk does not handle
    (hashed, structured, coo's reversed columns) filter their stored coordinates."""
    if T.is_dense(t):
        return T.dense(_dense_select(t.to_numpy(), items), None)
    if all(isinstance(k, int) for k in items):
        pos = int(locate(t, np.array(items, dtype=np.int64).reshape(-1, 1))[0])
        value = t.values[pos] if pos >= 0 else t.fill_value
        return T.dense(np.array(value, dtype=t.dtype), t.fill_value)
    out = select(t, list(items))
    if out is not None:
        return out
    return T.apply_eager(t, np.asarray, lambda c, v, shape: _coords_select(c, v, shape, items))


def _dense_select(a: np.ndarray, items: list[Selection]) -> np.ndarray:
    """``a`` indexed orthogonally by ``items``: integers and ranges as one basic index (a
    view), then each integer array along its axis (a copy; always one at the end)."""
    basic = tuple(k if isinstance(k, int) else _slice_of(k) if isinstance(k, range)
                  else slice(None) for k in items)
    out = a[basic]
    axis = 0
    for k in items:
        if isinstance(k, int):
            continue
        if isinstance(k, np.ndarray):
            out = np.take(out, k, axis=axis)
        axis += 1
    return np.array(out)


def _coords_select(c: np.ndarray, v: np.ndarray, shape: tuple[int, ...],
                   items: list[Selection]) -> tuple[tuple[int, ...], np.ndarray, np.ndarray]:
    """Stored coordinates ``c`` / values ``v`` selected orthogonally by ``items``: integers
    and ranges filter and renumber; an integer array repeats each entry once per index
    naming its coordinate (sorted index, ``searchsorted``)."""
    keep = np.ones(c.shape[1], dtype=bool)
    for ci, k in zip(c, items, strict=True):
        if isinstance(k, int):
            keep &= ci == k
        elif isinstance(k, range):
            q, r = np.divmod(ci - k.start, k.step)
            keep &= (r == 0) & (q >= 0) & (q < len(k))
    c, v = c[:, keep], v[keep]
    for axis, k in enumerate(items):
        if isinstance(k, range):
            c[axis] = (c[axis] - k.start) // k.step
        elif isinstance(k, np.ndarray):
            order = np.argsort(k, kind="stable")
            lo = np.searchsorted(k[order], c[axis], "left")
            counts = np.searchsorted(k[order], c[axis], "right") - lo
            starts = np.repeat(lo - np.cumsum(counts) + counts, counts)
            ent = np.repeat(np.arange(c.shape[1]), counts)
            c, v = c[:, ent], v[ent]
            c[axis] = order[np.arange(ent.size) + starts]
    rows = [c[axis] for axis, k in enumerate(items) if not isinstance(k, int)]
    new_shape = tuple(len(k) for k in items if not isinstance(k, int))
    coords = np.array(rows, dtype=np.int64).reshape(len(new_shape), -1)
    return new_shape, coords, v


class _NotPushable(Exception):
    """The selection cannot move below this node (a loop index used as a value, GPU data)."""


class _Pusher:
    """Moves a per-field selection down an expression to its tables (one push, memoized
    per shared subquery so a DAG stays a DAG)."""

    def __init__(self) -> None:
        self.memo: dict[tuple[int, tuple[Any, ...]], LogicNode] = {}
        self.fields: dict[int, tuple[Field, ...]] = {}

    def fields_of(self, node: LogicNode) -> tuple[Field, ...]:
        key = id(node)
        if key not in self.fields:
            self.fields[key] = getfields(node)
        return self.fields[key]

    def push(self, node: LogicNode, sel: dict[Field, Selection]) -> LogicNode:
        match node:
            case Immediate():
                return node
            case Field():
                if node in sel:
                    raise _NotPushable
                return node
            case Table(tns=Immediate(val=t), idxs=idxs):
                return self.table(t, idxs, sel)
            case Subquery():
                return self.subquery(node, sel)
            case Relabel(arg=arg, idxs=idxs):
                inner = self.fields_of(arg)
                sub = {g: sel[f] for g, f in zip(inner, idxs, strict=True) if f in sel}
                return Relabel(self.push(arg, sub), _kept(idxs, sel))
            case Reorder(arg=arg, idxs=idxs):
                inner = set(self.fields_of(arg))
                for f in idxs:
                    s = sel.get(f)
                    if f not in inner and not isinstance(s, int | None) and len(s) != 1:
                        raise _NotPushable  # a size-1 axis selected empty or repeated
                sub = {f: s for f, s in sel.items() if f in inner}
                return Reorder(self.push(arg, sub), _kept(idxs, sel))
            case MapJoin(op=op, args=args):
                return MapJoin(op, tuple(self.push(a, self.restrict(a, sel)) for a in args))
            case Aggregate(op=op, init=init, arg=arg, idxs=idxs):
                return Aggregate(op, init, self.push(arg, sel), idxs)
            case Reformat(tns=tns, arg=arg):
                new = self.push(arg, sel)
                return new if any(isinstance(s, int) for s in sel.values()) else \
                    Reformat(tns, new)
        raise _NotPushable

    def restrict(self, node: LogicNode, sel: dict[Field, Selection]) -> dict[Field, Selection]:
        if isinstance(node, Immediate):
            return {}
        own = set(self.fields_of(node))
        return {f: s for f, s in sel.items() if f in own}

    def table(self, t: Any, idxs: tuple[Field, ...], sel: dict[Field, Selection]) -> LogicNode:
        if is_device_tensor(t):
            raise _NotPushable
        if not any(f in sel for f in idxs):
            return Table(Immediate(t), idxs)
        items = [sel.get(f, range(n)) for f, n in zip(idxs, t.shape, strict=True)]
        return Table(Immediate(index_tensor(t, items)), _kept(idxs, sel))

    def subquery(self, node: Subquery, sel: dict[Field, Selection]) -> LogicNode:
        own = self.fields_of(node.arg)
        if not sel:
            return node
        key = (id(node), tuple(_hashable(sel.get(f)) for f in own))
        if key not in self.memo:
            t = stored_tensor(node)
            if t is not None:
                arg: LogicNode = self.table(t, own, sel)
            else:
                arg = self.push(node.arg, sel)
            self.memo[key] = Subquery(fresh_alias(), arg)
        return self.memo[key]


def _hashable(s: Selection | None) -> Any:
    """A memo key for one field's selection (an index array by identity: one push holds
    each array it moves)."""
    return ("array", id(s)) if isinstance(s, np.ndarray) else s


def _kept(idxs: tuple[Field, ...], sel: dict[Field, Selection]) -> tuple[Field, ...]:
    return tuple(f for f in idxs if not isinstance(sel.get(f), int))


def index_lazy(x: LazyArray, items: list[Any]) -> LazyArray | None:
    """``x[items]`` (integers, slices, ``None`` and at most one 1-D integer array of
    in-bounds coordinates, selecting orthogonally; normalized, one per axis plus the new
    ones) for an uncomputed ``x``, as a lazy expression whose tables are the selected parts
    of the stored inputs. None when the selection cannot be pushed down (see module doc)."""
    f = fresh_fields(x.ndim)
    sel: dict[Field, Selection] = {}
    it = iter(zip(f, x.shape, strict=True))
    out: list[Field] = []
    shape: list[int] = []
    for k in items:
        if k is None:
            out.append(fresh_field())
            shape.append(1)
            continue
        fi, n = next(it)
        if isinstance(k, slice):
            r = range(*k.indices(n))
            if r != range(n):
                sel[fi] = r
            out.append(fi)
            shape.append(len(r))
        elif isinstance(k, np.ndarray):
            sel[fi] = k
            out.append(fi)
            shape.append(int(k.size))
        else:
            sel[fi] = int(k)
    try:
        body = _Pusher().push(Relabel(x.expr, f), sel)
    except _NotPushable:
        return None
    if tuple(out) != _kept(f, sel):
        body = Reorder(body, tuple(out))
    return LazyArray(identify(body), tuple(shape), x.dtype, x.fill_value, x.device)
