"""Building the structured layouts (issue 16) from entries, and choosing their parameters.

Every builder takes the entries of a tensor sorted in its storage order (parent position
under the leading dense levels, then last coordinate) and lays them out in one vectorized
pass: the DIA diagonals, the ELL slots, the BSR blocks or the run-length runs. Explicitly
stored entries stay stored (a fill-valued entry inside a band or block is just a stored
fill), except that runs are formed by value: adjacent equal values share one run.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from lazysparse.formats.config import check_bins, check_densify
from lazysparse.formats.dtypes import choose_index_dtype, equals_fill
from lazysparse.formats.levels import Banded, Blocked, Dense, Ell, Level, Runs
from lazysparse.formats.levels.registry import LEVEL_CLASSES
from lazysparse.formats.specs import FormatSpec
from lazysparse.formats.tensor import Tensor

# block shapes tried when none is given (square first, as scipy's estimate does)
_BLOCK_CANDIDATES = ((8, 8), (6, 6), (4, 4), (3, 3), (2, 2))
_BLOCK_EFFICIENCY = 0.7  # stored fraction of the block entries a chosen block shape keeps


def build_structured(shape: tuple[int, ...], spec: FormatSpec, parent: np.ndarray,
                     coord: np.ndarray, values: np.ndarray, fill: np.generic, *,
                     blocksize: tuple[int, int] | None = None) -> Tensor:
    """A tensor of structured layout ``spec`` from entries sorted by (``parent``: position
    under the leading dense levels, ``coord``: last-level coordinate)."""
    dims = tuple(shape[m] for m in spec.mode_order)
    nparent = int(np.prod(dims[:-1], dtype=np.int64))
    kind, size = spec.level_kinds[-1], dims[-1]
    parent = parent.astype(np.int64, copy=False)
    coord = coord.astype(np.int64, copy=False)
    cls = LEVEL_CLASSES.get(kind)
    if cls is Banded:
        level, vals = _banded(size, parent, coord, values, fill)
    elif cls is Ell:
        level, vals = _ell(size, nparent, shape, parent, coord, values, fill)
    elif cls is Blocked:
        block = blocksize if blocksize is not None else choose_blocksize(dims, parent, coord)
        level, vals = _blocked(dims, parent, coord, values, fill, check_blocksize(block, dims))
    elif cls is Runs:
        level, vals = _runs(size, nparent, shape, parent, coord, values)
    else:
        raise ValueError(f"{spec} has no structured level")
    levels: list[Level] = [Dense(n) for n in dims[:-1]]
    levels.append(level)
    return Tensor(shape, levels, spec.mode_order, vals, fill, format=spec, check=False)


def _banded(size: int, row: np.ndarray, col: np.ndarray, values: np.ndarray,
            fill: np.generic) -> tuple[Banded, np.ndarray]:
    """Diagonals ``col - row`` of the entries, each ``size`` values long (scipy's layout)."""
    diag = col - row
    offsets, which = np.unique(diag, return_inverse=True)
    nbytes = offsets.size * size * values.dtype.itemsize
    check_densify(nbytes, (offsets.size, size), values.dtype, "a DIA's diagonals")
    out = np.full(offsets.size * size, fill, dtype=values.dtype)
    out[which.astype(np.int64) * size + col] = values
    odt = np.int32 if size < np.iinfo(np.int32).max else np.int64
    return Banded(size, offsets.astype(odt), size), out


def _ell(size: int, nparent: int, shape: tuple[int, ...], parent: np.ndarray,
         coord: np.ndarray, values: np.ndarray, fill: np.generic) -> tuple[Ell, np.ndarray]:
    """``width`` = the most entries of a parent; each parent's entries fill its first slots."""
    check_bins(nparent, parent.size, np.int64, f"an ELL's entry count per row ({nparent} rows)")
    counts = np.bincount(parent, minlength=nparent) if parent.size else np.zeros(nparent, int)
    width = int(counts.max()) if counts.size else 0
    slots = nparent * width
    check_densify(slots * (values.dtype.itemsize + 8), (nparent, width), values.dtype,
                  "an ELL's padded slots")
    idt = choose_index_dtype(shape, slots)
    idx = np.full(slots, -1, dtype=idt)
    out = np.full(slots, fill, dtype=values.dtype)
    if parent.size:
        first = np.cumsum(counts) - counts
        rank = np.arange(parent.size, dtype=np.int64) - first[parent]
        q = parent * width + rank
        idx[q] = coord
        out[q] = values
    return Ell(size, width, idx), out


def check_blocksize(block: Any, dims: tuple[int, ...]) -> tuple[int, int]:
    """``block`` as ``(R, C)`` dividing the matrix shape (ValueError naming what does not)."""
    try:
        if isinstance(block, str | bytes) or any(isinstance(b, bool | np.bool_)
                                                  for b in block):
            raise TypeError
        r, c = (operator.index(b) for b in block)  # 2.5 or "2" are no block sizes
    except (TypeError, ValueError) as exc:
        raise TypeError(f"blocksize must be a pair of ints (R, C), got {block!r}") from exc
    if r < 1 or c < 1:
        raise ValueError(f"blocksize must be positive, got {(r, c)}")
    if dims[0] % r or dims[1] % c:
        raise ValueError(f"blocksize {(r, c)} does not divide the shape {dims} (BSR needs "
                         "whole blocks)")
    return r, c


def choose_blocksize(dims: tuple[int, ...], row: np.ndarray, col: np.ndarray
                     ) -> tuple[int, int]:
    """The largest candidate block shape dividing ``dims`` whose blocks are at least 70 %
    stored entries (else ``(1, 1)``)."""
    n = int(row.size)
    for r, c in _BLOCK_CANDIDATES:
        if dims[0] % r or dims[1] % c or n == 0:
            continue
        keys = (row // r) * (dims[1] // c + 1) + col // c
        nblocks = int(np.unique(keys).size)
        if n >= _BLOCK_EFFICIENCY * nblocks * r * c:
            return r, c
    return 1, 1


def _blocked(dims: tuple[int, ...], row: np.ndarray, col: np.ndarray, values: np.ndarray,
             fill: np.generic, block: tuple[int, int]) -> tuple[Blocked, np.ndarray]:
    """The ``R × C`` blocks holding the entries, in block-row-major order (scipy's layout)."""
    r, c = block
    nbr, nbc = dims[0] // r, dims[1] // c
    keys = (row // r) * nbc + col // c
    uniq, which = np.unique(keys, return_inverse=True)
    nbytes = uniq.size * r * c * values.dtype.itemsize
    check_densify(nbytes, (uniq.size, r, c), values.dtype, "a BSR's blocks")
    idt = choose_index_dtype(dims, uniq.size)
    check_bins(nbr + 1, uniq.size, idt, f"a BSR's pointer array over {nbr} block rows")
    ptr = np.zeros(nbr + 1, dtype=idt)
    if uniq.size:
        np.cumsum(np.bincount(uniq // nbc, minlength=nbr), out=ptr[1:])
    out = np.full(uniq.size * r * c, fill, dtype=values.dtype)
    out[(which.astype(np.int64) * r + row % r) * c + col % c] = values
    return Blocked(dims[1], ptr, (uniq % nbc).astype(idt), block), out


def _runs(size: int, nparent: int, shape: tuple[int, ...], parent: np.ndarray,
          coord: np.ndarray, values: np.ndarray) -> tuple[Runs, np.ndarray]:
    """Maximal runs of adjacent coordinates with equal values (NaN equals NaN)."""
    n = int(coord.size)
    start = np.ones(n, dtype=bool)
    if n > 1:
        same = (parent[1:] == parent[:-1]) & (coord[1:] == coord[:-1] + 1)
        same &= _same(values[1:], values[:-1])
        start[1:] = ~same
    first = np.flatnonzero(start)
    last = np.append(first[1:], n)[: first.size] - 1  # no entries: no runs
    idt = choose_index_dtype(shape, first.size)
    check_bins(nparent + 1, first.size, idt,
               f"a run-length pointer array under dense levels of {nparent} parents")
    ptr = np.zeros(nparent + 1, dtype=idt)
    if first.size:
        np.cumsum(np.bincount(parent[first], minlength=nparent), out=ptr[1:])
    level = Runs(size, ptr, coord[first].astype(idt), (coord[last] + 1).astype(idt))
    return level, values[first]


def runs_from_dense(arr: np.ndarray, spec: FormatSpec, fill: np.generic) -> Tensor:
    """A run-length tensor straight from a dense array: runs of equal adjacent values along
    the last stored axis, fill-valued runs left out (O(size), no per-entry coordinates)."""
    stored = np.ascontiguousarray(arr.transpose(spec.mode_order)) if arr.ndim else arr
    dims = stored.shape
    flat = stored.reshape(int(np.prod(dims[:-1], dtype=np.int64)), dims[-1])  # any size 0
    nparent, size = flat.shape
    change = np.ones(flat.shape, dtype=bool)
    if size > 1:
        change[:, 1:] = ~_same(flat[:, 1:], flat[:, :-1])
    keep_fill = ~equals_fill(flat, fill)
    starts = change & keep_fill
    # a run ends before the next change or at the row end
    nxt = np.ones(flat.shape, dtype=bool)
    if size > 1:
        nxt[:, :-1] = change[:, 1:]
    ends = nxt & keep_fill
    prow, pcol = np.nonzero(starts)
    _, ecol = np.nonzero(ends)
    idt = choose_index_dtype(arr.shape, prow.size)
    ptr = np.zeros(nparent + 1, dtype=idt)
    np.cumsum(np.bincount(prow, minlength=nparent), out=ptr[1:])
    level = Runs(size, ptr, pcol.astype(idt), (ecol + 1).astype(idt))
    levels: list[Level] = [Dense(n) for n in dims[:-1]]
    levels.append(level)
    return Tensor(arr.shape, levels, spec.mode_order, flat[prow, pcol], fill, format=spec,
                  check=False)


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise equality with NaN equal to NaN (float and complex)."""
    if a.dtype.kind in "fc":
        return (a == b) | (np.isnan(a) & np.isnan(b))
    return a == b
