"""The stored form of a value computed unasked keeps its implicit region (docs/api.md, "The
fill rule").

A compute that keeps a held value (``api.array.held_values``) stores it for every later
plan to read as a table; so does a materialization the library makes for its own use (a
write, an eager function's operand, a conversion: ``materialize.compute_arrays`` with
``keep_regions``). The value is an expression with an implicit region (``P = A @ B``
is its fill, 0, wherever no product reached), and later reads depend on that region: ``P @
D`` with ``D`` holding inf is 0 there (the implicit 0 annihilates), ``P / D`` is 0 where
``D`` is 0. A dense table has no implicit region, so a kept value stored in the dense
format the optimizer picks for a dense-looking product would turn those reads into IEEE's
NaN. Each such value that has a region is therefore computed into a sparse layout keeping
every entry it reaches (``FormatSpec.keeps_fills``: a sum that cancels to 0 stays stored,
as in the plan that reads it lazily); a result that reached every entry is stored dense
afterwards (:func:`dense_when_full`: no region, nothing lost). A copy of it returned in
a format asked for stores no fills (:func:`copied_without_fills`), as every computed sparse
result; an array read by the user (``nnz``, ``np.asarray``) is computed as ``xp.compute``
computes it, an eager function's operand (``reshape``, ``concat``) keeps its region.

The region is known without computing (``logic.inference.infer_region``) and is often
empty: a product of one stored sparse matrix with dense operands reaches every coordinate
of an axis it keeps from that matrix when no slice of the matrix along it is empty (CG's
``Ap = A @ p`` for a matrix without an empty row), read off the matrix's degree vector
(``formats.statistics``, kept once per tensor). Such values keep the optimizer's choice, so
solver loops run the kernels they ran before. The layout is part of the plan (a
``Reformat``), so a plan cache entry is never reused across the two cases.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from lazysparse.api.array.live import live_array
from lazysparse.api.array.memo import memoized
from lazysparse.formats.dtypes import same_value
from lazysparse.formats.levels.registry import DENSE_KIND, PLAIN_KIND
from lazysparse.formats.specs import FormatSpec, infer_spec
from lazysparse.formats.statistics import statistics
from lazysparse.formats.stored_fills import drop_stored_fills, fill_mask
from lazysparse.formats.tensor import Tensor
from lazysparse.logic.inference import infer_region
from lazysparse.logic.nodes import (
    Aggregate,
    Immediate,
    LogicNode,
    MapJoin,
    Reformat,
    Relabel,
    Reorder,
    Subquery,
    Table,
)
from lazysparse.logic.operators import Operator

if TYPE_CHECKING:
    from lazysparse.api.array.lazy_array import LazyArray

Region = tuple[Any, bool]


def region_layout(arr: LazyArray) -> FormatSpec | None:
    """The layout a compute stores the held ``arr`` in so its implicit region survives
    (row-major sparse levels keeping every reached entry), or None when ``arr`` has no
    region (dense, or every entry reached: see the module docstring), is 0-d (one entry, no
    sparse layout), or asked for a format of its own."""
    if arr._requested_format is not None or isinstance(arr._expr.arg, Reformat) or \
            not arr.shape or arr.full:
        return None  # a layout of its own (``asformat``) decides, as the user asked
    if infer_region(arr._expr.arg, _known)[1]:
        return None
    n = len(arr.shape)
    kinds = (DENSE_KIND,) + (PLAIN_KIND,) * (n - 1) if n > 1 else (PLAIN_KIND,)
    return infer_spec(kinds, tuple(range(n))).keeping_fills()


def dense_when_full(tensor: Tensor | Any) -> Tensor | Any:
    """A kept value stored in a region layout, dense when it stores every entry (it has no
    implicit region then, so the dense form reads the same, and faster)."""
    if not isinstance(tensor, Tensor) or tensor.full or \
            int(tensor.nnz) != int(np.prod(tensor.shape)):
        return tensor  # a device tensor stays as its backend wrote it
    return tensor.asformat("dense")


def copied_without_fills(arr: LazyArray, tensor: Tensor | Any) -> Tensor | Any:
    """The result of ``arr``, asked for in a layout of its own (``asformat``) in a compute
    that kept a value in a region layout: a copy of that kept value would carry the entries
    it keeps equal to the fill, which no computed sparse result stores (scipy's counts)."""
    if not isinstance(tensor, Tensor) or tensor.full or not (
            arr._requested_format is not None or isinstance(arr._expr.arg, Reformat)):
        return tensor
    out = drop_stored_fills(tensor)
    if out is tensor and fill_mask(np.asarray(tensor.values), tensor.fill_value).any():
        # a layout the compaction cannot rewrite in place (hashed, structured): through COO
        out = drop_stored_fills(tensor.asformat("coo")).asformat(tensor.spec)
    return out


def _known(node: LogicNode) -> Region | None:
    """The region a later plan sees for ``node`` when known without looking inside: a
    stored or computed subquery's tensor, a live array's recorded region, an aggregate that
    reaches every entry (:func:`_reaches_all`); None: look inside."""
    if isinstance(node, Subquery):
        arr = live_array(node)  # its region is recorded (and cached per stored levels)
        if arr is not None and arr._fill_value is not None and arr._expr is node:
            return arr._fill_value, arr.full
        t = _stored(node)
        if t is not None:
            return np.asarray(t.fill_value)[()], bool(getattr(t, "full", True))
        return None
    if isinstance(node, Aggregate) and _reaches_all(node):
        return node.init.val, True  # type: ignore[attr-defined]
    return None


def _stored(node: Subquery) -> Tensor | None:
    """The tensor a leaf or computed subquery stands for, else None."""
    if isinstance(node.arg, Table) and isinstance(node.arg.tns, Immediate):
        return node.arg.tns.val
    return memoized(node.lhs)


def _is_op(node: LogicNode, name: str) -> bool:
    """Whether ``node`` is the immediate operator ``name``."""
    return isinstance(node, Immediate) and isinstance(node.val, Operator) and \
        node.val.name == name


def _reaches_all(agg: Aggregate) -> bool:
    """Whether the sum of products ``agg`` reaches every entry of its result: it multiplies
    one stored sparse tensor of fill 0 by full operands, and keeps at most one axis of that
    tensor, along which no slice is empty (or none, and the tensor stores an entry)."""
    arg = agg.arg.arg if isinstance(agg.arg, Reorder) else agg.arg
    if not (_is_op(agg.op, "add") and isinstance(agg.init, Immediate)
            and same_value(agg.init.val, 0) and isinstance(arg, MapJoin)
            and _is_op(arg.op, "multiply")):
        return False
    sparse = [x for x in arg.args if not infer_region(x, _known)[1]]
    if len(sparse) != 1:
        return False
    axes = _stored_axes(sparse[0])
    if axes is None:
        return False
    t, fields = axes
    if not isinstance(t, Tensor) or not same_value(t.fill_value, 0):
        return False
    reduced = {f.name for f in agg.idxs}
    kept = [k for k, f in enumerate(fields) if f.name not in reduced]
    if not kept:
        return int(t.nnz) > 0
    return len(kept) == 1 and statistics(t).covers(kept[0])


def _stored_axes(node: LogicNode) -> tuple[Tensor, tuple[Any, ...]] | None:
    """A stored tensor an operand reads and the field of each of its axes: a relabeled
    stored subquery, or one of its transposes (a reorder of it); else None."""
    if not isinstance(node, Relabel) or not isinstance(node.arg, Subquery):
        return None
    sq, idxs = node.arg, node.idxs
    t = _stored(sq)
    if t is not None:
        return t, tuple(idxs)
    inner = sq.arg
    if isinstance(inner, Reorder) and isinstance(inner.arg, Relabel) and \
            isinstance(inner.arg.arg, Subquery) and (t := _stored(inner.arg.arg)) is not None:
        f, g = inner.arg.idxs, inner.idxs
        if set(f) != set(g) or len(g) != len(idxs) or len(g) != len(f):
            return None
        # output axis j of the subquery is the tensor's axis f.index(g[j])
        out: list[Any] = [None] * len(f)
        for j, field in enumerate(g):
            out[f.index(field)] = idxs[j]
        return t, tuple(out)
    return None


__all__ = ["copied_without_fills", "dense_when_full", "region_layout"]
