"""When a scattered row goes through a hash workspace instead of a dense one.

The sparse-workspaces paper (Zhang et al., §5 and §8) measures hash workspaces beating dense
ones on hypersparse rows and losing where the dense row fits in cache. A dense row workspace
costs a mark, a list entry and a value per coordinate of the scattered axis, touched at
random; when that row is large (``HASH_MIN_BYTES``, past a fast cache) and each drain
touches a small fraction of it (``HASH_RATIO``), the kernel uses an open-addressing table
sized by the entries instead (``lowering.workspaces.HashWorkspaceOutput``). The estimate is the
number of multiplications of the shape that scatters (an SpMSpV ``y = A.T @ x``, a
Gustavson row): the sparse operand driving the reduced loop times the row lengths of the
operand it locates, per drain. The choice is made per call from the data (like folding),
so the same expression takes whichever kernel its data wants.
"""

from __future__ import annotations

import math

import numpy as np

from lazysparse.formats.compiled.jit import helper_jit
from lazysparse.kernels.compile.planning.analysis import KernelInfo, QueryData

# a dense row workspace below this many bytes stays (it fits a fast cache)
HASH_MIN_BYTES = 4 << 20
# a hash workspace when a drain touches fewer than 1 / HASH_RATIO of the row
HASH_RATIO = 16


def _scatter_loops(info: KernelInfo) -> tuple[str, str] | None:
    """``(r, f)``: the reduced loop that encloses the last output field ``f``, as the last
    two loops; None for any other shape."""
    if info.reduce_op is None or len(info.loop_order) < 2:
        return None
    props = info.out_spec.level_properties()
    if not props or props[-1].ordered or props[-1].full:
        return None
    r, f = info.loop_order[-2:]
    if r not in info.reduced or f != info.out_storage_fields[-1]:
        return None
    return r, f


def multiplications(info: KernelInfo, data: QueryData, r: str, f: str) -> int | None:
    """The multiplications of the scatter: ``sum(len(b row c) for c in a's r-coordinates)``
    for the operand ``a`` iterating ``r`` and the operand ``b`` storing ``f`` under a
    located ``r`` level; None when the loops are not of that shape."""
    a_idx, b_ptr = None, None
    for op in info.operands:
        kr, kf = op.level_of(r), op.level_of(f)
        t = data.tensors[op.slot]
        if kr is not None and kf is None and not op.levels[kr].located:
            a_idx = t.levels[kr].idx
        elif kr == 0 and kf == 1 and op.levels[0].located \
                and not op.levels[1].located and not op.levels[1].chained:
            b_ptr = t.levels[1].ptr  # one row per r coordinate
    if a_idx is None or b_ptr is None:
        return None
    return selected_row_entries(b_ptr, a_idx)


def selected_row_entries(ptr: np.ndarray, rows: np.ndarray) -> int:
    """``sum(len(row r) for r in rows)`` of a compressed level: O(len(rows)), never all of
    its rows (an SpMSpV's frontier selects 1000 of a million)."""
    return int(_row_entries(ptr, rows))


@helper_jit(nogil=True)
def _row_entries(ptr: np.ndarray, rows: np.ndarray) -> int:  # pragma: no cover - compiled
    # one pass, no gathered temporaries (the rows of X[:k] @ X.T's sort buffer are all of X)
    total = 0
    for r in rows:
        total += ptr[r + 1] - ptr[r]
    return total


def prefer_hash_workspace(info: KernelInfo, data: QueryData) -> bool:
    """Whether this call's scattered row should go through a hash workspace."""
    loops = _scatter_loops(info)
    if loops is None:
        return False
    r, f = loops
    extent = data.extents[f]
    if extent * (1 + 8 + info.acc_dtype.itemsize) < HASH_MIN_BYTES:
        return False
    flops = multiplications(info, data, r, f)
    if flops is None:
        return False
    drains = math.prod(data.extents[g] for g in info.loop_order[:-2] if g in info.out_fields)
    return flops * HASH_RATIO < extent * max(drains, 1)


__all__ = ["HASH_MIN_BYTES", "HASH_RATIO", "multiplications", "prefer_hash_workspace",
           "selected_row_entries"]
