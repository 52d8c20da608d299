"""Sorting unordered levels: the canonical (ordered) layout of a tensor, made only where a
consumer needs order (a merge co-iteration, a conversion, a binary search, a peer library).
"""

from __future__ import annotations

import numpy as np

from .assemble import build_tensor, expand, sort_coords
from .levels import Compressed
from .sortkernels import sort_segments
from .tensor import Tensor


def ordered(t: Tensor) -> Tensor:
    """``t`` with every unordered level's siblings sorted (same format name and values);
    ``t`` itself when it is already ordered. Only the copied index and value arrays are new."""
    if t.spec.ordered:
        return t
    spec = t.spec.ordered_spec()
    *upper, last = t.levels
    if all(lv.properties.ordered for lv in upper) and isinstance(last, Compressed):
        idx, values = last.idx.copy(), t.values.copy()
        sort_segments(last.ptr, idx, values)
        levels = (*upper, Compressed(last.size, last.ptr, idx))
        return Tensor(t.shape, levels, t.mode_order, values, t.fill_value, format=spec,
                      check=False)
    coords, values = expand(t)
    dims = tuple(t.shape[m] for m in t.mode_order)
    coords, values = sort_coords([np.asarray(c) for c in coords], dims, values, len(dims))
    return build_tensor(t.shape, spec, coords, values, t.fill_value, what="ordering")


def unordered_view(t: Tensor) -> Tensor:
    """``t`` relabeled with its last compressed level unordered (no copy: sorted siblings are
    one of the orders an unordered level allows)."""
    spec = t.spec.unordered_last()
    if spec == t.spec:
        return t
    *upper, last = t.levels
    assert isinstance(last, Compressed)
    levels = (*upper, Compressed(last.size, last.ptr, last.idx, ordered=False))
    return Tensor(t.shape, levels, t.mode_order, t.values, t.fill_value, format=spec, check=False)
