"""Dropping stored fill values from a count + fill result on the host, after a Numba kernel
ran (``compile.planning.stored_fill`` states the rule and the test the kernel applies): the
chunks moved together when the fill phase dropped entries the count phase counted
(:func:`compact_chunks`). A shared-pattern result is compacted by
``formats.stored_fills.drop_stored_fills``."""

from __future__ import annotations

from typing import Any

import numpy as np


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


__all__ = ["compact_chunks", "shifted_row_ends"]
