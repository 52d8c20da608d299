"""Dropping stored fill values from a result on the host, after a Numba kernel ran
(``compile.planning.stored_fill`` states the rule and the test the kernel applies): a
shared-pattern result compacted when some chunk counted a fill (:func:`drop_stored_fills`),
and a count + fill result's chunks moved together when its fill phase dropped entries the
count phase counted (:func:`compact_chunks`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from lazysparse.formats.compiled.jit import helper_jit
from lazysparse.formats.dtypes import is_nan_scalar
from lazysparse.formats.levels import Compressed, Dense, Singleton


def fill_mask(values: np.ndarray, fill: Any) -> np.ndarray:
    """Which ``values`` equal ``fill`` in the kernels' sense (``same_value``: ``-0.0 ==
    0.0``, NaN equals NaN, for complex a NaN in either part)."""
    if is_nan_scalar(fill):
        return values != values  # noqa: PLR0124 - NaN test, complex parts included
    return values == fill


# ---------------------------------------------------------------------- shared patterns


def compact_levels(levels: list[Any], keep: np.ndarray) -> list[Any] | None:
    """``levels`` with only the last level's positions where ``keep`` (and every ancestor
    position left without children) removed; None when the layout has no such cut (a
    dense level under a sparse one, hashed or bytemap levels: the fills stay stored).
    Dense levels at the top are kept whole (their children's ``ptr`` shrinks)."""
    out = list(levels)
    mask = keep
    k = len(levels) - 1
    while k >= 0:
        lv = levels[k]
        if type(lv) is Singleton:  # its positions are its parent's
            out[k] = Singleton(lv.size, lv.idx[mask])
            k -= 1
            continue
        if type(lv) is not Compressed:
            return None
        ends = np.zeros(mask.size + 1, np.int64)
        np.cumsum(mask, out=ends[1:])
        ptr = ends[lv.ptr]
        idx = lv.idx[mask]
        top = all(isinstance(p, Dense) for p in levels[:k])
        if not top:  # parents left without children go too
            mask = ptr[1:] > ptr[:-1]
            ptr = np.concatenate(([0], ptr[1:][mask]))
        out[k] = Compressed.of_kind(lv.kind, lv.size, ptr.astype(lv.ptr.dtype, copy=False), idx)
        if top:
            return out
        k -= 1
    return out


@helper_jit(nogil=True)
def _compact_rows(ptr, idx, vals, fill, nan_fill, out_ptr, out_idx, out_vals):  # pragma: no cover
    """One pass over a csr-like level: copy the entries whose value is not the fill
    (``fill_mask``'s test), row by row; returns how many were kept."""
    k = 0
    out_ptr[0] = 0
    for r in range(ptr.size - 1):
        for q in range(ptr[r], ptr[r + 1]):
            v = vals[q]
            same = (v != v) if nan_fill else (v == fill)  # noqa: PLR0124 - NaN test
            if not same:
                out_idx[k] = idx[q]
                out_vals[k] = v
                k += 1
        out_ptr[r + 1] = k
    return k


def _drop_from_rows(t: Any) -> tuple[list[Any], np.ndarray] | None:
    """A dense-over-compressed layout (csr, csc) compacted in one compiled pass: its levels
    and values without the fills (``t``'s own when it stores none), or None for another
    layout."""
    levels = list(t.levels)
    if len(levels) != 2 or type(levels[0]) is not Dense or type(levels[1]) is not Compressed:
        return None
    lv, vals = levels[1], np.asarray(t.values)
    out_ptr = np.empty(lv.ptr.size, lv.ptr.dtype)
    out_idx, out_vals = np.empty_like(lv.idx), np.empty_like(vals)
    nan = is_nan_scalar(t.fill_value)
    k = _compact_rows(lv.ptr, lv.idx, vals, vals.dtype.type(0 if nan else t.fill_value), nan,
                      out_ptr, out_idx, out_vals)
    if k == vals.size:
        return levels, vals  # nothing to drop: the caller keeps ``t``
    new = Compressed.of_kind(lv.kind, lv.size, out_ptr, out_idx[:k].copy())
    return [levels[0], new], out_vals[:k].copy()


def drop_stored_fills(t: Any) -> Any:
    """A shared-pattern result ``t`` (a ``formats.Tensor``) without its entries equal to
    the fill: ``t`` itself (still sharing the operand's index arrays) when there are none
    or its layout cannot drop them."""
    from lazysparse.formats.tensor import Tensor

    rows = _drop_from_rows(t)
    if rows is not None:
        if rows[1] is t.values:
            return t
        return Tensor(t.shape, rows[0], t.mode_order, rows[1], t.fill_value, format=t.spec,
                      check=False)
    vals = np.asarray(t.values)
    same = fill_mask(vals, t.fill_value)
    if not same.any():
        return t
    keep = ~same
    levels = compact_levels(list(t.levels), keep)
    if levels is None:
        return t
    return Tensor(t.shape, levels, t.mode_order, vals[keep], t.fill_value, format=t.spec,
                  check=False)


# ---------------------------------------------------------------------- count + fill


def compact_chunks(groups: tuple[tuple[int, ...], ...], offs: list[np.ndarray],
                   fin: list[np.ndarray], arrays: list[Any], vals: np.ndarray
                   ) -> tuple[list[Any], np.ndarray, list[np.ndarray]] | None:
    """After a fill phase that dropped entries the count phase counted: chunk ``t`` wrote
    group ``g``'s entries at ``offs[g][t] .. fin[g][t]`` (absolute); move them together in
    order and shift the ``ptr`` values each chunk wrote for the group below. ``arrays`` is
    per group its ``ptr`` then index arrays (``_count_then_fill``'s layout). Returns the
    compacted arrays, values and each chunk's shift per group (for the first group's
    row ends), or None when every chunk wrote exactly what was counted."""
    ng = len(groups)
    nch = len(fin[0])
    if all(np.array_equal(fin[g], offs[g][1:]) for g in range(ng)):
        return None
    n = [fin[g] - offs[g][:-1] for g in range(ng)]
    new_off = [np.concatenate(([0], np.cumsum(c))).astype(np.int64) for c in n]
    shift = [offs[g][:-1] - new_off[g][:-1] for g in range(ng)]
    out: list[Any] = []
    it = iter(arrays)
    for g, grp in enumerate(groups):
        ptr = next(it)
        idxs = [next(it) for _ in grp]
        if g > 0:  # ptr over group g-1's positions: rows of chunk t shift by group g's
            p = ptr
            ptr = np.zeros(int(new_off[g - 1][-1]) + 1, np.int64)
            for t in range(nch):
                lo, m, nl = int(offs[g - 1][t]), int(n[g - 1][t]), int(new_off[g - 1][t])
                ptr[nl + 1:nl + 1 + m] = p[lo + 1:lo + 1 + m] - shift[g][t]
        out.append(ptr)
        for idx in idxs:
            out.append(_squeeze(idx, offs[g], n[g], new_off[g]))
        if g == ng - 1:
            vals = _squeeze(vals, offs[g], n[g], new_off[g])
    return out, vals, shift


def _squeeze(a: np.ndarray, off: np.ndarray, n: np.ndarray, new_off: np.ndarray
             ) -> np.ndarray:
    """Move chunk ``t``'s ``n[t]`` entries from ``off[t]`` down to ``new_off[t]`` (in order:
    a move never overwrites entries not yet moved), then trim."""
    for t in range(len(n)):
        lo, m, to = int(off[t]), int(n[t]), int(new_off[t])
        if lo != to and m:
            a[to:to + m] = a[lo:lo + m]  # overlapping: NumPy copies as memmove
    return a[:int(new_off[-1])]


def shifted_row_ends(ends: np.ndarray, off0: np.ndarray, shift0: np.ndarray) -> np.ndarray:
    """Row ends the fill phase stored (absolute, in its chunk's region; 0 for rows it did
    not visit) moved with their chunk's entries: an end ``e`` lies in the region of the
    chunk whose offset is the last at or below ``e`` (where two chunks could claim it, their
    shifts agree)."""
    t = np.searchsorted(off0[:-1], ends, side="right") - 1
    return ends - shift0[np.maximum(t, 0)]


__all__ = ["compact_chunks", "compact_levels", "drop_stored_fills", "fill_mask",
           "shifted_row_ends"]
