"""Structural selection: a stored tensor indexed axis by axis (an integer, a range or an
integer array per axis, NumPy's orthogonal indexing) by walking its levels, reading only
the selected parts.

A level walk keeps, for every output position of the deepest level emitted so far, the
source positions under it. Each level then picks its children among the selected parents'
children only: a dense level computes them (``parent * n + coordinate``), a compressed or
singleton level scans or binary-searches each selected parent's segment (one compiled pass
that counts, one that writes). An integer-array pick on a compressed level maps every stored
coordinate through a table (old coordinate -> run of new coordinates, so repeated indices
repeat the entry) and re-sorts a segment only when the array is not increasing. Time and
memory are therefore the selected parents' pointers and entries, never the tensor's
extents: ``x[i]`` of a CSR reads one row, ``x[i]`` of a hypersparse (dcsr) 10^9-row matrix
binary-searches the stored rows, ``x[:, keep]`` of a CSR is one pass over its entries.

An axis picked by an integer is dropped. When a dropped axis lies below the last kept one
(``x[:, j]`` of CSR), output positions that found nothing are removed from the last kept
level (a dense root becomes compressed: the result stays sparse).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lazysparse.formats.compiled import selectnumpy as SN
from lazysparse.formats.compiled.jit import helper_jit, helper_overload
from lazysparse.formats.compiled.sortkernels import as_words, gather_pair, sort_segments
from lazysparse.formats.compiled.sortnumpy import sorts_on_numpy
from lazysparse.formats.config import check_allocation
from lazysparse.formats.levels import Compressed, Dense, Level, Singleton
from lazysparse.formats.levels.registry import is_coo_kind
from lazysparse.formats.specs import FormatSpec, infer_spec
from lazysparse.formats.tensor import Tensor

# an axis's pick: None (all of it), an int (one coordinate, axis dropped), a normalized
# range, or a 1-D int64 array of in-bounds coordinates (any order, repeats allowed)
Pick = None | int | range | np.ndarray

# an integer-array pick maps through a table of one entry per coordinate of the axis while
# that table is no larger than this many per selected-or-stored entry (else binary search)
_TABLE_PER_ENTRY = 8
_TABLE_SLACK = 1 << 16


@dataclass(frozen=True)
class Children:
    """The selected children of a level under the current parents: ``pos`` (source
    positions, in output order), ``crd`` (their new coordinates) and ``counts`` (how many
    each parent has), and whether every parent's children come out sorted by ``crd``."""

    pos: np.ndarray
    crd: np.ndarray
    counts: np.ndarray
    monotone: bool


@dataclass(frozen=True)
class _Walk:
    """Where a level walk stands: ``src`` the source positions of the last level walked (one
    per surviving node, in output order), ``owner`` the output position of the last emitted
    level each belongs to, ``n_owner`` how many output positions that level has, and
    ``one_each`` whether ``owner`` is ``arange(n_owner)`` (no position lost or merged)."""

    src: np.ndarray
    owner: np.ndarray
    n_owner: int
    one_each: bool

    @staticmethod
    def emitted(src: np.ndarray) -> _Walk:
        """The walk right after a level was emitted: one output position per source one."""
        return _Walk(src, np.arange(src.size, dtype=np.int64), int(src.size), True)

    def dropped(self, ch: Children) -> _Walk:
        """The walk after an integer-picked (dropped) level's children ``ch``."""
        same = self.one_each and ch.pos.size == self.src.size and \
            (ch.counts.size == 0 or int(ch.counts.min()) == 1)
        return _Walk(ch.pos, self.owner if same else np.repeat(self.owner, ch.counts),
                     self.n_owner, same)


# ----------------------------------------------------------------------------- kernels


@helper_jit(nogil=True)
def _lower_bound(idx, a, b, c):  # pragma: no cover - compiled
    while a < b:
        m = (a + b) >> 1
        if idx[m] < c:
            a = m + 1
        else:
            b = m
    return a


def _source(vals, q):  # pragma: no cover - replaced in compiled code by the overload below
    """What a selection kernel writes for source position ``q``: the position itself, or
    with ``vals`` (the last level's values as words) the value there (no position array)."""
    return q if vals is None else vals[q]


