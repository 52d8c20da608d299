"""Format-to-format conversion and construction from coordinates (vectorized NumPy + Numba)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from lazysparse.formats.assemble import build_tensor, expand, merge_duplicates, sort_coords
from lazysparse.formats.compiled.sortkernels import (
    ptr_from_sorted,
    scatter_by_key,
    segment_repeats,
    sort_segments,
    stable_order,
    sum_runs,
    transpose_compressed,
)
from lazysparse.formats.conversion.numpy_arrays import from_numpy, to_numpy
from lazysparse.formats.dtypes import check_dtype, choose_index_dtype, equals_fill, normalize_fill
from lazysparse.formats.levels import Blocked, Compressed, Dense
from lazysparse.formats.levels.registry import (
    COO_LAYOUT,
    DENSE_KIND,
    PLAIN_KIND,
    ROW_LAYOUT,
    all_located,
    is_run_valued,
    level_class,
)
from lazysparse.formats.ordering import ordered, unordered_as
from lazysparse.formats.specs import FormatSpec, format_spec, is_structured
from lazysparse.formats.structured import build_structured, check_blocksize, runs_from_dense
from lazysparse.formats.tensor import Tensor
from lazysparse.formats.validation.inputs import as_index_array, check_range, check_shape


def as_tensor(obj: Any) -> Tensor:
    """``obj`` as a Tensor: a Tensor, or anything with ``__lazysparse_tensor__()``."""
    if isinstance(obj, Tensor):
        return obj
    method = getattr(obj, "__lazysparse_tensor__", None)
    if method is not None:
        t = method()
        if not isinstance(t, Tensor):
            raise TypeError(
                f"{type(obj).__name__}.__lazysparse_tensor__() returned "
                f"{type(t).__name__}, not a lazysparse Tensor"
            )
        return t
    raise TypeError(
        f"expected a lazysparse Tensor (or an object with __lazysparse_tensor__), "
        f"got {type(obj).__name__}"
    )


def convert(
    t: Any,
    format: str | FormatSpec,
    *,
    mode_order: tuple[int, ...] | None = None,  # noqa: A002
) -> Tensor:
    """``t`` stored in ``format`` (a name or FormatSpec), same values and fill value.

    Entries stored explicitly stay stored, except that fill-valued entries at the positions
    of a last Dense level (which enumerates every coordinate) are dropped when the target is
    sparse; a CSR's explicit zeros survive in its CSC, COO or transposed copies alike.
    """
    t = as_tensor(t)
    spec = format_spec(format, t.ndim, mode_order)
    if spec == t.spec:
        return t
    if is_structured(spec):
        return to_structured(t, spec)
    if not t.spec.ordered:  # sort only here, where a layout change or order is asked for
        return convert(ordered(t), spec)
    if not spec.ordered:
        return unordered_as(convert(t, spec.ordered_spec()), spec)
    if spec.level_kinds == t.spec.level_kinds and spec.mode_order == t.mode_order:
        return Tensor(
            t.shape, t.levels, t.mode_order, t.values, t.fill_value, format=spec, check=False
        )
    source_dense = bool(t.levels) and isinstance(t.levels[-1], Dense)
    if all_located(spec.level_kinds) or all(isinstance(level, Dense) for level in t.levels):
        return from_numpy(to_numpy(t), spec, t.fill_value)
    fast = _convert_2d(t, spec)
    if fast is not None:
        return fast
    coords, values = expand(t)
    if source_dense:
        keep = ~equals_fill(values, t.fill_value)
        coords, values = [c[keep] for c in coords], values[keep]
    src = t.mode_order
    target = [coords[src.index(m)] for m in spec.mode_order]
    dims = tuple(t.shape[m] for m in spec.mode_order)
    coords, values = _sort_to(target, dims, values, _sorted_from(src, spec.mode_order))
    return build_tensor(t.shape, spec, coords, values, t.fill_value)


def to_structured(t: Any, spec: FormatSpec | str, *,
                  blocksize: tuple[int, int] | None = None) -> Tensor:
    """``t`` in a structured layout (dia, bsr, ell, rle): its entries in storage order laid
    out by :mod:`formats.structured` (``blocksize``: bsr's block shape, else chosen)."""
    t = as_tensor(t)
    spec = format_spec(spec, t.ndim)
    if blocksize is None and spec == t.spec:
        return t
    if is_run_valued(spec.level_kinds[-1]) and all(isinstance(lv, Dense) for lv in t.levels):
        return runs_from_dense(to_numpy(t), spec, t.fill_value)
    rows = (DENSE_KIND,) * (t.ndim - 1) + (PLAIN_KIND,)
    src = convert(t, FormatSpec("custom", rows, spec.mode_order))
    coords, values = expand(src)
    dims = tuple(t.shape[m] for m in spec.mode_order)
    parent = np.zeros(values.size, dtype=np.int64)
    for c, d in zip(coords[:-1], dims[:-1], strict=True):
        parent *= d
        parent += c
    last = coords[-1] if coords else np.zeros(values.size, dtype=np.int64)
    return build_structured(t.shape, spec, parent, last, values, t.fill_value,
                            blocksize=blocksize)


def asformat(t: Tensor, format: str | FormatSpec,  # noqa: A002 - the target format
             mode_order: tuple[int, ...] | None = None, *,
             blocksize: tuple[int, int] | None = None) -> Tensor:
    """``t`` in ``format`` (``Tensor.asformat``): :func:`convert`, or with ``blocksize``
    a ``"bsr"`` result of that block shape."""
    if blocksize is None:
        return convert(t, format, mode_order=mode_order)
    spec = format_spec(format, t.ndim, mode_order)
    if not spec.level_kinds or level_class(spec.level_kinds[-1]) is not Blocked:
        raise ValueError(f"blocksize is for format 'bsr' only, got format {spec.name!r}")
    block = check_blocksize(blocksize, t.shape)
    if isinstance(t.levels[-1], Blocked) and t.levels[-1].block == block:
        return t
    return to_structured(t, spec, blocksize=block)


def _sorted_from(source_order: tuple[int, ...], target_order: tuple[int, ...]) -> int:
    """Smallest ``j`` such that a stable sort of entries in source order by target levels
    ``0..j-1`` puts them in target order.

    Among entries that agree on those levels' axes the source order is lexicographic by its
    remaining axes, in source order; that must be target levels ``j..``. (A transpose of a
    matrix: ``j == 1``, one counting pass by the new major coordinate.)
    """
    n = len(target_order)
    for j in range(n):
        keyed = set(target_order[:j])
        if [m for m in source_order if m not in keyed] == list(target_order[j:]):
            return j
    return n


# bins per entry up to which levels are sorted together in one counting pass by a combined key
_BINS_PER_ENTRY = 8


def _sort_to(
    coords: list[np.ndarray], dims: tuple[int, ...], values: np.ndarray, j: int
) -> tuple[list[np.ndarray], np.ndarray]:
    """Entries (already sorted in source order) stably sorted by levels ``0..j-1``.

    One counting pass by the levels' combined key (row-major over their sizes) when its
    bins stay within a few per entry, as a transpose's single level always does when it is
    not hypersparse; otherwise an LSD radix sort, one pass per level.
    """
    n = int(values.size)
    if j == 0 or n < 2:
        return coords, values
    nbins = math.prod(dims[:j])
    if nbins > _BINS_PER_ENTRY * n + 4096:
        return sort_coords(coords, dims, values, j)
    key = coords[0]
    if j > 1:
        kdt = np.int32 if nbins <= np.iinfo(np.int32).max else np.int64
        key = coords[0].astype(kdt)
        for c, d in zip(coords[1:j], dims[1:j], strict=True):
            key *= d
            key += c
    perm = stable_order(key, nbins)
    del key
    return [c[perm] for c in coords], values[perm]


def _convert_2d(t: Tensor, spec: FormatSpec) -> Tensor | None:
    """Linear-time paths to a (dense, compressed) 2-D target, or None when none applies."""
    if spec.level_kinds != ROW_LAYOUT:
        return None
    a, b = spec.mode_order
    kinds, order = t.spec.level_kinds, t.mode_order
    top, low = t.levels
    n_a = t.shape[a]
    if kinds in (ROW_LAYOUT, (PLAIN_KIND, PLAIN_KIND)) and order == (b, a):
        assert isinstance(low, Compressed)
        major = top.idx if isinstance(top, Compressed) else np.arange(top.size, dtype=low.idx.dtype)
        ptr = low.ptr
        if ptr.dtype != low.idx.dtype:
            ptr = ptr.astype(low.idx.dtype)
        out_ptr, out_idx, out_vals = transpose_compressed(ptr, low.idx, major, t.values, n_a)
    elif kinds == COO_LAYOUT:
        first, second = top.idx, low.idx
        if order == (a, b):
            out_ptr = ptr_from_sorted(first, n_a, first.dtype)
            out_idx, out_vals = second, t.values
        else:
            out_ptr, out_idx, out_vals = scatter_by_key(second, n_a, first, t.values)
    else:
        return None
    levels = [Dense(n_a), Compressed(t.shape[b], out_ptr, out_idx)]
    return Tensor(
        t.shape, levels, spec.mode_order, out_vals, t.fill_value, format=spec, check=False
    )


def from_coords(
    coords: Any,
    values: Any,
    shape: Any,
    *,
    format: str | FormatSpec = "coo",  # noqa: A002
    fill_value: Any = 0,
    mode_order: tuple[int, ...] | None = None,
    sum_duplicates: bool = False,
) -> Tensor:
    """A tensor from coordinates ``coords[axis][entry]`` in any order and one value per entry."""
    shape = check_shape(shape)
    vals = np.asarray(values)
    dt = check_dtype(vals.dtype, "from_coords values")
    vals = vals.astype(dt, copy=False)
    if vals.ndim != 1:
        raise ValueError(f"values must be 1-D (one per entry), got shape {vals.shape}")
    n = int(vals.size)
    axes = _coord_arrays(coords, len(shape), n)
    for axis, c in enumerate(axes):
        check_range(c, shape[axis], f"from_coords axis {axis}")
    fill = normalize_fill(fill_value, dt)
    spec = format_spec(format, len(shape), mode_order)
    idt = choose_index_dtype(shape, n)
    stored = [axes[m].astype(idt, copy=False) for m in spec.mode_order]
    dims = tuple(shape[m] for m in spec.mode_order)
    if len(shape) == 2 and n and (spec.level_kinds == ROW_LAYOUT
                                  or dims[0] <= _BINS_PER_ENTRY * n + 4096):
        # a counting sort by the major coordinate; a hypersparse one (bins, a pointer per
        # row, would dwarf the entries) sorts by comparison below, in memory O(n)
        return _from_pairs_2d(shape, spec, stored, vals, fill, sum_duplicates)
    stored, vals = sort_coords(stored, dims, vals, len(shape))
    stored, vals = merge_duplicates(stored, vals, sum_duplicates, spec.mode_order)
    return build_tensor(shape, spec, stored, vals, fill, what="from_coords")


def _from_pairs_2d(
    shape: tuple[int, ...],
    spec: FormatSpec,
    stored: list[np.ndarray],
    vals: np.ndarray,
    fill: np.generic,
    sum_duplicates: bool,
) -> Tensor:
    """2-D from unsorted pairs: counting sort by the major key, then sort each short segment."""
    dims = tuple(shape[m] for m in spec.mode_order)
    idt = stored[0].dtype
    ptr, minor, v = scatter_by_key(stored[0], dims[0], stored[1], vals)
    sort_segments(ptr, minor, v)
    first, repeats = segment_repeats(ptr, minor)
    if repeats and not sum_duplicates:
        q = int(np.flatnonzero(~first)[0])
        at = [0, 0]
        at[spec.mode_order[0]] = int(np.searchsorted(ptr, q, side="right")) - 1
        at[spec.mode_order[1]] = int(minor[q])
        raise ValueError(
            f"duplicate coordinates {tuple(at)} ({repeats} repeated entries); pass "
            "sum_duplicates=True to add repeated entries"
        )
    if repeats:
        ptr, minor, v = sum_runs(ptr, minor, v)
    if spec.level_kinds == ROW_LAYOUT:
        levels = [Dense(dims[0]), Compressed(dims[1], ptr, minor)]
        return Tensor(shape, levels, spec.mode_order, v, fill, format=spec, check=False)
    rows = np.repeat(np.arange(dims[0], dtype=idt), np.diff(ptr))
    return build_tensor(shape, spec, [rows, minor], v, fill, what="from_coords")


def _coord_arrays(coords: Any, ndim: int, n: int) -> list[np.ndarray]:
    """One 1-D integer array per axis, each with ``n`` entries (ValueError otherwise)."""
    if isinstance(coords, np.ndarray):
        if coords.ndim != 2 and not (coords.ndim == 1 and ndim == 1):
            raise ValueError(f"coords must have shape (ndim, nnz), got {coords.shape}")
        arrays = list(coords) if coords.ndim == 2 else [coords]
        if coords.ndim == 2 and coords.shape[0] != ndim:
            raise ValueError(f"coords has {coords.shape[0]} rows, but shape has {ndim} axes")
    else:
        arrays = list(coords)
    if len(arrays) != ndim:
        raise ValueError(f"coords has {len(arrays)} axes, but shape has {ndim}")
    out = []
    for axis, c in enumerate(arrays):
        arr = as_index_array(c, f"coords[{axis}]")
        if arr.size != n:
            raise ValueError(
                f"coords[{axis}] has {arr.size} entries but values has {n} (mismatched lengths)"
            )
        out.append(arr)
    return out
