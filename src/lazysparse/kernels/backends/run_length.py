"""Run-length execution: queries over run-length ("rle") operands, a run at a time.

A run-length level stores one value per run of equal coordinates (``formats.levels.Runs``),
so an elementwise map or a reduction over it need not visit each coordinate. This host
runner handles the queries whose every operand is such a tensor, read in its own storage
order (no transpose, no broadcast of the run axis):

1. *merge*: per parent row (the leading dense levels, flattened), the run boundaries of
   all operands, plus the row's two ends, split the row into *segments* on which every
   operand is constant: inside one of its runs (its value) or in a gap (its fill). One
   compiled pass (:func:`_segments`) for all rows, linear in the number of runs.
2. *evaluate*: the pointwise tree once per segment, with NumPy over the segments' values
   (``Operator.apply_as``, as :mod:`backends.numpy_executor` does over dense arrays). Where
   co-iteration would skip (outside the tree's region along the run axis,
   ``coiterate.region_of``: an absent operand that annihilates, an absent ``where``
   condition) the segment takes the region's outside value, as the compiled kernels do.
3. *result*: without a reduction, the segments are the result's runs (fill-valued ones
   dropped, equal neighbours merged), or ``np.repeat`` of them for a dense result. A
   reduction over the run axis folds ``m`` copies of a segment's value at once
   (``Operator.fold_repeat``: ``v * m`` for a sum, ``v ** m`` for a product, ``v`` once
   for ``max``/``min``/``and``/``or``), then the segments of each result entry with the
   operator's ufunc (``reduceat``), then ``init``; an epilogue is applied on the result
   as the NumPy executor applies it.

Everything else (transposed or broadcast operands, other formats, reductions over leading
axes only, non-commutative reductions, the coordinate used as a value along the run axis)
goes to the compiled kernels.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from lazysparse.formats.compiled.jit import helper_jit
from lazysparse.formats.compiled.sync import Counters
from lazysparse.formats.config import check_allocation
from lazysparse.formats.conversion.convert import convert
from lazysparse.formats.dtypes import choose_index_dtype, equals_fill
from lazysparse.formats.levels import Dense, Runs
from lazysparse.formats.levels.registry import DENSE_KIND, all_located, is_run_valued
from lazysparse.formats.specs import FormatSpec
from lazysparse.formats.tensor import Tensor
from lazysparse.kernels.backends.numpy_executor import _epilogue
from lazysparse.kernels.compile.planning.analysis import (
    KernelInfo,
    PAccess,
    PApply,
    PConst,
    PField,
    PNode,
    QueryData,
)
from lazysparse.kernels.compile.planning.coiterate import region_of
from lazysparse.kernels.compile.planning.parallel import stored_work
from lazysparse.kernels.compile.planning.regions import ALL, NONE, And, Atom, Known, Or, Region
from lazysparse.kernels.compile.planning.runners import result_spec, rle_slots
from lazysparse.logic.operators import astype_op

# calls of :func:`run_run_length` (tests check that a query ran here)
STATS = Counters("calls")


# ---------------------------------------------------------------------- merge

@helper_jit(nogil=True)
def _single_segments(ptr: np.ndarray, idx: np.ndarray, end: np.ndarray, base: int,
                     size: int, out: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
                     ) -> int:
    """One operand: each row's runs and the gaps between them, into ``out`` = (row
    pointers, starts, lengths, covering run per segment or -1). The segment count."""
    sptr, start, length, runs = out
    k = 0
    for r in range(ptr.shape[0] - 1):
        sptr[r] = k
        pos = 0
        for p in range(ptr[r], ptr[r + 1]):
            a = idx[p]
            if a > pos:
                start[k] = pos
                length[k] = a - pos
                runs[0, k] = -1
                k += 1
            start[k] = a
            length[k] = end[p] - a
            runs[0, k] = p - base
            k += 1
            pos = end[p]
        if pos < size:
            start[k] = pos
            length[k] = size - pos
            runs[0, k] = -1
            k += 1
    return k


@helper_jit(nogil=True)
def _merged_segments(ptr: np.ndarray, idx: np.ndarray, end: np.ndarray, base: np.ndarray,
                     size: int, out: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
                     ) -> int:
    """Several operands: each row cut at every operand's run boundaries, into ``out`` (as
    :func:`_single_segments`, ``runs[s]`` per operand). The segment count."""
    sptr, start, length, runs = out
    nops, nrows = ptr.shape[0], ptr.shape[1] - 1
    q, hi = np.empty(nops, np.int64), np.empty(nops, np.int64)
    # per operand: the next boundary (its run's end or start) and whether inside a run
    nb = np.empty(nops, np.int64)
    k = 0
    for r in range(nrows):
        sptr[r] = k
        for s in range(nops):
            q[s] = ptr[s, r]
            hi[s] = ptr[s, r + 1]
        pos = 0
        while pos < size:
            nxt = size
            for s in range(nops):
                qs = q[s]
                if qs < hi[s]:
                    a = idx[qs]
                    if a <= pos:
                        b = end[qs]
                        runs[s, k] = qs - base[s]
                    else:
                        b = a
                        runs[s, k] = -1
                    nb[s] = b
                    if b < nxt:
                        nxt = b
                else:
                    nb[s] = size
                    runs[s, k] = -1
            start[k] = pos
            length[k] = nxt - pos
            k += 1
            pos = nxt
            for s in range(nops):
                if runs[s, k - 1] >= 0 and nb[s] == pos:
                    q[s] += 1
    return k


@helper_jit(nogil=True)
def _segments(ptr: np.ndarray, idx: np.ndarray, end: np.ndarray, base: np.ndarray,
              size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Split every row ``[0, size)`` at the run boundaries of all operands.

    ``ptr[s, r]``: first run of operand ``s`` in row ``r`` in the concatenated ``idx``/``end``
    (``base[s]``: operand ``s``'s first). Returns the segments' row pointers, starts and
    lengths, and per operand its run covering each segment (local index) or -1 (a gap)."""
    nops, nrows = ptr.shape[0], ptr.shape[1] - 1
    total = 0
    for s in range(nops):
        total += ptr[s, nrows] - ptr[s, 0]
    cap = 2 * total + nrows if size > 0 else 0
    sptr = np.zeros(nrows + 1, np.int64)
    start = np.empty(cap, np.int64)
    length = np.empty(cap, np.int64)
    runs = np.empty((nops, cap), np.int64)
    out = (sptr, start, length, runs)
    k = 0
    if size > 0 and nops == 1:
        k = _single_segments(ptr[0], idx, end, base[0], size, out)
    elif size > 0:
        k = _merged_segments(ptr, idx, end, base, size, out)
    sptr[nrows] = k
    return sptr, start[:k], length[:k], runs[:, :k]


