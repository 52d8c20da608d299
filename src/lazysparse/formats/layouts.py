"""Layouts a reader asks for: the canonical (classic, ordered) layout of any tensor, and a
kernel's result relabeled into the layout the optimizer chose. Both sort
(``formats.ordering``) where order is all that differs and convert (``formats.convert``)
otherwise, so they sit above both (the two import each other nowhere).
"""

from __future__ import annotations

from lazysparse.formats.conversion.convert import convert
from lazysparse.formats.levels import Bytemap, Compressed, Hashed, Level
from lazysparse.formats.levels.hashed import build_table
from lazysparse.formats.levels.registry import (
    CLASSIC_KINDS,
    PLAIN_KIND,
    STRUCTURED_KINDS,
    UNORDERED_KIND,
    UNORDERED_KINDS,
    level_class,
)
from lazysparse.formats.ordering import bytemap_of, ordered, scatter_values, sorted_last
from lazysparse.formats.specs import FormatSpec, infer_spec
from lazysparse.formats.tensor import Tensor


def canonical(t: Tensor) -> Tensor:
    """``t`` in levels every reader of ptr/idx arrays understands, in order: itself when it
    has only dense, compressed and singleton levels; unordered levels sorted; hashed and
    bytemap levels stored as compressed ones."""
    if all(kind in CLASSIC_KINDS for kind in t.spec.level_kinds):
        return t
    if all(kind in CLASSIC_KINDS or kind in UNORDERED_KINDS for kind in t.spec.level_kinds):
        return ordered(t)
    kinds = tuple(PLAIN_KIND if k not in CLASSIC_KINDS else k for k in t.spec.level_kinds)
    if kinds[-1] == PLAIN_KIND and len(kinds) > 1 and t.spec.level_kinds[-1] in STRUCTURED_KINDS:
        # leading dense levels: a csr-like layout
        return convert(t, FormatSpec(infer_spec(kinds, t.mode_order).name, kinds,
                                     t.mode_order))
    return convert(t, infer_spec(kinds, t.mode_order))


def relabel_layout(t: Tensor, spec: FormatSpec) -> Tensor:
    """``t`` (as a kernel wrote it) in layout ``spec``, which may differ from ``t``'s only in
    how levels find their entries: a compressed or unordered level becomes hashed by
    building its table (nothing sorted), a last compressed level becomes a bytemap by
    scattering its entries (sorted first when unordered); anything else converts."""
    if spec == t.spec:
        return t
    if spec.mode_order != t.mode_order or len(spec.level_kinds) != len(t.levels):
            return convert(t, spec)
    levels: list[Level] = []
    values = t.values
    last = len(t.levels) - 1
    for k, (level, kind) in enumerate(zip(t.levels, spec.level_kinds, strict=True)):
        if kind == level.kind:
            levels.append(level)
        elif level_class(kind) is Hashed and isinstance(level, Compressed) and level.unique:
            levels.append(Hashed(level.size, level.ptr, level.idx,
                                 build_table(level.ptr, level.idx, level.size)))
        elif kind == UNORDERED_KIND and isinstance(level, Compressed) and level.unique:
            levels.append(Compressed(level.size, level.ptr, level.idx, ordered=False))
        elif (level_class(kind) is Bytemap and k == last and isinstance(level, Compressed)
              and level.unique):
            level, values = sorted_last(level, values)
            levels.append(bytemap_of(level, values.dtype))
            values = scatter_values(level, values, t.fill_value)
        else:
                    return convert(t, spec)
    return Tensor(t.shape, levels, t.mode_order, values, t.fill_value, format=spec,
                  check=False)
