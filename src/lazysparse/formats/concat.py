"""Structural concatenation of stored tensors: pointer offsets and copies, never coordinates.

Two joins cover the compressed formats (``concat`` in the api picks them):

- **outer**: along the first stored axis (``mode_order[0]``: csr's rows, csc's columns, coo's
  and csf's leading axis, any 1-d vector). The operands' positions follow one another, so
  each level's arrays are the operands' arrays one after the other: the first level's
  coordinates shifted by the running axis size, every lower level's pointers by the running
  position count. Memory speed (``np.concatenate``-like copies into one output each).
- **inner**: a 2-d (dense, compressed) matrix along its compressed axis (csr's columns, csc's
  rows): each output row holds the operands' rows one after the other, their coordinates
  shifted by the running axis size; the output pointers are the sum of the operands'. One
  linear pass per operand (a small Numba kernel); ordered rows stay ordered.

:func:`concat_tensors` converts the operands to the layout :func:`join_layout` names for the
join (sparse to sparse), and the result to the asked layout. :func:`with_leading_axis` gives a
tensor a new leading axis of length 1 from its own arrays (what ``stack`` joins).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any

import numpy as np

from lazysparse.formats.compiled.jit import helper_jit
from lazysparse.formats.compiled.sortkernels import as_words
from lazysparse.formats.compiled.sortnumpy import append_rows, sorts_on_numpy
from lazysparse.formats.conversion.convert import convert
from lazysparse.formats.dtypes import choose_index_dtype
from lazysparse.formats.levels import Compressed, Dense, Level, Singleton
from lazysparse.formats.levels.registry import (
    ARRAY_KINDS,
    COO_LAYOUT,
    DENSE_KIND,
    NONUNIQUE_KIND,
    PLAIN_KIND,
    ROW_LAYOUT,
    UNORDERED_KIND,
    all_located,
    is_located,
)
from lazysparse.formats.specs import FormatSpec, format_spec
from lazysparse.formats.tensor import Tensor

# level kinds whose arrays join by offset and copy: ARRAY_KINDS; the 2-d layouts an inner
# join runs in: ROW_LAYOUT (dense, compressed) in either mode order, COO_LAYOUT, and rows
# whose columns are unordered
_UNORDERED_ROWS = (DENSE_KIND, UNORDERED_KIND)


class Join(Enum):
    """How operands of one layout are joined along an axis."""

    OUTER = "outer"  # along the first stored axis: offsets and copies
    INNER = "inner"  # along a 2-d matrix's compressed axis: a merge per row


def join_layout(spec: FormatSpec, axis: int) -> tuple[Join, FormatSpec] | None:
    """How a result of layout ``spec`` is joined along ``axis``, and the layout the join runs
    in (the result converts from it when it differs); None when no structural join applies
    (hashed, bytemap, structured levels; csf or dcsr along an inner axis)."""
    kinds = spec.level_kinds
    if not kinds or any(k not in ARRAY_KINDS for k in kinds) or all_located(kinds):
        return None
    if axis == spec.mode_order[0]:
        return Join.OUTER, spec
    if len(kinds) == 2 and kinds in (ROW_LAYOUT, COO_LAYOUT, _UNORDERED_ROWS):
        work = spec if is_located(kinds[0]) else format_spec(
            "csr" if spec.mode_order == (0, 1) else "csc", 2)
        return Join.INNER, work
    return None


def concat_tensors(tensors: Sequence[Tensor], axis: int, dtype: np.dtype, fill: Any,
                   spec: FormatSpec) -> Tensor | None:
    """``tensors`` (sparse, one fill value) joined along ``axis`` into layout ``spec``, values
    in ``dtype``; None when :func:`join_layout` finds no structural join (the caller joins
    coordinates instead). Operands in other layouts are converted first (sparse to sparse)."""
    plan = join_layout(spec, axis)
    if plan is None:
        return None
    join, work = plan
    parts = [convert(t, work) for t in tensors]
    shape = list(parts[0].shape)
    shape[axis] = sum(t.shape[axis] for t in parts)
    if join is Join.OUTER:
        out = _join_outer(parts, tuple(shape), axis, dtype, fill, work)
    else:
        out = _join_inner(parts, tuple(shape), axis, dtype, fill, work)
    return out if work == spec else convert(out, spec)


def _positions(t: Tensor) -> list[int]:
    """Number of positions of each of ``t``'s levels (the last one's: values' length)."""
    counts, npos = [], 1
    for lv in t.levels:
        npos = lv.npositions(npos)
        counts.append(npos)
    return counts


