"""Validation of the structured levels (banded, ELL, blocked, run-length): vectorized
checks with messages naming the first offending entry."""

from __future__ import annotations

import numpy as np

from lazysparse.formats.levels import Banded, Blocked, Compressed, Ell, Level, Runs
from lazysparse.formats.validation.inputs import check_compressed, check_range


def check_structured(level: Level, parent_npos: int, dims: tuple[int, ...], what: str) -> int:
    """Validate a structured last level under ``parent_npos`` positions; its position count."""
    if isinstance(level, Banded):
        return _check_banded(level, parent_npos, dims, what)
    if isinstance(level, Ell):
        return _check_ell(level, parent_npos, what)
    if isinstance(level, Blocked):
        return _check_blocked(level, dims, what)
    if isinstance(level, Runs):
        return _check_runs(level, parent_npos, what)
    raise TypeError(f"{what}: unknown level type {type(level).__name__}")


def _first(bad: np.ndarray) -> int:
    return int(np.flatnonzero(bad)[0])


def _check_banded(level: Banded, parent_npos: int, dims: tuple[int, ...], what: str) -> int:
    off = np.asarray(level.offsets)
    if off.ndim != 1 or (off.size and off.dtype.kind not in "iu"):
        raise ValueError(f"{what}: offsets must be a 1-D integer array, got {off.dtype}"
                         f"{list(off.shape)}")
    if level.length < 0:
        raise ValueError(f"{what}: length must be >= 0, got {level.length}")
    if off.size > 1 and (bad := np.diff(off.astype(np.int64)) <= 0).any():
        q = _first(bad)
        raise ValueError(f"{what}: offsets must be ascending and distinct; got {int(off[q])} "
                         f"then {int(off[q + 1])} at {q}, {q + 1} (sort the diagonals, or "
                         "use xp.asarray on a scipy dia_array, which does)")
    if parent_npos != dims[0]:
        raise ValueError(f"{what}: a banded level needs the row level as its parent")
    return int(off.size) * level.length


def _check_ell(level: Ell, parent_npos: int, what: str) -> int:
    idx = level.idx
    if level.width < 0:
        raise ValueError(f"{what}: width must be >= 0, got {level.width}")
    if idx.size != parent_npos * level.width:
        raise ValueError(f"{what}: idx has length {idx.size}, expected {parent_npos} parents "
                         f"× width {level.width} = {parent_npos * level.width}")
    if idx.size == 0:
        return 0
    slots = idx.reshape(parent_npos, level.width).astype(np.int64)
    if (bad := (slots < -1) | (slots >= level.size)).any():
        q = _first(bad.ravel())
        raise ValueError(f"{what}: coordinate {int(idx[q])} at slot {q} is out of range for "
                         f"a dimension of size {level.size} (-1 marks padding)")
    pad = slots < 0
    if level.width > 1:
        after_pad = pad[:, :-1] & ~pad[:, 1:]
        if after_pad.any():
            p = int(np.nonzero(after_pad)[0][0])
            raise ValueError(f"{what}: parent {p} has a stored slot after padding (each "
                             "parent's entries must come first)")
        unsorted = ~pad[:, 1:] & (slots[:, 1:] <= slots[:, :-1])
        if unsorted.any():
            p, k = (int(v[0]) for v in np.nonzero(unsorted))
            raise ValueError(f"{what}: parent {p} has coordinates {int(slots[p, k])} then "
                             f"{int(slots[p, k + 1])}; an ELL level's slots ascend")
    return int(idx.size)


def _check_blocked(level: Blocked, dims: tuple[int, ...], what: str) -> int:
    r, c = level.block
    if r < 1 or c < 1 or dims[0] % r or dims[1] % c:
        raise ValueError(f"{what}: block shape {level.block} does not divide the shape "
                         f"{dims}")
    proxy = Compressed(dims[1] // c, level.ptr, level.idx)
    check_compressed(proxy, dims[0] // r, f"{what} (blocks)", order=2)
    return int(level.idx.size) * r * c


def _check_runs(level: Runs, parent_npos: int, what: str) -> int:
    check_compressed(Compressed(level.size, level.ptr, level.idx), parent_npos,
                     f"{what} (run starts)", order=2)
    start, end = level.idx.astype(np.int64), np.asarray(level.end).astype(np.int64)
    if end.size != start.size:
        raise ValueError(f"{what}: end has length {end.size}, expected {start.size} (one "
                         "per run; mismatched lengths)")
    if (bad := end <= start).any():
        q = _first(bad)
        raise ValueError(f"{what}: run {q} is empty or reversed: [{start[q]}, {end[q]})")
    check_range(end - 1, level.size, f"{what} (run ends)")
    if start.size > 1:
        last_of_parent = np.zeros(start.size, dtype=bool)
        ends = level.ptr[1:].astype(np.int64) - 1
        last_of_parent[ends[ends >= 0]] = True
        overlap = ~last_of_parent[:-1] & (end[:-1] > start[1:])
        if overlap.any():
            q = _first(overlap)
            raise ValueError(f"{what}: runs {q} [{start[q]}, {end[q]}) and {q + 1} "
                             f"[{start[q + 1]}, {end[q + 1]}) overlap")
    return int(start.size)