class _Segments:
    """The merged segments of all rows, and each operand's value on each."""

    def __init__(self, info: KernelInfo, data: QueryData, slots: list[int]) -> None:
        order = info.loop_order
        self.lead = [data.extents[f] for f in order[:-1]]
        self.nrows = math.prod(self.lead)
        self.size = data.extents[order[-1]]
        nops = len(slots)
        levels = [data.tensors[s].levels[-1] for s in slots]
        counts = [int(lv.idx.size) for lv in levels]
        base = np.cumsum([0, *counts[:-1]]).astype(np.int64)
        ptr = np.empty((nops, self.nrows + 1), np.int64)
        for j, lv in enumerate(levels):
            ptr[j] = lv.ptr[:self.nrows + 1]
            ptr[j] += base[j]
        if nops == 1:
            idx = levels[0].idx.astype(np.int64, copy=False)
            end = levels[0].end.astype(np.int64, copy=False)
        else:
            idx = np.concatenate([lv.idx.astype(np.int64, copy=False) for lv in levels])
            end = np.concatenate([lv.end.astype(np.int64, copy=False) for lv in levels])
        self.ptr, self.start, self.length, runs = _segments(ptr, idx, end, base, self.size)
        self._runs = runs
        self.slots = slots
        self._present: dict[int, np.ndarray] = {}
        self.values: dict[int, np.ndarray] = {}
        for j, s in enumerate(slots):
            t = data.tensors[s]
            vals = np.asarray(t.values)
            fill = np.asarray(t.fill_value).astype(vals.dtype)
            # index -1 (a gap) reads the appended fill
            self.values[s] = np.append(vals[:counts[j]], fill)[runs[j]]
        self._rows: np.ndarray | None = None

    def present(self, slot: int) -> np.ndarray:
        """Where operand ``slot`` has a run (not a gap)."""
        if slot not in self._present:
            self._present[slot] = self._runs[self.slots.index(slot)] >= 0
        return self._present[slot]

    @property
    def n(self) -> int:
        return int(self.start.size)

    @property
    def rows(self) -> np.ndarray:
        """Each segment's row."""
        if self._rows is None:
            self._rows = np.repeat(np.arange(self.nrows, dtype=np.int64), np.diff(self.ptr))
        return self._rows

    def coordinate(self, k: int) -> np.ndarray:
        """Each segment's coordinate along leading loop field number ``k``."""
        stride = math.prod(self.lead[k + 1:])
        return (self.rows // stride) % self.lead[k]


# ---------------------------------------------------------------------- evaluation

def _evaluate(info: KernelInfo, data: QueryData, seg: _Segments, node: PNode) -> Any:
    """The pointwise tree on every segment (absent operands read as their fill)."""
    match node:
        case PAccess(slot=s):
            if s in seg.values:
                return seg.values[s]
            return _dense_values(info, data, seg, s)
        case PConst(slot=k):
            return data.consts[k]
        case PField(name=name):
            return seg.coordinate(info.loop_order.index(name))
        case PApply(op=op, args=args, operand_dtypes=ods, dtype=dt):
            return op.apply_as(ods, dt, *(_evaluate(info, data, seg, a) for a in args))
    raise TypeError(f"unknown pointwise node {node!r}")


def _dense_values(info: KernelInfo, data: QueryData, seg: _Segments, s: int) -> Any:
    """A dense operand (constant along the run axis) read at each segment's row."""
    t = data.tensors[s]
    fields = [lv.field for lv in info.operands[s].levels]
    vals = np.asarray(t.values)
    if not fields:
        return vals.reshape(-1)[0]
    flat = np.zeros(seg.n, np.int64)
    for f in fields:
        flat = flat * data.extents[f] + seg.coordinate(info.loop_order.index(f))
    return vals[flat]


def _in_region(region: Region, seg: _Segments) -> np.ndarray | bool:
    """Where along the segments ``region`` holds."""
    if region == ALL:
        return True
    if region == NONE:
        return False
    if isinstance(region, Atom):
        return seg.present(region.slot)
    if isinstance(region, And):
        return np.logical_and.reduce([np.asarray(_in_region(p, seg)) for p in region.parts])
    if isinstance(region, Or):
        return np.logical_or.reduce([np.asarray(_in_region(p, seg)) for p in region.parts])
    raise TypeError(f"unknown region {region!r}")


def _segment_values(info: KernelInfo, data: QueryData, seg: _Segments) -> np.ndarray:
    """The tree's value on each segment, the region's outside value where co-iteration
    would skip the segment."""
    dt = np.dtype(info.expr.dtype)  # type: ignore[attr-defined]
    vals = np.asarray(_evaluate(info, data, seg, info.expr))
    if vals.shape != (seg.n,):
        vals = np.broadcast_to(vals, (seg.n,))
    vals = vals.astype(dt, copy=False)
    fills = tuple(t.fill_value for t in data.tensors)
    region, missing = region_of(info.expr, info.loop_order[-1], info, fills,
                                set(seg.slots), set(), data.consts)
    if isinstance(missing, Known):
        inside = _in_region(region, seg)
        if inside is not True:
            out = np.array(vals, copy=True)
            mv = np.asarray(missing.value).astype(dt)[()]
            if inside is False:
                out[...] = mv
            else:
                out[~inside] = mv
            vals = out
    return vals


# ---------------------------------------------------------------------- results

def _runs_tensor(info: KernelInfo, data: QueryData, seg: _Segments, vals: np.ndarray,
                 fill: Any, spec: FormatSpec) -> Tensor:
    """The segments as runs (fill-valued ones dropped, equal neighbours merged), in the
    loop's storage order with layout ``spec``."""
    keep = ~np.asarray(equals_fill(vals, fill), dtype=bool)
    rows, start, length = seg.rows[keep], seg.start[keep], seg.length[keep]
    v = vals[keep]
    stop = start + length
    if v.size > 1:
        same = v[1:] == v[:-1]
        if v.dtype.kind in "fc":
            same |= np.isnan(v[1:]) & np.isnan(v[:-1])
        cont = (rows[1:] == rows[:-1]) & (start[1:] == stop[:-1]) & same
        if cont.any():
            first = np.flatnonzero(np.concatenate(([True], ~cont)))
            last = np.append(first[1:], v.size) - 1
            rows, start, stop, v = rows[first], start[first], stop[last], v[first]
    shape = data.out_shape
    idt = choose_index_dtype(shape, int(v.size))
    ptr = np.zeros(seg.nrows + 1, dtype=idt)
    if v.size:
        np.cumsum(np.bincount(rows, minlength=seg.nrows), out=ptr[1:])
    levels: list[Any] = [Dense(n) for n in seg.lead]
    levels.append(Runs(seg.size, ptr, start.astype(idt), stop.astype(idt)))
    return Tensor(shape, levels, spec.mode_order, np.ascontiguousarray(v), fill,
                  format=spec, check=False)


def _shared_runs(data: QueryData, seg: _Segments, vals: np.ndarray, fill: Any,
                 spec: FormatSpec) -> Tensor | None:
    """A map of one run-length operand whose gaps stay the result's fill: the result has
    the operand's runs (its index arrays shared, as the kernels share a pattern)."""
    if len(seg.slots) != 1:
        return None
    t = data.tensors[seg.slots[0]]
    level = t.levels[-1]
    nruns = int(level.idx.size)
    if (int(level.ptr[0]) != 0 or int(level.ptr[-1]) != nruns
            or np.asarray(t.values).size != nruns):
        return None
    inside = seg.present(seg.slots[0])
    if not np.all(equals_fill(vals[~inside], fill)):
        return None
    return Tensor(data.out_shape, list(t.levels), spec.mode_order,
                  np.ascontiguousarray(vals[inside]), fill, format=spec, check=False)


def _map_result(info: KernelInfo, data: QueryData, seg: _Segments,
                vals: np.ndarray) -> Tensor:
    """The result of an elementwise query, in ``info.out_spec``."""
    od = np.dtype(info.out_dtype)
    vals = vals.astype(od, copy=False)
    fill = np.asarray(data.out_fill).astype(od)[()]
    spec, order = result_spec(info), info.loop_order
    direct = tuple(info.out_fields[m] for m in spec.mode_order) == order
    kinds = spec.level_kinds
    if direct and all_located(kinds):
        check_allocation(math.prod(data.out_shape), od, "a run-length kernel's dense result",
                         within=stored_work(data), shape=data.out_shape)
        stored = np.repeat(vals, seg.length)
        levels = [Dense(data.extents[f]) for f in order]
        return Tensor(data.out_shape, levels, spec.mode_order, stored, fill, format=spec,
                      check=False)
    if direct and is_run_valued(kinds[-1]):
        shared = _shared_runs(data, seg, vals, fill, spec)
        if shared is not None:
            return shared
        return _runs_tensor(info, data, seg, vals, fill, spec)
    mode = tuple(info.out_fields.index(f) for f in order)
    rle = FormatSpec("rle", (DENSE_KIND,) * (len(order) - 1) + (Runs.kind,), mode)
    return convert(_runs_tensor(info, data, seg, vals, fill, rle), spec)


def _group_fold(rop: Any, contrib: np.ndarray, groups: np.ndarray, ngroups: int,
                init: Any, acc: np.dtype) -> np.ndarray:
    """``init ⊕ (⊕ of contrib in group g)`` for every group ``g`` (``groups`` sorted)."""
    ufunc = rop.numpy
    res = np.full(ngroups, init, dtype=acc)
    if contrib.size == 0:
        return res
    starts = np.flatnonzero(np.concatenate(([True], groups[1:] != groups[:-1])))
    with np.errstate(all="ignore"):
        folded = ufunc.reduceat(contrib, starts)
        hit = groups[starts]
        res[hit] = np.asarray(ufunc(res[hit], folded)).astype(acc)
    return res


def _reduce_result(info: KernelInfo, data: QueryData, seg: _Segments,
                   vals: np.ndarray) -> Tensor:
    """The result of a reduction over the run axis (and perhaps leading axes): dense."""
    rop = info.reduce_op
    assert rop is not None
    acc = np.dtype(info.acc_dtype)
    order = info.loop_order
    with np.errstate(all="ignore"):
        v = vals if vals.dtype == acc else np.asarray(astype_op(acc).apply(vals))
        contrib = np.asarray(rop.fold_repeat(v, seg.length)).astype(acc, copy=False)
    # each row's result entry: the row's coordinates along the kept (leading) fields
    kept = [k for k, f in enumerate(order[:-1]) if f not in info.reduced]
    kept_ext = [seg.lead[k] for k in kept]
    if len(kept) == len(seg.lead):
        groups = seg.rows
    else:
        groups = np.zeros(seg.n, np.int64)
        for k in kept:
            groups = groups * seg.lead[k] + seg.coordinate(k)
        if kept != list(range(len(kept))):  # rows of one entry are not adjacent
            perm = np.argsort(groups, kind="stable")
            groups, contrib = groups[perm], contrib[perm]
    init = np.asarray(data.init).astype(acc)[()]
    check_allocation(math.prod(kept_ext), acc, "a run-length reduction's dense result",
                     within=stored_work(data), shape=tuple(kept_ext))
    res = _group_fold(rop, contrib, groups, math.prod(kept_ext), init, acc)
    res = res.reshape(kept_ext)
    kept_fields = [order[k] for k in kept]
    res = np.transpose(res, [kept_fields.index(f) for f in info.out_fields])
    if info.epilogue is not None:
        res = _epilogue(info, data, info.epilogue, np.asarray(res))
    od = np.dtype(info.out_dtype)
    res = np.asarray(res).astype(od)
    spec = result_spec(info)
    fill = np.asarray(data.out_fill).astype(od)[()]
    shape = data.out_shape
    dense = FormatSpec("dense", (DENSE_KIND,) * len(shape), spec.mode_order)
    stored = np.ascontiguousarray(np.transpose(res, spec.mode_order)).reshape(-1)
    levels = [Dense(shape[m]) for m in spec.mode_order]
    t = Tensor(shape, levels, spec.mode_order, stored, fill,
               format=spec if spec.level_kinds == dense.level_kinds else dense, check=False)
    return t if spec.level_kinds == dense.level_kinds else convert(t, spec)


def run_run_length(info: KernelInfo, data: QueryData) -> Tensor:
    """Evaluate a run-length query a segment at a time (see the module docstring)."""
    STATS.bump("calls")
    seg = _Segments(info, data, rle_slots(info, data))
    vals = _segment_values(info, data, seg)
    if info.reduce_op is None:
        return _map_result(info, data, seg, vals)
    return _reduce_result(info, data, seg, vals)


__all__ = ["STATS", "run_run_length"]
