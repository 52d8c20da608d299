"""Sorting unordered levels: the canonical (ordered) layout of a tensor, made only where a
consumer needs order (a merge co-iteration, a conversion, a binary search, a peer library).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lazysparse.formats.assemble import build_tensor, expand, sort_coords
from lazysparse.formats.compiled.sortkernels import sort_segments
from lazysparse.formats.config import check_densify
from lazysparse.formats.levels import Bytemap, Compressed, Hashed, Level
from lazysparse.formats.levels.hashed import build_table
from lazysparse.formats.levels.registry import (
    UNORDERED_KIND,
    level_class,
)
from lazysparse.formats.specs import FormatSpec
from lazysparse.formats.tensor import Tensor


def ordered(t: Tensor) -> Tensor:
    """``t`` with every unordered level's siblings sorted (same values; same format name,
    except that a hashed level becomes compressed: a ``hash`` tensor becomes ``csr``/
    ``csf``-like); ``t`` itself when it is already ordered. Only the copied index and value
    arrays are new."""
    if t.spec.ordered:
        return t
    spec = t.spec.ordered_spec()
    *upper, last = t.levels
    if all(lv.properties.ordered for lv in upper) and isinstance(last, (Compressed, Hashed)):
        level, values = sorted_last(last, t.values)
        return Tensor(t.shape, (*upper, level), t.mode_order, values, t.fill_value,
                      format=spec, check=False)
    coords, values = expand(t)
    dims = tuple(t.shape[m] for m in t.mode_order)
    coords, values = sort_coords([np.asarray(c) for c in coords], dims, values, len(dims))
    return build_tensor(t.shape, spec, coords, values, t.fill_value, what="ordering")


def unordered_as(t: Tensor, spec: FormatSpec) -> Tensor:
    """Ordered ``t`` relabeled as layout ``spec``, which differs only in unordered levels
    (compressed-unordered or hashed where ``t`` has compressed): sorted siblings are one of
    the orders those allow, so only hash tables are built (O(nnz)), nothing is sorted."""
    if spec == t.spec:
        return t
    if spec.ordered_spec().level_kinds != t.spec.level_kinds or spec.mode_order != t.mode_order:
        raise ValueError(f"format {spec} is not an unordered form of {t.spec}")
    levels: list[Level] = []
    for k, (level, kind) in enumerate(zip(t.levels, spec.level_kinds, strict=True)):
        if kind == level.kind:
            levels.append(level)
        elif level_class(kind) is Hashed and isinstance(level, Compressed):
            levels.append(Hashed(level.size, level.ptr, level.idx,
                                 build_table(level.ptr, level.idx, level.size)))
        elif kind == UNORDERED_KIND and isinstance(level, Compressed):
            if k != len(t.levels) - 1:
                raise ValueError(f"format {spec}: only the last level of a layout can be "
                                 "unordered compressed")
            levels.append(Compressed(level.size, level.ptr, level.idx, ordered=False))
        else:
            raise ValueError(f"format {spec}: level {k} cannot be {kind!r} over {level.kind!r}")
    return Tensor(t.shape, levels, t.mode_order, t.values, t.fill_value, format=spec,
                  check=False)


def sorted_last(level: Compressed | Hashed, values: np.ndarray
                 ) -> tuple[Compressed, np.ndarray]:
    """An ordered compressed copy of an unordered (or hashed) last level and its values
    (the level itself when it is an ordered compressed one)."""
    if isinstance(level, Compressed) and level.ordered:
        return level, values
    idx, vals = level.idx.copy(), values.copy()
    sort_segments(level.ptr, idx, vals)
    return Compressed(level.size, level.ptr, idx), vals


def bytemap_of(level: Compressed, dtype: np.dtype) -> Level:
    """The bytemap level with ``level``'s (sorted) entries as its touched list (its mask
    and values span every position: DensifyError past the densify limit)."""
    npos = (level.ptr.size - 1) * level.size
    check_densify(npos * (1 + dtype.itemsize), (level.ptr.size - 1, level.size), dtype,
                  "a bytemap's mask and values")
    mask = np.zeros(npos, np.uint8)
    mask[_dense_positions(level)] = 1
    return Bytemap(level.size, mask, level.ptr, level.idx)


def _dense_positions(level: Compressed) -> np.ndarray:
    """``parent * size + coordinate`` of each entry of a compressed level."""
    parents = np.repeat(np.arange(level.ptr.size - 1, dtype=np.int64), np.diff(level.ptr))
    return parents * level.size + level.idx.astype(np.int64)


def scatter_values(level: Compressed, values: np.ndarray, fill: Any) -> np.ndarray:
    """The dense-positioned values array of a bytemap over ``level``'s entries."""
    out = np.full((level.ptr.size - 1) * level.size, fill, dtype=values.dtype)
    out[_dense_positions(level)] = values
    return out