def _join_outer(parts: list[Tensor], shape: tuple[int, ...], axis: int, dtype: np.dtype,
                fill: Any, spec: FormatSpec) -> Tensor:
    """Outer join (module docstring): per level, the operands' arrays one after the other."""
    pos = [_positions(t) for t in parts]
    largest = max((sum(p[k] for p in pos) for k in range(len(spec.level_kinds))), default=0)
    itype = choose_index_dtype(shape, largest)
    levels: list[Level] = []
    for k, first in enumerate(parts[0].levels):
        size = shape[spec.mode_order[k]]
        if isinstance(first, Dense):
            levels.append(Dense(size))
        elif isinstance(first, Singleton):
            levels.append(Singleton(size, _joined([t.levels[k].idx for t in parts], None, itype)))
        elif k == 0:  # one parent: a pointer pair around the shifted coordinates
            assert isinstance(first, Compressed)
            idx = _joined([t.levels[0].idx for t in parts],
                          np.cumsum([0] + [t.shape[axis] for t in parts[:-1]]), itype)
            ptr = np.array([0, idx.size], dtype=itype)
            levels.append(_compressed_like(first, size, ptr, idx))
        else:  # parents follow one another: pointers shifted by the positions before
            assert isinstance(first, Compressed)
            levels.append(_compressed_like(
                first, size, _joined_ptr([t.levels[k].ptr for t in parts], itype),
                _joined([t.levels[k].idx for t in parts], None, itype)))
    values = _joined([t.values for t in parts], None, dtype)
    return Tensor(shape, levels, spec.mode_order, values, fill, format=spec, check=False)


def _compressed_like(level: Compressed, size: int, ptr: np.ndarray,
                     idx: np.ndarray) -> Compressed:
    """A compressed level of ``level``'s kind over ``size`` coordinates and these arrays."""
    return Compressed(size, ptr, idx, unique=level.unique, ordered=level.ordered)


def _joined(arrays: list[np.ndarray], offsets: Any, dtype: np.dtype) -> np.ndarray:
    """``arrays`` one after the other in one new ``dtype`` array, ``arrays[k]`` plus
    ``offsets[k]`` (no offsets: copied as they are)."""
    out = np.empty(sum(int(a.size) for a in arrays), dtype=dtype)
    start = 0
    for k, a in enumerate(arrays):
        stop = start + int(a.size)
        off = 0 if offsets is None else int(offsets[k])
        if off:
            np.add(a, dtype.type(off), out=out[start:stop], casting="unsafe")
        else:
            out[start:stop] = a
        start = stop
    return out


def _joined_ptr(ptrs: list[np.ndarray], dtype: np.dtype) -> np.ndarray:
    """Pointer arrays of parents that follow one another: ``ptrs[0]``, then each next one
    without its leading 0, shifted by the positions before it."""
    out = np.empty(1 + sum(int(p.size) - 1 for p in ptrs), dtype=dtype)
    out[0] = 0
    start, base = 1, 0
    for p in ptrs:
        stop = start + int(p.size) - 1
        if base:
            np.add(p[1:], dtype.type(base), out=out[start:stop], casting="unsafe")
        else:
            out[start:stop] = p[1:]
        base += int(p[-1])
        start = stop
    return out


