"""The CPU host of a kernel: chunk counts, thread pool, allocation, the chunk functions'
calls in order (``chunk`` + ``combine`` + ``finalize``, or ``count`` + offsets + ``fill``,
or one bounded fill pass), and folding skipped reduction entries back in.

Arguments are found by role (``params.Role``), never by position or name.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numba
import numpy as np

from lazysparse.formats.config import (
    BINS_PER_ENTRY,
    BINS_SLACK,
    check_allocation,
    get_densify_limit,
)
from lazysparse.formats.specs import is_structured
from lazysparse.kernels.backends.numba.chunked_append import (
    chunk_bounds_ok,
    chunk_group_bounds,
    chunked_single_pass,
)
from lazysparse.kernels.backends.numba.fill_compaction import compact_chunks, shifted_row_ends
from lazysparse.kernels.compile.lowering.kernel import Lowered
from lazysparse.kernels.compile.planning.analysis import QueryData
from lazysparse.kernels.compile.planning.coiterate import fold_value
from lazysparse.kernels.compile.planning.hash_workspace import selected_row_entries
from lazysparse.kernels.compile.planning.kernel_plan import EpiloguePlace, workspace_single_pass
from lazysparse.kernels.compile.planning.output_plan import OutputMode
from lazysparse.kernels.compile.planning.parallel import chunk_count, combine_count, stored_work
from lazysparse.kernels.compile.planning.params import Role, scalar

if TYPE_CHECKING:
    from lazysparse.kernels.backends.numba.kernel import Kernel

PARALLEL_MIN_ITERATIONS = 2048  # outer iterations that go parallel whatever their work

# the chunk arguments of a call that runs in one chunk (NumPy scalars are immutable)
_ZERO, _ONE = np.int64(0), np.int64(1)


@dataclass(frozen=True)
class HostFacts:
    """What every call of a kernel's host reads of its lowered form, derived once per
    kernel (``Kernel.facts``; issue 34: a repeated call searches no parameter by role and
    analyses no loop): argument positions, the dtype the chunks write, and the output's
    shape of work."""

    out_size: int  # position of the output size argument
    dense_size: int  # of the dense-prefix size
    init: int  # of the reduction's init
    start: int  # of the preset of a one-pass dense output (identity, init or result fill)
    od: np.dtype  # what the chunks write
    dense: bool  # a dense output (or a shared pattern's values), written in place
    shared_fill: bool  # a shared pattern that counts the entries equal to the fill
    writes_all: bool  # the chunk stores every output entry: no preset fill pass
    partials: bool
    folds: bool
    finalize: bool


def host_facts(k: Kernel) -> HostFacts:
    """The :class:`HostFacts` of kernel ``k``."""
    lw, info = k.lowered, k.info
    sig = lw.signature
    start = Role.RED_ID if lw.partials else Role.INIT if lw.epilogue else Role.OUT_FILL
    mode = lw.output.mode
    return HostFacts(sig.position(Role.OUT_SIZE), sig.position(Role.DENSE_SIZE),
                     sig.position(Role.INIT), sig.position(start), _acc_out_dtype(k),
                     not mode.sparse, mode is OutputMode.SHARED and lw.drop_fill is not None,
                     _writes_every_output(lw, info.out_spec, info.reduce_op is None),
                     lw.partials, lw.fold is not None,
                     lw.epilogue is EpiloguePlace.FINALIZE)


_POOL: list[ThreadPoolExecutor] = []
_POOL_LOCK = threading.Lock()


def _pool(workers: int) -> ThreadPoolExecutor:
    """The shared worker pool, with at least ``workers`` threads (made or grown once when
    threads call kernels at once; callers of one pool share its workers)."""
    pool = _POOL[0] if _POOL else None
    if pool is None or pool._max_workers < workers:  # noqa: SLF001
        with _POOL_LOCK:
            if not _POOL or _POOL[0]._max_workers < workers:  # noqa: SLF001
                _POOL[:] = [ThreadPoolExecutor(max_workers=max(
                    workers, numba.get_num_threads() - 1), thread_name_prefix="lazysparse")]
            pool = _POOL[0]
    return pool


def no_workspaces() -> tuple[Any, ...]:
    return ()


# workspace bytes a kernel keeps between calls (per kernel; beyond it arrays are dropped)
WORKSPACE_KEEP_BYTES = 256 << 20


class WorkspacePool:
    """One kernel's workspace arrays, kept between calls: a kernel leaves its workspaces as
    it found them (a row workspace's drain clears its marks), so a later call (the next
    step of a user's loop, an SpMSpV with a million-entry workspace) takes them instead of
    allocating and first-touching them again. A call that raised does not give them back.
    Thread-safe: each worker takes its own arrays (``list.pop``/``append`` are atomic)."""

    def __init__(self) -> None:
        self._free: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}

    def maker(self, fn: str, specs: tuple[tuple[int, np.dtype, Any], ...]) -> _PooledMaker:
        """The maker of ``fn``'s workspaces of these (size, dtype, fill) specs."""
        key = (fn, *((n, dt.str, None if f is None else f.value) for n, dt, f in specs))
        return _PooledMaker(self._free.setdefault(key, []), specs)


class _PooledMaker:
    """Takes a free set of workspaces or allocates one; ``give_back`` returns a set."""

    def __init__(self, free: list[tuple[Any, ...]], specs: tuple[Any, ...]) -> None:
        self.free, self.specs = free, specs
        self.nbytes = sum(n * dt.itemsize for n, dt, _ in specs)

    def __call__(self) -> tuple[Any, ...]:
        try:
            return self.free.pop()
        except IndexError:
            pass
        out = []
        for n, dt, fill in self.specs:
            if fill is None:
                out.append(np.empty(n, dt))
            elif fill.value in (0, False):
                out.append(np.zeros(n, dt))
            else:
                out.append(np.full(n, fill.value, dt))
        return tuple(out)

    def give_back(self, w: tuple[Any, ...]) -> None:
        """Keep ``w`` (left clean by a call that finished) for the next call."""
        if (len(self.free) + 1) * self.nbytes <= WORKSPACE_KEEP_BYTES and \
                len(self.free) < max(1, numba.get_num_threads()):
            self.free.append(w)


def _parallel_map(fn: Any, nch: int, args: tuple[Any, ...],
                  ws: Callable[[], tuple[Any, ...]] = no_workspaces,
                  before: Callable[[int], None] | None = None) -> None:
    """Run ``fn(*args, t, nch, ..., *workspaces)`` for every chunk ``t`` on Numba's thread
    count: each worker takes the next chunk until none is left, reusing its workspaces
    (``before(t)`` first, on the same thread). The calling thread is one of the workers:
    it starts at once, while a pool thread may take a while to wake (a 2 ms SDDMM ran all
    its chunks before the pool's second thread took one)."""
    if nch == 1 and ws is no_workspaces and before is None:  # one chunk, nothing to hand out
        fn(*args[0], _ZERO, _ONE, *args[1])
        return
    nthreads = min(numba.get_num_threads(), nch)
    per = getattr(ws, "nbytes", 0)
    if per and nthreads > 1:
        # each worker holds a workspace set (a row workspace is chosen only when one set
        # fits the densify limit, ``KernelInfo.wide``): all of them together within it
        nthreads = min(nthreads, threads_within_limit(per))
    chunks = itertools.count()  # next() on a count is atomic under the GIL

    def worker() -> None:
        w = ws()
        while (t := next(chunks)) < nch:
            if before is not None:
                before(t)
            fn(*args[0], np.int64(t), np.int64(nch), *args[1], *w)
        give_back = getattr(ws, "give_back", None)
        if give_back is not None:  # finished: the workspaces are clean again
            give_back(w)

    if nthreads <= 1:
        worker()
        return
    pool = _pool(nthreads - 1)
    futs = [pool.submit(worker) for _ in range(nthreads - 1)]
    try:
        worker()
    finally:
        wait(futs)  # no chunk outlives the call, even when this thread's chunk raised
    for f in futs:
        f.result()



def threads_within_limit(nbytes: int) -> int:
    """How many workers may each hold ``nbytes`` of workspace (or partials) at once
    without the total passing the densify limit (at least one)."""
    limit = get_densify_limit()
    return numba.get_num_threads() if limit is None else max(1, limit // max(nbytes, 1))


def stored_positions(data: QueryData) -> int:
    """The most items one array of the operands holds (values or a level's pointers): an
    allocation no larger is proportional to data already in memory."""
    most = 0
    for t in data.tensors:
        most = max(most, int(t.values.shape[0]))
        for lv in t.levels:
            ptr = getattr(lv, "ptr", None)
            if ptr is not None:
                most = max(most, int(ptr.shape[0]))
    return most


def _check_dense_output(k: Kernel, data: QueryData, osize: int, nch: int) -> int:
    """DensifyError before a dense (or shared) result, its fold counts and its per-chunk
    partials are allocated past the densify limit, unless no larger than an operand's
    stored values (the optimizer's rule: a result no larger than a dense operand
    densifies nothing, ``optimizer.analysis.check_dense_result``). Returns the chunk count,
    lowered so that the partials (one result-sized array per chunk) stay within it."""
    limit = get_densify_limit()
    if limit is None:
        return nch
    lw = k.lowered
    od = k.facts.od
    if osize * od.itemsize > limit:
        check_allocation(osize, od, f"the kernel's dense result of shape {data.out_shape}",
                         within=stored_work(data), shape=data.out_shape)
    per = od.itemsize + (8 if lw.fold is not None else 0)  # a value and a fold count
    if lw.partials and nch > 1 and osize * per * nch > limit:
        nch = max(1, limit // max(osize * per, 1))
    return nch


def _check_dense_prefix(data: QueryData, dsize: int) -> None:
    """DensifyError before a sparse result's per-row counts and pointers under its dense
    levels (``dsize`` parents, two int64 arrays) pass the densify limit, unless an
    operand holds an array as long (a csr operand's own pointers)."""
    limit = get_densify_limit()
    if limit is None or 16 * (dsize + 1) <= limit:
        return
    check_allocation(2 * (dsize + 1), np.int64, f"the kernel's pointer array under dense "
                     f"levels of {dsize} parents (result shape {data.out_shape})",
                     within=2 * stored_positions(data) + 2)


def _check_sparse_result(k: Kernel, data: QueryData, n: int, idt: Any) -> None:
    """DensifyError before a sparse result's ``n`` counted entries (a coordinate per
    sparse level and a value each) pass the densify limit while they outnumber the
    operands' stored values several times over (``BINS_PER_ENTRY``): the outer product
    of two dense 10⁵-vectors is a 10¹⁰-entry "sparse" result, a densification."""
    limit = get_densify_limit()
    if limit is None:
        return
    ncoords = sum(len(g) for g in k.lowered.output.groups)
    od = _acc_out_dtype(k)
    if n * (np.dtype(idt).itemsize * ncoords + od.itemsize) <= limit:
        return
    stored = sum(int(t.values.shape[0]) for t in data.tensors)
    entry = np.dtype([("coords", idt, (ncoords,)), ("value", od)])
    check_allocation(n, entry, f"the kernel's sparse result of shape {data.out_shape} "
                     f"({n} entries)", within=BINS_PER_ENTRY * stored + BINS_SLACK)


def chunks(k: Kernel, data: QueryData, args: list[Any]) -> int:
    """How many chunks the outermost loop is split into (1 when it must run in order)."""
    lw = k.lowered
    if not lw.parallel:
        return 1
    return chunk_count(lw, data, int(args[k.facts.out_size]), numba.get_num_threads(),
                       PARALLEL_MIN_ITERATIONS)


def _arg(k: Kernel, args: list[Any], role: Role) -> Any:
    return args[k.lowered.signature.position(role)]


def run_chunks(k: Kernel, data: QueryData, args: list[Any]) -> tuple[Any, ...]:
    """Host side of a kernel: allocate, run the chunk functions, return the result arrays
    (``host.assemble`` wraps them)."""
    lw, facts = k.lowered, k.facts
    nch = chunks(k, data, args)
    osize, dsize = int(args[facts.out_size]), int(args[facts.dense_size])
    if facts.dense:
        nch = _check_dense_output(k, data, osize, nch)
    elif lw.output.dense_prefix:
        _check_dense_prefix(data, dsize)
    if facts.shared_fill:
        # the shared values and, per chunk, how many equal the fill (``stored_fill``)
        nfill = np.zeros(nch, np.int64)
        return (_run_in_place(k, data, args, nch, osize, (nfill,)), nfill)
    if facts.dense:
        return (_run_in_place(k, data, args, nch, osize),)
    if nch == 1:
        ub = _entry_bounds(k, data)
        if ub is not None:
            return _single_pass(k, data, args, dsize, ub)
    elif chunk_bounds_ok(k) and _entry_bounds(k, data) is not None:
        nch = min(nch, numba.get_num_threads())  # one region per thread: fewer moves
        return chunked_single_pass(k, data, args, dsize, nch, _parallel_map)
    return _count_then_fill(k, data, args, nch, dsize)


def _acc_out_dtype(k: Kernel) -> np.dtype:
    """The dtype the chunks write: a finalize epilogue maps the reduced values (acc dtype)
    to the output afterwards."""
    info = k.info
    return info.acc_dtype if k.lowered.epilogue is EpiloguePlace.FINALIZE else info.out_dtype


def _run_in_place(k: Kernel, data: QueryData, args: list[Any], nch: int, osize: int,
                  extra: tuple[Any, ...] = ()) -> Any:
    """A dense or shared output: ``chunk`` over the chunks (into partials, combined), then
    the host's fold of skipped entries and the ``finalize`` epilogue. ``extra``: arrays the
    chunks write besides the output (a shared output's fill counts)."""
    info, mod, facts = k.info, k.module, k.facts
    od = facts.od
    if facts.folds:
        cnt = np.zeros(osize * (nch if facts.partials else 1), np.int64)
        extra = (cnt, *extra)
    init = args[facts.init]
    if facts.partials and nch > 1:
        res = _run_partials(k, args, nch, osize, od, extra)
    else:
        start = args[facts.start]
        res = uninitialized(osize, od) if facts.writes_all else np.full(osize, start, od)
        _parallel_map(mod.chunk, nch, (args, (res, *extra)), k.workspaces("chunk", args))
        if facts.partials and not _same_bits(start, init):
            # one chunk: combine init with its partial (skipped when init is the
            # reduction's identity, bit for bit: init (+) partial is the partial)
            out, res = res, np.empty(osize, dtype=od)
            mod.combine_range(out, res, np.int64(1), np.int64(osize), init, np.int64(0),
                              np.int64(1))
    if facts.folds:
        fold_skipped(k, data, res, cnt.reshape(-1, osize).sum(axis=0) if osize and
                     cnt.shape[0] > osize else cnt)
    if facts.finalize:  # after partials and folding: values complete
        out = res if res.dtype == info.out_dtype else np.empty(osize, info.out_dtype)
        mod.finalize(*args, res, out)
        res = out
    return res


def _index_dtype(data: QueryData) -> type:
    """The result's index dtype: int32 unless an extent needs int64."""
    return np.int64 if max(data.out_shape, default=0) >= 2**31 - 1 else np.int32


def _count_then_fill(k: Kernel, data: QueryData, args: list[Any], nch: int,
                     dsize: int) -> tuple[Any, ...]:
    """A sparse output: ``count`` per chunk, offsets by prefix sums, ``fill``; when the fill
    dropped entries equal to the result fill, the chunks' entries are moved together and
    the pointers recomputed from what the fill wrote (``fill_compaction.compact_chunks``).
    Where each chunk's entries are bounded before the run (``chunk_group_bounds``: a DCSR
    intersection or union), the bounds replace the count and the fill is compacted."""
    out_plan, mod = k.lowered.output, k.module
    ng = len(out_plan.groups)
    cntpd = np.zeros(max(dsize, 1) if out_plan.dense_prefix else 1, np.int64)
    cc = chunk_group_bounds(k, data, nch)
    if cc is not None and _entry_bounds(k, data) is None:
        cc = None  # a loop's extent far past the data: count first
    bounded = cc is not None
    if cc is None:
        cc = [np.zeros(nch, np.int64) for _ in range(ng)]
        _parallel_map(mod.count, nch, (args, (*cc, cntpd)), k.workspaces("count", args))
    offs = [np.concatenate(([0], np.cumsum(c))).astype(np.int64) for c in cc]
    tots = [int(o[-1]) for o in offs]
    idt = _index_dtype(data)
    _check_sparse_result(k, data, tots[-1], idt)
    arrays: list[Any] = []
    for g, grp in enumerate(out_plan.groups):
        if g == 0:
            if out_plan.dense_prefix:
                ptr = np.zeros(dsize + 1, np.int64)
                np.cumsum(cntpd[:dsize], out=ptr[1:])
            else:
                ptr = np.array([0, tots[0]], np.int64)
        else:
            ptr = np.zeros(tots[g - 1] + 1, np.int64)
        arrays.append(ptr)
        arrays += [np.empty(tots[g], idt) for _ in grp]
    vals = np.empty(tots[-1], _acc_out_dtype(k))
    fin = [np.zeros(nch, np.int64) for _ in range(ng)]
    ends = np.zeros_like(cntpd)
    _parallel_map(mod.fill, nch, (args, (*offs, *fin, ends, *arrays, vals)),
                  k.workspaces("fill", args))
    if k.lowered.drop_fill is None and not bounded:
        return (*arrays, vals)
    packed = compact_chunks(out_plan.groups, offs, fin, arrays, vals)
    if packed is None:  # no entry equal to the fill was dropped: the counts were exact
        return (*arrays, vals)
    arrays, vals, shift = packed
    if out_plan.dense_prefix:  # the fill phase's own per-row counts or row ends
        ptr = arrays[0]
        if k.lowered.row_ends:
            np.maximum.accumulate(shifted_row_ends(ends[:dsize], offs[0], shift[0]),
                                  out=ptr[1:])
        else:
            np.cumsum(ends[:dsize], out=ptr[1:])
    else:
        arrays[0] = np.array([0, int(arrays[1].shape[0])], np.int64)
    return (*arrays, vals)


def _run_partials(k: Kernel, args: list[Any], nch: int, osize: int, od: np.dtype,
                  extra: tuple[Any, ...]) -> Any:
    """Chunk ``t`` reduces into partial ``t`` (``osize`` entries, preset to the identity by
    the thread that runs the chunk, so first touches and fills run in parallel too), then
    ``combine_range`` folds ``init`` and the partials, the output split among threads."""
    mod = k.module
    red_id = _arg(k, args, Role.RED_ID)
    part = np.empty(osize * nch, dtype=od)

    def preset(t: int) -> None:
        part[t * osize:(t + 1) * osize] = red_id  # NumPy releases the GIL for the fill

    _parallel_map(mod.chunk, nch, (args, (part, *extra)), k.workspaces("chunk", args), preset)
    res = np.empty(osize, dtype=od)
    head = (part, res, np.int64(nch), np.int64(osize), _arg(k, args, Role.INIT))
    _parallel_map(mod.combine_range, combine_count(osize, numba.get_num_threads()),
                  (head, ()))
    return res


def _writes_every_output(lw: Lowered, spec: Any = None, maps: bool = False) -> bool:
    """Whether the chunk stores every output entry exactly once (a scalar accumulator
    under full-range loops over the output fields; a map — no reduction — whose every loop
    is a full range that skips no coordinate; a shared compressed pattern's value per
    stored position, its operand driving every output loop), so the output needs no
    initial fill. A structured layout's slots outside the matrix (DIA) or past a row's
    entries (ELL padding) are not visited: those keep the preset."""
    o = lw.output
    if o.mode is OutputMode.SHARED:
        return (lw.fold is None and not lw.partials and spec is not None
                and not is_structured(spec))
    if o.mode is not OutputMode.DENSE or lw.partials:
        return False
    if o.acc_depth is None:  # a map stores at each point of its loops: all of them visited
        return (maps and lw.fold is None and (spec is None or not is_structured(spec))
                and all(not p.kind.skips and set(p.required) <= set(p.located)
                        for p in lw.plans))
    return not any(p.kind.skips for p in lw.plans[:o.acc_depth])


def uninitialized(n: int, dtype: Any) -> np.ndarray:
    """An output array the kernel writes in full (``_writes_every_output``): no fill pass.
    Tests replace it with a poisoned array, so an entry left unwritten shows."""
    return np.empty(n, dtype=dtype)


def _same_bits(a: Any, b: Any) -> bool:
    """Whether two scalars have the same dtype and bytes (so -0.0 differs from 0.0)."""
    if a is b:
        return True
    if isinstance(a, np.generic) and type(a) is type(b):  # the bound arguments: no arrays
        return a.tobytes() == b.tobytes()
    x, y = np.asarray(a), np.asarray(b)
    return x.dtype == y.dtype and x.tobytes() == y.tobytes()


# one fill pass into bounded buffers replaces count + fill while the bound is at most this
# many times the operands' stored positions (or this many entries); pages of the buffers
# past the result are never touched, so a loose bound costs address space, not time
SINGLE_PASS_SLACK = 8
SINGLE_PASS_MIN = 1 << 22


def _entry_bounds(k: Kernel, data: QueryData) -> list[int] | None:
    """Per output group, a bound on its entries known before running (None: count first).
    Appends: the driving operands' position counts; a Gustavson row workspace: the
    number of multiplications, ``sum(len(B row j) for each stored A[i, j])``."""
    lw = k.lowered
    if lw.bounds is not None:
        ub = [b.count(data.tensors, data.extents) for b in lw.bounds]
        if any(b.extent is not None for b in lw.bounds) and \
                max(ub) > max(SINGLE_PASS_SLACK * stored_positions(data), SINGLE_PASS_MIN):
            return None  # a loop's extent far past the data: count first
        return ub
    if lw.ws_bound is None:
        return _whole_output_bound(k, data)
    a, la, b = lw.ws_bound
    aidx = data.tensors[a].levels[la].idx
    bptr = data.tensors[b].levels[1].ptr
    if aidx.shape[0] == 0:
        return [0]
    flops = selected_row_entries(bptr, aidx)
    dense = math.prod(data.out_shape)
    ub = min(flops, dense)
    stored = sum(int(lv.idx.shape[0]) for t in data.tensors for lv in t.levels
                 if hasattr(lv, "idx"))
    if ub <= max(SINGLE_PASS_SLACK * stored, SINGLE_PASS_MIN):
        return [ub]
    entry = np.dtype(_index_dtype(data)).itemsize + k.info.out_dtype.itemsize
    return [ub] if workspace_single_pass(ub, entry, get_densify_limit()) else None


def _whole_output_bound(k: Kernel, data: QueryData) -> list[int] | None:
    """A sparse result of one group and no dense prefix (a vector, COO) has at most its
    dense size in entries: the bound when that size is within ``SINGLE_PASS_SLACK`` times
    the values an operand stores (``A.T @ v`` scattered into a vector of 3·10⁴ entries from
    2.6·10⁵ stored: one fill pass, not a count pass and a fill pass over the matrix). A
    hypersparse operand's result is counted first: its dense size may dwarf its entries
    (a column max of a 10⁷-column matrix of a few entries)."""
    out = k.lowered.output
    if len(out.groups) != 1 or out.dense_prefix:
        return None
    size = math.prod(data.out_shape)
    held = max((int(t.values.shape[0]) for t in data.tensors), default=0)
    return [size] if size <= SINGLE_PASS_SLACK * held else None


def _single_pass(k: Kernel, data: QueryData, args: list[Any], dsize: int,
                 ub: list[int]) -> tuple[Any, ...]:
    """Sequential append with no counting pass: allocate each group's bound (see
    ``_entry_bounds``), fill once, then trim."""
    lw, mod = k.lowered, k.module
    groups = lw.output.groups
    ng = len(groups)
    idt = _index_dtype(data)
    arrays: list[Any] = []
    for g, grp in enumerate(groups):
        arrays.append(np.zeros(1 if g == 0 else ub[g - 1] + 1, np.int64))
        arrays += [np.empty(ub[g], idt) for _ in grp]
    vals = np.empty(ub[-1], k.info.out_dtype)
    fin = [np.zeros(1, np.int64) for _ in range(ng)]
    offs = [np.zeros(2, np.int64) for _ in range(ng)]
    cntpd = np.zeros(max(dsize, 1), np.int64)
    ws = k.workspaces("fill", args)
    w = ws()
    mod.fill(*args, np.int64(0), np.int64(1), *offs, *fin, cntpd, *arrays, vals, *w)
    if hasattr(ws, "give_back"):
        ws.give_back(w)
    tots = [int(f[0]) for f in fin]
    out: list[Any] = []
    it = iter(arrays)
    for g, grp in enumerate(groups):
        ptr = next(it)
        if g == 0:
            if lw.output.dense_prefix:
                ptr = np.zeros(dsize + 1, np.int64)
                if lw.row_ends:  # ends of visited positions; unvisited ones hold 0
                    np.maximum.accumulate(cntpd[:dsize], out=ptr[1:])
                else:
                    np.cumsum(cntpd[:dsize], out=ptr[1:])
            else:
                ptr = np.array([0, tots[0]], np.int64)
        else:
            ptr = ptr[:tots[g - 1] + 1]
        out.append(ptr)
        out += [next(it)[:tots[g]] for _ in grp]
    return (*out, vals[:tots[-1]])


_INT64_MAX = int(np.iinfo(np.int64).max)
# entries of the result folded per step: the fold's temporaries (the misses, their
# positions, repeated values) stay this long whatever the result's size
FOLD_BLOCK = 1 << 20


def fold_skipped(k: Kernel, data: QueryData, res: Any, visits: Any) -> None:
    """Fold the entries a reduction skipped into ``res`` in place: each output entry spans
    ``prod(reduced extents)`` points; the ``extent - visits`` it did not visit all hold the
    same value ``v``, so ``res ⊕= repeat(v, extent - visits)`` (``repeat`` from the registry;
    ``v`` once for idempotent operators), a block of entries at a time."""
    info, lw = k.info, k.lowered
    rop = info.reduce_op
    assert rop is not None and lw.fold is not None
    total = math.prod(data.extents[f] for f in info.reduced)
    fills = tuple(t.fill_value for t in data.tensors)
    ok, v = fold_value(info, lw.fold, fills, data.consts)
    if not ok:  # the kernel's structure was chosen without the constants' values
        raise ValueError("internal: folded loops disagree on the skipped value")
    ad = info.acc_dtype
    ods = tuple(np.dtype(d) for d in rop.operand_dtypes(ad, info.expr.dtype))
    x = np.asarray(scalar(scalar(v, info.expr.dtype), ods[1]))
    for lo in range(0, int(res.shape[0]), FOLD_BLOCK):
        part, seen = res[lo:lo + FOLD_BLOCK], visits[lo:lo + FOLD_BLOCK]
        # more than 2**63 - 1 points (a huge sparse array): count in Python ints
        miss = total - seen if total <= _INT64_MAX else total - np.asarray(seen, object)
        where = np.flatnonzero(np.asarray(miss > 0, dtype=bool))
        if where.size == 0:
            continue
        with np.errstate(all="ignore"):
            rep = rop.fold_repeat(x, miss[where])
            cur = part[where].astype(ods[0]) if ods[0] != ad else part[where]
            part[where] = np.asarray(rop.apply(cur, rep)).astype(ad)


__all__ = ["PARALLEL_MIN_ITERATIONS", "chunks", "fold_skipped", "no_workspaces", "run_chunks"]
