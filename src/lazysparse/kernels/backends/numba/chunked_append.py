"""Parallel sparse appends without a count pass: bounded regions per chunk, then compaction.

For a union/intersection of row-major operands (a sparse add), counting costs nearly as
much as filling (both are the same merge: 7.8 vs 8.9 ms on the A+B benchmark), so count +
fill on two threads is no faster than one bounded fill on one; for a Gustavson SpGEMM the
count is cheaper (3.3 vs 22 ms) but skipping it also skips compiling it. Instead each chunk
of rows fills its own region, sized by the positions its driving operands store in those
rows (or by the SpGEMM's multiplications in them);
the host then moves each chunk's entries down next to the previous chunk's (in order, so
a move never overwrites entries not yet moved) and shifts the row ends.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lazysparse.kernels.compile.planning.analysis import QueryData
from lazysparse.kernels.compile.planning.coiterate import LoopKind
from lazysparse.kernels.compile.planning.kernel_plan import EntryBound
from lazysparse.kernels.compile.planning.output_plan import OutputMode


def chunk_bounds_ok(k: Any) -> bool:
    """Whether the kernel writes one sparse level under a single dense row level, loop 0
    ranging over the rows, with entries per row bounded by operands stored row-major
    below a dense level 0: an append's driving operands (``Lowered.bounds``, level 1), or
    a Gustavson workspace's multiplications (``Lowered.ws_bound`` with ``A`` at level 1)."""
    lw, info = k.lowered, k.info
    out = lw.output
    if (not lw.parallel or out.mode not in (OutputMode.APPEND, OutputMode.ROWWS, OutputMode.HASHWS)
            or len(out.groups) != 1 or len(out.groups[0]) != 1 or out.dense_prefix != 1
            or not lw.row_ends or lw.plans[0].kind.skips):
        return False
    f0 = info.loop_order[0]
    if info.out_storage_fields[0] != f0:
        return False
    if out.mode in (OutputMode.ROWWS, OutputMode.HASHWS):
        atoms = ((lw.ws_bound[0], lw.ws_bound[1]),) if lw.ws_bound is not None else None
    else:
        atoms = (lw.bounds[0].levels if lw.bounds is not None and lw.bounds[0].extent is None
                 else None)
    if atoms is None:
        return False
    for s, lv in atoms:
        op = info.operands[s]
        if lv != 1 or not op.levels[0].located or op.levels[0].field != f0:
            return False
    return True


def row_bounds(k: Any, data: QueryData, rows: Any) -> Any:
    """Per chunk (rows ``rows[t]..rows[t+1]``), a bound on its entries."""
    lw = k.lowered
    if lw.output.mode in (OutputMode.ROWWS, OutputMode.HASHWS):
        a, la, b = lw.ws_bound
        aptr = data.tensors[a].levels[la].ptr
        blen = np.diff(data.tensors[b].levels[1].ptr.astype(np.int64))
        flops = np.zeros(data.tensors[a].levels[la].idx.shape[0] + 1, np.int64)
        np.cumsum(blen[data.tensors[a].levels[la].idx], out=flops[1:])
        return np.diff(flops[aptr[rows].astype(np.int64)])
    return _rows_bound(data, lw.bounds[0], rows)


def _rows_bound(data: QueryData, bound: EntryBound, rows: Any) -> Any:
    """Per chunk of rows, ``bound``'s operands' positions in those rows (level 1 under a
    located row level): summed, or their least for an intersection."""
    per = [np.diff(data.tensors[s].levels[lv].ptr[rows].astype(np.int64))
           for s, lv in bound.levels]
    if bound.least:  # an intersection: the least of the drivers' row lengths
        return np.minimum.reduce(per)
    return np.sum(per, axis=0, dtype=np.int64)


def chunk_group_bounds(k: Any, data: QueryData, nch: int) -> list[Any] | None:
    """Per output group, each chunk's bound on its entries, for an append with no dense
    level (a DCSR result) whose outermost loop ranges over the rows (chunk ``t`` holds
    rows ``t*n//nch ..``): a group on that loop is bounded by the chunk's rows, one
    below by its driving operands' positions in those rows (stored row-major under a
    located row level). The host then fills at these offsets without counting and moves
    the chunks' entries together (``fill_compaction.compact_chunks``). None otherwise."""
    lw, info = k.lowered, k.info
    if (lw.bounds is None or lw.output.mode is not OutputMode.APPEND
            or lw.output.dense_prefix or lw.plans[0].kind is not LoopKind.RANGE):
        return None
    f0 = info.loop_order[0]
    n = int(data.extents[f0])
    rows = np.array([t * n // nch for t in range(nch + 1)], np.int64)
    out = []
    for b in lw.bounds:
        if b.extent is not None and b.extent != f0:
            return None
        by_rows = _row_major(info, b, f0)
        if b.extent is None and not by_rows:
            return None
        if b.extent is None:
            out.append(_rows_bound(data, b, rows))
        elif by_rows:  # a chunk's rows, at most one per stored position below them
            out.append(np.minimum(np.diff(rows), _rows_bound(data, b, rows)))
        else:
            out.append(np.diff(rows))
    return out


def _row_major(info: Any, b: EntryBound, f0: str) -> bool:
    """Whether ``b``'s operands store their positions at level 1 under a located row level
    ``f0`` (so a chunk of rows holds ``ptr[hi] - ptr[lo]`` of them)."""
    if not b.levels:
        return False
    for s, lv in b.levels:
        op = info.operands[s]
        if lv != 1 or not op.levels[0].located or op.levels[0].field != f0:
            return False
    return True


def chunked_single_pass(k: Any, data: QueryData, args: list[Any], dsize: int, nch: int,
                        parallel_map: Any) -> tuple[Any, ...]:
    """Fill chunk ``t``'s rows ``[t*n//nch, (t+1)*n//nch)`` (the kernel's own split) into
    their bounded region, then compact. Returns (ptr, idx, vals) like ``run_chunks``."""
    mod = k.module
    rows = np.array([t * dsize // nch for t in range(nch + 1)], np.int64)
    bound = row_bounds(k, data, rows)
    off = np.zeros(nch + 1, np.int64)
    np.cumsum(bound, out=off[1:])
    big = max(data.out_shape, default=0) >= 2**31 - 1
    idx = np.empty(int(off[-1]), np.int64 if big else np.int32)
    vals = np.empty(int(off[-1]), k.info.out_dtype)
    ends = np.zeros(nch, np.int64)
    cntpd = np.zeros(max(dsize, 1), np.int64)
    parallel_map(mod.fill, nch, (args, (off, ends, cntpd, np.zeros(1, np.int64), idx, vals)),
                 k.workspaces("fill", args))
    n = ends - off[:-1]
    shift = np.zeros(nch, np.int64)
    pos = 0
    for t in range(nch):
        lo, cnt = int(off[t]), int(n[t])
        if lo != pos and cnt:
            idx[pos:pos + cnt] = idx[lo:lo + cnt]  # overlapping: NumPy copies as memmove
            vals[pos:pos + cnt] = vals[lo:lo + cnt]
        shift[t] = lo - pos
        pos += cnt
    ptr = np.zeros(dsize + 1, np.int64)
    ptr[1:] = cntpd[:dsize] - np.repeat(shift, np.diff(rows))
    return ptr, idx[:pos], vals[:pos]
