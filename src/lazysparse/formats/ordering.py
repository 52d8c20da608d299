"""Sorting unordered levels: the canonical (ordered) layout of a tensor, made only where a
consumer needs order (a merge co-iteration, a conversion, a binary search, a peer library).
"""

from __future__ import annotations

import numpy as np

from .assemble import build_tensor, expand, sort_coords
from .levels import Compressed, Hashed, Level
from .levels.hashed import build_table
from .sortkernels import sort_segments
from .specs import FormatSpec
from .tensor import Tensor


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
        elif kind == "hashed" and isinstance(level, Compressed):
            levels.append(Hashed(level.size, level.ptr, level.idx,
                                 build_table(level.ptr, level.idx, level.size)))
        elif kind == "compressed-unordered" and isinstance(level, Compressed):
            if k != len(t.levels) - 1:
                raise ValueError(f"format {spec}: only the last level of a layout can be "
                                 "unordered compressed")
            levels.append(Compressed(level.size, level.ptr, level.idx, ordered=False))
        else:
            raise ValueError(f"format {spec}: level {k} cannot be {kind!r} over {level.kind!r}")
    return Tensor(t.shape, levels, t.mode_order, t.values, t.fill_value, format=spec,
                  check=False)


# level kinds every stage reads by their arrays alone (position = ptr/idx walk)
CLASSIC_KINDS = frozenset({"dense", "compressed", "compressed-nonunique", "singleton"})


def canonical(t: Tensor) -> Tensor:
    """``t`` in levels every reader of ptr/idx arrays understands, in order: itself when it
    has only dense, compressed and singleton levels; unordered levels sorted; hashed and
    bytemap levels stored as compressed ones."""
    if all(kind in CLASSIC_KINDS for kind in t.spec.level_kinds):
        return t
    if all(kind in CLASSIC_KINDS or kind in ("compressed-unordered", "hashed")
           for kind in t.spec.level_kinds):
        return ordered(t)
    from .convert import convert
    from .specs import infer_spec

    kinds = tuple("compressed" if k not in CLASSIC_KINDS else k for k in t.spec.level_kinds)
    return convert(t, infer_spec(kinds, t.mode_order))