def _join_inner(parts: list[Tensor], shape: tuple[int, ...], axis: int, dtype: np.dtype,
                fill: Any, spec: FormatSpec) -> Tensor:
    """Inner join (module docstring) of (dense, compressed) matrices: output pointers are the
    sum of the operands'; each operand's rows are appended behind the rows before it."""
    nnz = sum(int(t.values.size) for t in parts)
    itype = choose_index_dtype(shape, nnz)
    ptr = np.zeros(shape[spec.mode_order[0]] + 1, dtype=itype)
    for t in parts:
        np.add(ptr, t.levels[1].ptr, out=ptr, casting="unsafe")
    cursor = ptr[:-1].copy()
    out_idx = np.empty(nnz, dtype=itype)
    out_vals = np.empty(nnz, dtype=dtype)
    words = as_words(out_vals)
    off = 0
    for t in parts:
        low = t.levels[1]
        assert isinstance(low, Compressed)
        vals = t.values if t.values.dtype == dtype else t.values.astype(dtype)
        append = append_rows if sorts_on_numpy(low.ptr.size + low.idx.size) else _append_rows
        append(low.ptr, low.idx, as_words(vals), itype.type(off), cursor, out_idx, words)
        off += t.shape[axis]
    first = parts[0].levels[1]
    assert isinstance(first, Compressed)
    levels = [Dense(shape[spec.mode_order[0]]),
              _compressed_like(first, shape[axis], ptr, out_idx)]
    return Tensor(shape, levels, spec.mode_order, out_vals, fill, format=spec, check=False)


def with_leading_axis(t: Tensor) -> Tensor | None:
    """``t`` with a new leading axis of length 1, from its own arrays, in the layout a stack
    gives it: coo stays coo (the new coordinate, 0, per entry), csf gets a compressed level
    over the new coordinate on top, csr (a csc converted to it) becomes csf: its rows are
    compressed to the non-empty ones. None for other layouts (the caller computes an
    ``expand_dims`` instead)."""
    kinds, order, name = t.spec.level_kinds, t.mode_order, "csf"
    if t.spec.name == "coo" and kinds[0] in (PLAIN_KIND, NONUNIQUE_KIND):
        top = t.levels[0]
        assert isinstance(top, Compressed)
        itype = top.idx.dtype
        levels: list[Level] = [
            Compressed(1, np.array([0, top.idx.size], itype), np.zeros(top.idx.size, itype),
                       unique=False),
            Singleton(top.size, top.idx), *t.levels[1:]]
        name = "coo"
    elif kinds and all(k == PLAIN_KIND for k in kinds):
        top = t.levels[0]
        assert isinstance(top, Compressed)
        levels = [*_one_coordinate(top), *t.levels[1:]]
    elif kinds == ROW_LAYOUT:
        t = convert(t, format_spec("csr", 2))
        levels, order = _nonempty_rows(t), (0, 1)
    else:
        return None
    order = (0, *(m + 1 for m in order))
    return Tensor((1, *t.shape), levels, order, t.values, t.fill_value,
                  format=format_spec(name, t.ndim + 1, order), check=False)


def _one_coordinate(top: Compressed) -> list[Compressed]:
    """A compressed level storing coordinate 0 (when ``top`` stores anything) over ``top``
    re-pointed to that one parent."""
    itype = top.idx.dtype
    if top.idx.size:
        return [Compressed(1, np.array([0, 1], itype), np.zeros(1, itype)), top]
    empty = np.zeros(0, itype)
    return [Compressed(1, np.zeros(2, itype), empty), _compressed_like(top, top.size, top.ptr[:1],
                                                                        empty)]


def _nonempty_rows(t: Tensor) -> list[Level]:
    """csr ``t``'s levels as csf's under a new leading coordinate: its non-empty rows become
    a compressed level, its column level points from them."""
    low = t.levels[1]
    assert isinstance(low, Compressed)
    ptr = low.ptr
    rows = np.flatnonzero(ptr[1:] != ptr[:-1]).astype(ptr.dtype)
    row_level = Compressed(t.shape[0], np.array([0, rows.size], ptr.dtype), rows)
    col_ptr = np.empty(rows.size + 1, ptr.dtype)
    col_ptr[0] = 0
    np.take(ptr[1:], rows, out=col_ptr[1:])
    return [*_one_coordinate(row_level), Compressed(t.shape[1], col_ptr, low.idx)]


@helper_jit(nogil=True)
def _append_rows(ptr, idx, vals, offset, cursor, out_idx, out_vals):  # pragma: no cover
    # row r's entries go to out[cursor[r]:], coordinates shifted by offset; cursor advances.
    # ptr/idx may be int32 or int64 whatever out_idx is (no converted copies of them)
    for r in range(ptr.size - 1):
        c = cursor[r]
        for q in range(ptr[r], ptr[r + 1]):
            out_idx[c] = idx[q] + offset
            out_vals[c] = vals[q]
            c += 1
        cursor[r] = c


__all__ = ["Join", "concat_tensors", "join_layout", "with_leading_axis"]