@helper_overload(_source)
def _source_typed(vals, q):  # pragma: no cover - typing
    """One implementation per type of ``vals`` (None: the position), so the written type
    is the output array's own (a shared one would unify integers and words as floats)."""
    from numba import types  # runs only while Numba compiles (imported by then)

    if isinstance(vals, types.NoneType):
        return lambda vals, q: q
    return lambda vals, q: vals[q]


@helper_jit(nogil=True, inline="always")
def _put(out_pos, out_crd, k, vals, q, c):  # pragma: no cover - compiled
    """Write child ``k``: its source position ``q`` (or value there) and new coordinate."""
    out_pos[k] = _source(vals, q)
    out_crd[k] = c


@helper_jit(nogil=True)
def _window(lo, hi, idx, start, stop, step, ordered, counts, out_pos, out_crd, fill, vals):
    # pragma: no cover - compiled
    """Children with coordinate in ``range(start, stop, step)``, new coordinate
    ``(c - start) // step``; a sorted segment is binary-searched for the window and walked
    backwards for a negative step (so the output stays sorted)."""
    w = 0
    if step > 0:
        wlo, whi = start, stop
    else:
        wlo, whi = stop + 1, start + 1
    for j in range(lo.size):
        a, b = lo[j], hi[j]
        n = 0
        if ordered:
            qa = _lower_bound(idx, a, b, wlo)
            qb = _lower_bound(idx, qa, b, whi)
            if step == 1 and not fill:
                n = qb - qa
            elif step > 0:
                for q in range(qa, qb):
                    d = idx[q] - start
                    if d % step == 0:
                        if fill:
                            _put(out_pos, out_crd, w + n, vals, q, d // step)
                        n += 1
            else:
                for q in range(qb - 1, qa - 1, -1):
                    d = start - idx[q]
                    if d % (-step) == 0:
                        if fill:
                            _put(out_pos, out_crd, w + n, vals, q, d // (-step))
                        n += 1
        else:
            for q in range(a, b):
                c = idx[q]
                if wlo <= c < whi:
                    d = (c - start) if step > 0 else (start - c)
                    s = step if step > 0 else -step
                    if d % s == 0:
                        if fill:
                            _put(out_pos, out_crd, w + n, vals, q, d // s)
                        n += 1
        counts[j] = n
        w += n
    return w


@helper_jit(nogil=True)
def _mapped(lo, hi, idx, tab_ptr, targets, counts, out_pos, out_crd, fill, vals):
    # pragma: no cover - compiled
    """Children whose coordinate ``c`` the table maps: one child per new coordinate
    ``targets[tab_ptr[c]:tab_ptr[c + 1]]`` (a repeated index repeats the entry)."""
    w = 0
    for j in range(lo.size):
        n = 0
        for q in range(lo[j], hi[j]):
            c = idx[q]
            for t in range(tab_ptr[c], tab_ptr[c + 1]):
                if fill:
                    _put(out_pos, out_crd, w + n, vals, q, targets[t])
                n += 1
        counts[j] = n
        w += n
    return w


@helper_jit(nogil=True)
def _mapped_once(lo, hi, idx, target, counts, out_pos, out_crd, fill, vals):
    # pragma: no cover - compiled
    """:func:`_mapped` for an index array without repeats: ``target[c]`` is the new
    coordinate of ``c``, -1 when not selected (one load per entry)."""
    w = 0
    for j in range(lo.size):
        n = 0
        for q in range(lo[j], hi[j]):
            t = target[idx[q]]
            if t >= 0:
                if fill:
                    _put(out_pos, out_crd, w + n, vals, q, t)
                n += 1
        counts[j] = n
        w += n
    return w


@helper_jit(nogil=True)
def _searched(lo, hi, idx, keys, targets, counts, out_pos, out_crd, fill, vals):
    # pragma: no cover - compiled
    """:func:`_mapped` with the table replaced by a binary search of the sorted ``keys``
    (an axis too long for a table: hypersparse)."""
    w = 0
    for j in range(lo.size):
        n = 0
        for q in range(lo[j], hi[j]):
            c = idx[q]
            t = _lower_bound(keys, 0, keys.size, c)
            while t < keys.size and keys[t] == c:
                if fill:
                    _put(out_pos, out_crd, w + n, vals, q, targets[t])
                n += 1
                t += 1
        counts[j] = n
        w += n
    return w


@helper_jit(nogil=True)
def _by_index(lo, hi, idx, keys, counts, out_pos, out_crd, fill, vals):
    # pragma: no cover - compiled
    """Children found by binary search of each index ``keys[t]`` in each sorted segment, in
    index order (new coordinate ``t``; a run of equal coordinates, as coo's rows, moves
    whole): few indices into long segments (a hypersparse matrix's stored rows)."""
    w = 0
    for j in range(lo.size):
        n = 0
        a, b = lo[j], hi[j]
        for t in range(keys.size):
            q = _lower_bound(idx, a, b, keys[t])
            while q < b and idx[q] == keys[t]:
                if fill:
                    _put(out_pos, out_crd, w + n, vals, q, t)
                n += 1
                q += 1
        counts[j] = n
        w += n
    return w


@helper_jit(nogil=True)
def _rows_holding(ptr, idx, key, ordered, rows, pos, fill):  # pragma: no cover - compiled
    """The rows whose unique segment ``ptr[r]..ptr[r+1]`` holds coordinate ``key`` (binary
    search when sorted, else a scan) and its position there; returns how many."""
    w = 0
    for r in range(ptr.size - 1):
        a, b = ptr[r], ptr[r + 1]
        if a == b:
            continue
        q = b
        if ordered:
            q = _lower_bound(idx, a, b, key)
            if q < b and idx[q] != key:
                q = b
        else:
            for u in range(a, b):
                if idx[u] == key:
                    q = u
                    break
        if q < b:
            if fill:
                rows[w] = r
                pos[w] = q
            w += 1
    return w


@helper_jit(nogil=True)
def _rows_in_window(ptr, idx, start, stop, roots, cptr, crd, pos, fill):
    # pragma: no cover - compiled
    """The rows with entries whose sorted coordinates fall in ``[start, stop)``: the rows
    (``roots``), their segments' ends (``cptr``), new coordinates and source positions;
    returns ``(rows, entries)``."""
    m = 0
    w = 0
    for r in range(ptr.size - 1):
        a, b = ptr[r], ptr[r + 1]
        if a == b:
            continue
        qa = _lower_bound(idx, a, b, start)
        qb = _lower_bound(idx, qa, b, stop)
        if qa == qb:
            continue
        if fill:
            roots[m] = r
            for q in range(qa, qb):
                crd[w + q - qa] = idx[q] - start
                pos[w + q - qa] = q
            cptr[m + 1] = w + qb - qa
        m += 1
        w += qb - qa
    return m, w


# each pass's NumPy twin (formats/compiled/selectnumpy.py), for inputs sorts_on_numpy takes
_TWINS = {_window: SN.window, _mapped: SN.mapped, _mapped_once: SN.mapped_once,
          _searched: SN.searched, _by_index: SN.by_index}


# ----------------------------------------------------------------------------- picks


def _coords(pick: Pick, n: int) -> np.ndarray:
    """The coordinates ``pick`` selects along an axis of length ``n``, in output order."""
    if pick is None:
        return np.arange(n, dtype=np.int64)
    if isinstance(pick, int):
        return np.array([pick], dtype=np.int64)
    if isinstance(pick, range):
        return np.arange(pick.start, pick.stop, pick.step, dtype=np.int64)
    return pick


def _as_range(pick: Pick, n: int) -> range | None:
    """``pick`` as a range when it is one (all, an integer, a range), else None."""
    if pick is None:
        return range(n)
    if isinstance(pick, int):
        return range(pick, pick + 1)
    return pick if isinstance(pick, range) else None


def _run_pass(kernel, lo, hi, idx, args, dtype, counts: np.ndarray | None = None,
              vals: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Count (unless ``counts`` are known), allocate, fill: ``(pos, crd, counts)`` of a
    selection kernel; ``pos`` holds the values instead when ``vals`` are given."""
    if sorts_on_numpy(int(hi.sum() - lo.sum()) + lo.size):
        q, crd, counts = _TWINS[kernel](lo, hi, idx, *args)
        return (q if vals is None else vals[q]), crd.astype(dtype), counts
    words = None if vals is None else as_words(vals)
    if counts is None:
        counts = np.empty(lo.size, dtype=np.int64)
        none = np.empty(0, dtype=np.int64 if words is None else words.dtype)
        total = kernel(lo, hi, idx, *args, counts, none, np.empty(0, dtype), False, words)
    else:
        total = int(counts.sum())
    pos = np.empty(total, dtype=np.int64 if vals is None else vals.dtype)
    crd = np.empty(total, dtype=dtype)
    if total:
        kernel(lo, hi, idx, *args, counts, pos if words is None else as_words(pos), crd, True,
               words)
    return pos, crd, counts


def _segments(level: Level, src: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Position ranges ``[lo, hi)`` of the children of parent positions ``src``."""
    if isinstance(level, Singleton):
        return src, src + 1
    ptr = level.ptr  # type: ignore[attr-defined]
    return ptr[src].astype(np.int64), ptr[src + 1].astype(np.int64)


def _sparse_children(level: Compressed | Singleton, src: np.ndarray, pick: Pick,
                     vals: np.ndarray | None = None) -> Children:
    """Selected children of a compressed or singleton level under parents ``src`` (with
    ``vals``, the last level's values: ``pos`` holds the selected values instead)."""
    lo, hi = _segments(level, src)
    ordered = level.properties.ordered
    idx = level.idx
    dtype = idx.dtype
    r = _as_range(pick, level.size)
    if r is not None:
        stop = r.stop if r.stop >= 0 or r.step > 0 else -1
        full = r.step == 1 and r.start == 0 and r.stop == level.size
        pos, crd, counts = _run_pass(_window, lo, hi, idx, (r.start, stop, r.step, ordered),
                                     dtype, hi - lo if full else None, vals)
        # a unique compressed segment is walked backwards for a negative step
        backwards_sorted = isinstance(level, Compressed) and level.unique
        return Children(pos, crd, counts, ordered and (r.step > 0 or backwards_sorted))
    arr = np.asarray(pick, dtype=np.int64)
    entries = int(hi.sum() - lo.sum())
    if ordered and lo.size * arr.size * (1 + (entries // max(lo.size, 1)).bit_length()) \
            <= entries:  # few indices, long segments: search each (output in index order)
        pos, crd, counts = _run_pass(_by_index, lo, hi, idx, (arr.astype(dtype),), dtype,
                                     vals=vals)
        return Children(pos, crd, counts, True)
    steps = np.diff(arr)
    unique = not isinstance(level, Compressed) or level.unique
    # sorted output: increasing coordinates map to increasing ones (repeats too, unless the
    # level itself repeats coordinates: coo's rows)
    monotone = bool(ordered and (steps >= (0 if unique else 1)).all())
    args: tuple
    if level.size <= _TABLE_PER_ENTRY * (entries + arr.size) + _TABLE_SLACK:
        target = np.full(level.size, -1, dtype=dtype)
        target[arr] = np.arange(arr.size, dtype=dtype)
        if int(np.count_nonzero(target >= 0)) == arr.size:  # no repeats: one target each
            args, kernel = (target,), _mapped_once
        else:
            tab_ptr = np.zeros(level.size + 1, dtype=np.int64)
            np.cumsum(np.bincount(arr, minlength=level.size), out=tab_ptr[1:])
            args, kernel = (tab_ptr, np.argsort(arr, kind="stable").astype(dtype)), _mapped
    else:
        order = np.argsort(arr, kind="stable")
        args, kernel = (arr[order].astype(dtype), order.astype(dtype)), _searched
    pos, crd, counts = _run_pass(kernel, lo, hi, idx, args, dtype, vals=vals)
    return Children(pos, crd, counts, monotone)


def _dense_children(level: Dense, src: np.ndarray, pick: Pick) -> Children:
    """Selected children of a dense level under parents ``src`` (computed, not searched)."""
    c = _coords(pick, level.size)
    if src.size == 1 and src[0] == 0:  # the root: positions are the coordinates
        return Children(c, np.arange(c.size, dtype=np.int64), np.array([c.size]), True)
    check_allocation(src.size * c.size, np.int64, "the positions a selection reads")
    pos = (src[:, None] * level.size + c[None, :]).reshape(-1)
    crd = np.tile(np.arange(c.size, dtype=np.int64), src.size)
    return Children(pos, crd, np.full(src.size, c.size, dtype=np.int64), True)


def _children(level: Level, src: np.ndarray, pick: Pick, vals: np.ndarray | None = None
              ) -> Children | None:
    if isinstance(level, Dense):
        return _dense_children(level, src, pick)
    if isinstance(level, Compressed | Singleton):
        return _sparse_children(level, src, pick, vals)
    return None


def _new_size(pick: Pick, n: int) -> int:
    return n if pick is None else len(pick)


# ----------------------------------------------------------------------------- the walk


def select(t: Tensor, picks: Sequence[Pick]) -> Tensor | None:
    """``t`` indexed by one pick per axis (axis order; see :data:`Pick`), orthogonally:
    integer-picked axes dropped, the others renumbered ``0..len(pick)-1`` in pick order;
    same fill, and the same level kinds where the structure allows (the result stays
    sparse). Reads only the selected parents' pointers and entries. None when ``t``'s
    layout has levels this walk does not handle (hashed, bytemap, structured) or when
    dropping an axis would need restructuring beyond the last kept level: the caller then
    selects from the stored coordinates."""
    if len(picks) != t.ndim or not t.ndim:
        return None
    column = _column_of_dense_rows(t, picks)
    if column is None:
        column = _window_of_dense_rows(t, picks)
    if column is not None:
        return column
    out: list[Level] = []
    walk = _Walk.emitted(np.zeros(1, dtype=np.int64))
    values = None
    for k, (level, axis) in enumerate(zip(t.levels, t.mode_order, strict=True)):
        pick = picks[axis]
        if k == t.ndim - 1 and walk.one_each and isinstance(level, Compressed) and \
                not isinstance(pick, int) and _as_range(pick, level.size) == range(level.size):
            values = _whole_segments(out, level, walk.src, t.values)
            break
        # the last kept compressed level copies values, not positions
        leaf = k == t.ndim - 1 and not isinstance(pick, int) and isinstance(level, Compressed)
        ch = _children(level, walk.src, pick, t.values if leaf else None)
        if ch is None:
            return None
        if leaf:
            values = ch.pos
        if isinstance(pick, int):
            walk = walk.dropped(ch)
            continue
        if not _emit(out, level, walk, ch, _new_size(pick, level.size), k == t.ndim - 1):
            return None
        walk = _Walk.emitted(ch.pos)
    if not out:
        return None  # every axis an integer: one element (the caller locates it)
    if not walk.one_each and not _prune(out, walk.owner):
        return None
    tail = out[-1]
    if isinstance(tail, Compressed) and not tail.unique:  # coo's rows, its columns dropped
        out[-1] = Compressed(tail.size, tail.ptr, tail.idx)
    kept = [a for a in range(t.ndim) if not isinstance(picks[a], int)]
    rank = {a: k for k, a in enumerate(kept)}
    order = tuple(rank[a] for a in t.mode_order if a in rank)
    shape = tuple(_new_size(picks[a], t.shape[a]) for a in kept)
    spec = _spec_of(tuple(lv.kind for lv in out), order)
    if values is None:
        values = t.values[walk.src]
    return Tensor(shape, out, order, values, t.fill_value, format=spec, check=False)


def _column_of_dense_rows(t: Tensor, picks: Sequence[Pick]) -> Tensor | None:
    """``x[:, j]`` of a CSR (``x[i, :]`` of a CSC): one compiled pass over the row pointers
    finds the rows holding ``j``, so memory is the hits, not the walk's per-row positions,
    segments and counts (``x[:, 5]`` of a 1e9-row CSR: 48 GB). None for other shapes."""
    if t.ndim != 2 or len(t.levels) != 2:
        return None
    root, leaf = t.levels
    a0, a1 = t.mode_order
    key = picks[a1]
    if (not isinstance(key, int) or not isinstance(root, Dense)
            or _as_range(picks[a0], root.size) != range(root.size)
            or type(leaf) is not Compressed or not leaf.unique):
        return None
    dt = np.int64 if root.size >= 2**31 - 1 else leaf.idx.dtype
    ptr, idx, c = leaf.ptr, leaf.idx, leaf.idx.dtype.type(key)
    if sorts_on_numpy(ptr.size + idx.size):
        rows, pos = SN.rows_holding(ptr, idx, c)
        rows, n = rows.astype(dt), rows.size
    else:
        none = np.empty(0, dtype=np.int64)
        n = _rows_holding(ptr, idx, c, leaf.ordered, none.astype(dt), none, False)
        rows, pos = np.empty(n, dtype=dt), np.empty(n, dtype=np.int64)
        if n:
            _rows_holding(ptr, idx, c, leaf.ordered, rows, pos, True)
    level = Compressed(root.size, np.array([0, n], dtype=dt), rows)
    return Tensor((t.shape[a0],), [level], (0,), t.values[pos], t.fill_value,
                  format=_spec_of((level.kind,), (0,)), check=False)


# a window of a CSR's columns under all of its rows is stored DCSR (only the rows holding
# entries) when the rows are this many and the hits at most one per WINDOW_SPARSE_RATIO rows
WINDOW_MIN_ROWS = 1 << 20
WINDOW_SPARSE_RATIO = 16


def _window_of_dense_rows(t: Tensor, picks: Sequence[Pick]) -> Tensor | None:
    """``x[:, j0:j1]`` of a CSR with far more rows than entries in the window (``x[i0:i1]``
    of such a CSC): a DCSR of the rows holding entries there, found in one pass over the
    pointers, instead of a CSR whose walk keeps several int64 arrays per row. None for
    other shapes, steps, and windows that a dense row level suits."""
    if t.ndim != 2 or len(t.levels) != 2:
        return None
    root, leaf = t.levels
    a0, a1 = t.mode_order
    r = _as_range(picks[a1], getattr(leaf, "size", 0))
    if (r is None or isinstance(picks[a1], int) or r.step != 1 or not isinstance(root, Dense)
            or root.size < WINDOW_MIN_ROWS or _as_range(picks[a0], root.size) != range(root.size)
            or type(leaf) is not Compressed or not leaf.unique or not leaf.ordered):
        return None
    dt = np.int64 if root.size >= 2**31 - 1 else leaf.idx.dtype
    ptr, idx = leaf.ptr, leaf.idx
    lo, hi = idx.dtype.type(r.start), idx.dtype.type(max(r.stop, r.start))
    none = np.empty(0, dtype=np.int64)
    m, w = _rows_in_window(ptr, idx, lo, hi, none.astype(dt), none.astype(dt),
                           none.astype(idx.dtype), none, False)
    if m * WINDOW_SPARSE_RATIO > root.size:
        return None
    roots, cptr = np.empty(m, dtype=dt), np.zeros(m + 1, dtype=dt)
    crd, pos = np.empty(w, dtype=idx.dtype), np.empty(w, dtype=np.int64)
    if m:
        _rows_in_window(ptr, idx, lo, hi, roots, cptr, crd, pos, True)
    levels = [Compressed(root.size, np.array([0, m], dtype=dt), roots),
              Compressed(len(r), cptr, crd)]
    shape = tuple(len(r) if a == a1 else t.shape[a] for a in range(2))
    return Tensor(shape, levels, t.mode_order, t.values[pos], t.fill_value,
                  format=_spec_of(tuple(lv.kind for lv in levels), tuple(t.mode_order)),
                  check=False)


def _whole_segments(out: list[Level], level: Compressed, src: np.ndarray,
                    values: np.ndarray) -> np.ndarray:
    """The last level kept whole under parents ``src`` (one output position each): its
    ``idx`` and the values copied range by range in one compiled pass, no position array
    (``A[rows]`` of CSR, ``x[i]``). Appends the level, returns the values."""
    lo, hi = _segments(level, src)
    ptr = np.zeros(lo.size + 1, dtype=level.ptr.dtype)
    np.cumsum(hi - lo, out=ptr[1:])
    crd, vals = gather_pair(level.idx, values, lo, hi, int(ptr[-1]))
    out.append(level.with_arrays(ptr=ptr, idx=crd))
    return vals


@functools.lru_cache(maxsize=256)
def _spec_of(kinds: tuple[str, ...], order: tuple[int, ...]) -> FormatSpec:
    """The named layout of these level kinds (``infer_spec``, remembered: a selection in a
    loop should not pay for it each time)."""
    return infer_spec(kinds, order)


def _emit(out: list[Level], level: Level, walk: _Walk, ch: Children, size: int,
          last: bool) -> bool:
    """Append the output level of a kept axis over the current output positions; False
    when the structure cannot hold it (a dense level under positions that lost or merged
    parents through a dropped axis)."""
    one_each = walk.one_each
    if isinstance(level, Dense):
        out.append(Dense(size))
        return one_each
    if isinstance(level, Singleton) and out and is_coo_kind(out[-1].kind):
        # coo below its first level: stays coo while each kept parent has one child
        if not ch.monotone or bool((ch.counts > 1).any()):
            return False  # a repeated or unsorted index array on coo's columns
        if not (one_each and bool((ch.counts == 1).all())) and \
                not _prune(out, walk.owner[ch.counts > 0]):
            return False
        out.append(Singleton(size, ch.crd))
        return True
    # a singleton under parents a dropped axis merged (coo's x[i]) becomes compressed
    unique = last if isinstance(level, Singleton) else level.unique  # type: ignore[union-attr]
    ordered = level.properties.ordered
    if not unique and not ch.monotone:
        return False  # coo's rows reversed or repeated: its runs of equal rows would break
    ptr = _owner_ptr(walk, ch.counts, ch.crd.dtype)
    if not ch.monotone and ordered:
        sort_segments(ptr, ch.crd, ch.pos)  # in place, stable: positions follow
    out.append(Compressed(size, ptr, ch.crd, unique=unique, ordered=ordered))
    return True


def _owner_ptr(walk: _Walk, counts: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Pointers of the output positions over the children counted per source parent (each
    parent belongs to the output position ``walk.owner``, non-decreasing)."""
    cum = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=cum[1:])
    if walk.one_each:
        return cum.astype(dtype, copy=False)
    bounds = np.searchsorted(walk.owner, np.arange(walk.n_owner + 1), "left")
    return cum[bounds].astype(dtype, copy=False)


def _prune(out: list[Level], keep: np.ndarray, depth: int | None = None) -> bool:
    """Keep only positions ``keep`` (increasing) of output level ``depth`` (the last one by
    default), the ones that found something below (an axis dropped or filtered under it):
    a compressed level drops the others, a singleton level too and so does its parent
    (same positions), a dense root becomes compressed. False for other structures."""
    if keep.size > 1 and not bool((keep[1:] > keep[:-1]).all()):
        return False  # two values under one position: not an orthogonal selection
    depth = len(out) - 1 if depth is None else depth
    level = out[depth]
    if isinstance(level, Singleton):
        out[depth] = Singleton(level.size, level.idx[keep])
        return depth > 0 and _prune(out, keep, depth - 1)
    if isinstance(level, Compressed):
        ptr = np.searchsorted(keep, level.ptr, "left").astype(level.ptr.dtype)
        out[depth] = level.with_arrays(ptr=ptr, idx=level.idx[keep])
        return True
    if isinstance(level, Dense) and depth == 0:
        out[depth] = Compressed(level.size, np.array([0, keep.size], dtype=np.int64), keep)
        return True
    return False
