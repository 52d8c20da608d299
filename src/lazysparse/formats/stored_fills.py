"""A tensor without its stored fill values: the entries equal to the fill dropped from a
shared-pattern result (:func:`drop_stored_fills`, one compiled pass for csr/csc, a mask
over the last level otherwise). The kernels' host compacts results with it
(``kernels.compile.planning.stored_fill`` states the rule); the API drops the fills a
copy of a kept value would carry (``api.array.held_regions``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from lazysparse.formats.compiled.jit import helper_jit
from lazysparse.formats.dtypes import is_nan_scalar
from lazysparse.formats.levels import Compressed, Dense, Singleton
from lazysparse.formats.tensor import Tensor


def fill_mask(values: np.ndarray, fill: Any) -> np.ndarray:
    """Which ``values`` equal ``fill`` in the kernels' sense (``same_value``: ``-0.0 ==
    0.0``, NaN equals NaN, for complex a NaN in either part)."""
    if is_nan_scalar(fill):
        return values != values  # noqa: PLR0124 - NaN test, complex parts included
    return values == fill


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


__all__ = ["compact_levels", "drop_stored_fills", "fill_mask"]
