"""Validation of a tensor's levels, top to bottom: each level's arrays checked against
its parent's position count (:mod:`.validation` for the unstructured levels,
:mod:`.validation_structured` for banded, ELL, blocked and run-length ones)."""

from __future__ import annotations

from collections.abc import Sequence

from lazysparse.formats.levels import (
    STRUCTURED_LEVELS,
    Bytemap,
    Compressed,
    Dense,
    Hashed,
    Level,
    Singleton,
)
from lazysparse.formats.validation.inputs import (
    check_bytemap,
    check_compressed,
    check_coo_order,
    check_hashed,
    check_range,
    check_unique_unordered,
)
from lazysparse.formats.validation.structured import check_structured


def check_levels(levels: Sequence[Level], dims: tuple[int, ...]) -> int:
    """Validate each level's arrays against its parent; return the last level's position count."""
    npos = 1
    k = 0
    while k < len(levels):
        level = levels[k]
        what = f"level {k} ({type(level).__name__})"
        if level.size != dims[k]:
            raise ValueError(f"{what} has size {level.size} but stores an axis of length {dims[k]}")
        if isinstance(level, Dense):
            npos *= level.size
        elif isinstance(level, Hashed):
            check_hashed(level, npos, what)
            npos = level.idx.size
        elif isinstance(level, Bytemap):
            check_bytemap(level, npos, what)
            npos *= level.size
        elif isinstance(level, Compressed) and not level.ordered:
            check_compressed(level, npos, what, order=0)
            check_unique_unordered(level, what)
            npos = level.idx.size
        elif isinstance(level, Compressed):
            check_compressed(level, npos, what, order=2 if level.unique else 0)
            if level.unique:
                npos = level.idx.size
            else:
                chain = [level.idx]
                j = k + 1
                while j < len(levels) and isinstance(levels[j], Singleton):
                    single = levels[j]
                    swhat = f"level {j} (Singleton)"
                    if single.size != dims[j]:
                        raise ValueError(
                            f"{swhat} has size {single.size} but stores an axis of length {dims[j]}"
                        )
                    if single.idx.size != level.idx.size:
                        raise ValueError(
                            f"{swhat}: idx has length {single.idx.size}, expected "
                            f"{level.idx.size} (one per entry of level {k}; mismatched lengths)"
                        )
                    check_range(single.idx, single.size, swhat)
                    chain.append(single.idx)
                    j += 1
                check_coo_order(chain, level.ptr, what)
                npos = level.idx.size
                k = j
                continue
        elif isinstance(level, STRUCTURED_LEVELS):
            npos = check_structured(level, npos, dims, what)
        elif isinstance(level, Singleton):
            raise ValueError(f"{what} must follow a compressed-nonunique or singleton level")
        else:
            raise TypeError(f"{what}: unknown level type {type(level).__name__}")
        k += 1
    return npos


__all__ = ["check_levels"]
