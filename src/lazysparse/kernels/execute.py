"""Public entry points: ``compile_query(query, env) -> Kernel`` and ``execute_plan(plan)``.

A :class:`Kernel` is keyed by the query's structure (operand formats, dtypes and fill
values, operators, loop order, output format) — never by data or by the values of scalar
constants, which are passed as arguments. Small all-dense kernels run on NumPy instead.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np

from lazysparse.formats.levels import Compressed, Dense, Singleton
from lazysparse.formats.specs import FormatSpec
from lazysparse.formats.tensor import Tensor
from lazysparse.kernels import cache
from lazysparse.kernels.analysis import (
    DENSE_FILL,
    KernelInfo,
    PAccess,
    PApply,
    PConst,
    PNode,
    QueryData,
    analyze_query,
    fill_key,
)
from lazysparse.kernels.chunked_append import chunk_bounds_ok, chunked_single_pass
from lazysparse.kernels.codegen_numba import eval_size, hoist_workspaces, module_src
from lazysparse.kernels.coiterate import fold_levels, fold_value
from lazysparse.kernels.loop_ir import Alloc, format_function
from lazysparse.kernels.lower import Lowered, lower
from lazysparse.kernels.numpy_executor import numpy_eligible, run_numpy
from lazysparse.kernels.parallel import chunk_count, combine_count
from lazysparse.kernels.relayout import is_relayout, run_relayout
from lazysparse.kernels.workspace import OutputMode
from lazysparse.logic.nodes import Alias, Immediate, Plan, Produces, Query, Table

PARALLEL_MIN_ITERATIONS = 2048  # outer iterations that go parallel whatever their work


# the dispatcher statistics already counted into cache.STATS, by dispatcher (generated
# modules live as long as the process, so their dispatchers' ids stay theirs)
_COUNTED: dict[int, tuple[int, int]] = {}


def _stat_sums(disp: Any) -> tuple[int, int]:
    st = disp.stats
    return sum(st.cache_hits.values()), sum(st.cache_misses.values())


@dataclass
class Kernel:
    """A compiled normal-form query: its loop order, output format, inputs and source."""

    key: str
    info: KernelInfo
    lowered: Lowered
    source: str
    loop_ir: str
    inputs: tuple[str, ...]
    # per function name, the workspaces the host passes as trailing arguments
    # (``codegen_numba.hoist_workspaces``)
    host_ws: dict[str, tuple[Alloc, ...]] = field(default_factory=dict, repr=False)
    _mod: Any = field(default=None, repr=False)

    def workspaces(self, fn: str, args: list[Any]) -> Callable[[], tuple[Any, ...]]:
        """A maker of one worker's workspace arrays for function ``fn``."""
        allocs = self.host_ws.get(fn, ())
        if not allocs:
            return _no_workspaces
        env = dict(zip(self.lowered.params, args, strict=True))
        specs = [(eval_size(a.size, env), np.dtype(a.dtype), a.fill) for a in allocs]

        def make() -> tuple[Any, ...]:
            out = []
            for n, dt, fill in specs:
                if fill is None:
                    out.append(np.empty(n, dt))
                elif fill.value in (0, False):
                    out.append(np.zeros(n, dt))
                else:
                    out.append(np.full(n, fill.value, dt))
            return tuple(out)

        return make

    @property
    def loop_order(self) -> tuple[str, ...]:
        """Loop fields, outermost first."""
        return self.info.loop_order

    @property
    def output_format(self) -> FormatSpec:
        """The result's storage format."""
        return self.info.out_spec

    @property
    def module(self) -> Any:
        """The generated module (imported from the disk cache on first use)."""
        if self._mod is None:
            self._mod = cache.load_module(self.key, self.source)
        return self._mod

    def chunks(self, data: QueryData) -> int:
        """How many chunks a call on ``data`` splits the outermost loop into at the current
        thread count (1: it runs in order; ``kernels.parallel.chunk_count``)."""
        return _chunks(self, data, kernel_args(self, data))

    def __call__(self, data: QueryData) -> Tensor:
        """Run on the query's data and assemble the result tensor."""
        args = kernel_args(self, data)
        fns = [getattr(self.module, f.name) for f in self.lowered.functions]
        counts = [len(f.overloads) for f in fns]
        res = run_chunks(self, data, args)
        for f, c in zip(fns, counts, strict=True):
            if len(f.overloads) != c:  # a new specialization: compiled or loaded from disk
                h0, m0 = _COUNTED.get(id(f), (0, 0))
                h1, m1 = _COUNTED[id(f)] = _stat_sums(f)
                cache.STATS["disk_loaded"] += h1 - h0
                cache.STATS["compiled"] += m1 - m0
        return assemble(self, data, res)


_POOL: list[ThreadPoolExecutor] = []


def _no_workspaces() -> tuple[Any, ...]:
    return ()


def _parallel_map(fn: Any, nch: int, args: tuple[Any, ...],
                  ws: Callable[[], tuple[Any, ...]] = _no_workspaces,
                  before: Callable[[int], None] | None = None) -> None:
    """Run ``fn(*args, t, nch, ..., *workspaces)`` for every chunk ``t`` on Numba's thread
    count: each worker takes the next chunk until none is left, reusing its workspaces
    (``before(t)`` first, on the same thread). The calling thread is one of the workers:
    it starts at once, while a pool thread may take a while to wake (a 2 ms SDDMM ran all
    its chunks before the pool's second thread took one)."""
    nthreads = min(numba.get_num_threads(), nch)
    chunks = itertools.count()  # next() on a count is atomic under the GIL

    def worker() -> None:
        w = ws()
        while (t := next(chunks)) < nch:
            if before is not None:
                before(t)
            fn(*args[0], np.int64(t), np.int64(nch), *args[1], *w)

    if nthreads <= 1:
        worker()
        return
    if not _POOL or _POOL[0]._max_workers < nthreads - 1:  # noqa: SLF001
        _POOL[:] = [ThreadPoolExecutor(max_workers=max(1, numba.get_num_threads() - 1),
                                       thread_name_prefix="lazysparse")]
    futs = [_POOL[0].submit(worker) for _ in range(nthreads - 1)]
    try:
        worker()
    finally:
        wait(futs)  # no chunk outlives the call, even when this thread's chunk raised
    for f in futs:
        f.result()


def _chunks(k: Kernel, data: QueryData, args: list[Any]) -> int:
    """How many chunks the outermost loop is split into (1 when it must run in order)."""
    return chunk_count(k.lowered, data, int(args[k.lowered.params.index("osize")]),
                       numba.get_num_threads(), PARALLEL_MIN_ITERATIONS)


def run_chunks(k: Kernel, data: QueryData, args: list[Any]) -> tuple[Any, ...]:
    """Host side of a kernel: allocate, run the chunk functions (count, offsets, fill)."""
    lw, info, mod = k.lowered, k.info, k.module
    out_plan = lw.output
    nch = _chunks(k, data, args)
    # a finalize epilogue maps the reduced values (acc dtype) to the output afterwards
    od = info.acc_dtype if lw.epilogue == "finalize" else info.out_dtype
    osize, dsize = int(args[-2]), int(args[-1])
    if not out_plan.mode.sparse:
        cnt = np.zeros(osize * (nch if lw.partials else 1) if lw.fold is not None else 0,
                       np.int64)
        extra = (cnt,) if lw.fold is not None else ()
        if lw.partials and nch > 1:
            res = _run_partials(k, args, nch, osize, od, extra)
        else:
            start = args[lw.params.index("red_id" if lw.partials else
                                         "init" if lw.epilogue else "ofill")]
            res = (np.empty(osize, dtype=od) if _writes_every_output(lw)
                   else np.full(osize, start, dtype=od))
            _parallel_map(mod.chunk, nch, (args, (res, *extra)), k.workspaces("chunk", args))
            if lw.partials and not _same_bits(start, args[lw.params.index("init")]):
                # one chunk: combine init with its partial (skipped when init is the
                # reduction's identity, bit for bit: init (+) partial is the partial)
                out, res = res, np.empty(osize, dtype=od)
                mod.combine_range(out, res, np.int64(1), np.int64(osize),
                                  args[lw.params.index("init")], np.int64(0), np.int64(1))
        if lw.fold is not None:
            fold_skipped(k, data, res, cnt.reshape(-1, osize).sum(axis=0) if osize else cnt)
        if lw.epilogue == "finalize":  # after partials and folding: every value is complete
            out = res if res.dtype == info.out_dtype else np.empty(osize, info.out_dtype)
            mod.finalize(*args, res, out)
            res = out
        return (res,)
    ng = len(out_plan.groups)
    if nch == 1:
        ub = _entry_bounds(k, data)
        if ub is not None:
            return _single_pass(k, data, args, dsize, ub)
    elif chunk_bounds_ok(k) and _entry_bounds(k, data) is not None:
        nch = min(nch, numba.get_num_threads())  # one region per thread: fewer moves
        return chunked_single_pass(k, data, args, dsize, nch, _parallel_map)
    cc = [np.zeros(nch, np.int64) for _ in range(ng)]
    cntpd = np.zeros(max(dsize, 1) if out_plan.dense_prefix else 1, np.int64)
    _parallel_map(mod.count, nch, (args, (*cc, cntpd)), k.workspaces("count", args))
    offs = [np.concatenate(([0], np.cumsum(c))).astype(np.int64) for c in cc]
    tots = [int(o[-1]) for o in offs]
    big = max(data.out_shape, default=0) >= 2**31 - 1
    idt = np.int64 if big else np.int32
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
    vals = np.empty(tots[-1], od)
    fin = [np.zeros(nch, np.int64) for _ in range(ng)]
    _parallel_map(mod.fill, nch, (args, (*offs, *fin, np.zeros_like(cntpd), *arrays, vals)),
                  k.workspaces("fill", args))
    return (*arrays, vals)


def _run_partials(k: Kernel, args: list[Any], nch: int, osize: int, od: np.dtype,
                  extra: tuple[Any, ...]) -> Any:
    """Chunk ``t`` reduces into partial ``t`` (``osize`` entries, preset to the identity by
    the thread that runs the chunk, so first touches and fills run in parallel too), then
    ``combine_range`` folds ``init`` and the partials, the output split among threads."""
    lw, mod = k.lowered, k.module
    red_id = args[lw.params.index("red_id")]
    part = np.empty(osize * nch, dtype=od)

    def preset(t: int) -> None:
        part[t * osize:(t + 1) * osize] = red_id  # NumPy releases the GIL for the fill

    _parallel_map(mod.chunk, nch, (args, (part, *extra)), k.workspaces("chunk", args), preset)
    res = np.empty(osize, dtype=od)
    head = (part, res, np.int64(nch), np.int64(osize), args[lw.params.index("init")])
    _parallel_map(mod.combine_range, combine_count(osize, numba.get_num_threads()),
                  (head, ()))
    return res


def _writes_every_output(lw: Lowered) -> bool:
    """Whether the chunk stores every dense output entry exactly once (a scalar accumulator
    under full-range loops over the output fields), so the output needs no initial fill."""
    o = lw.output
    return (o.mode is OutputMode.DENSE and o.acc_depth is not None and not lw.partials
            and not any(p.kind.skips for p in lw.plans[:o.acc_depth]))


def _same_bits(a: Any, b: Any) -> bool:
    """Whether two scalars have the same dtype and bytes (so -0.0 differs from 0.0)."""
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
        return [sum(int(data.tensors[s].levels[lv].idx.shape[0]) for s, lv in atoms)
                for atoms in lw.bounds]
    if lw.ws_bound is None:
        return None
    a, la, b = lw.ws_bound
    aidx = data.tensors[a].levels[la].idx
    bptr = data.tensors[b].levels[1].ptr
    if aidx.shape[0] == 0:
        return [0]
    blen = np.diff(bptr) if bptr.dtype == np.int64 else np.diff(bptr.astype(np.int64))
    flops = int(blen[aidx].sum())
    dense = math.prod(data.out_shape)
    ub = min(flops, dense)
    stored = sum(int(lv.idx.shape[0]) for t in data.tensors for lv in t.levels
                 if hasattr(lv, "idx"))
    if ub > max(SINGLE_PASS_SLACK * stored, SINGLE_PASS_MIN):
        return None
    return [ub]


def _single_pass(k: Kernel, data: QueryData, args: list[Any], dsize: int,
                 ub: list[int]) -> tuple[Any, ...]:
    """Sequential append with no counting pass: allocate each group's bound (see
    ``_entry_bounds``), fill once, then trim."""
    lw, mod = k.lowered, k.module
    groups = lw.output.groups
    ng = len(groups)
    big = max(data.out_shape, default=0) >= 2**31 - 1
    idt = np.int64 if big else np.int32
    arrays: list[Any] = []
    for g, grp in enumerate(groups):
        arrays.append(np.zeros(1 if g == 0 else ub[g - 1] + 1, np.int64))
        arrays += [np.empty(ub[g], idt) for _ in grp]
    vals = np.empty(ub[-1], k.info.out_dtype)
    fin = [np.zeros(1, np.int64) for _ in range(ng)]
    offs = [np.zeros(2, np.int64) for _ in range(ng)]
    cntpd = np.zeros(max(dsize, 1), np.int64)
    mod.fill(*args, np.int64(0), np.int64(1), *offs, *fin, cntpd, *arrays, vals,
             *k.workspaces("fill", args)())
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


def fold_skipped(k: Kernel, data: QueryData, res: Any, visits: Any) -> None:
    """Fold the entries a reduction skipped into ``res`` in place: each output entry spans
    ``prod(reduced extents)`` points; the ``extent - visits`` it did not visit all hold the
    same value ``v``, so ``res ⊕= repeat(v, extent - visits)`` (``repeat`` from the registry;
    ``v`` once for idempotent operators)."""
    info, lw = k.info, k.lowered
    rop = info.reduce_op
    assert rop is not None and lw.fold is not None
    total = math.prod(data.extents[f] for f in info.reduced)
    miss = total - visits
    where = np.nonzero(miss > 0)[0]
    if where.size == 0:
        return
    fills = tuple(t.fill_value for t in data.tensors)
    ok, v = fold_value(info, lw.fold, fills, data.consts)
    if not ok:  # the kernel's structure was chosen without the constants' values
        raise ValueError("internal: folded loops disagree on the skipped value")
    ad = info.acc_dtype
    ods = tuple(np.dtype(d) for d in rop.operand_dtypes(ad, info.expr.dtype))
    with np.errstate(all="ignore"):
        rep = rop.fold_repeat(np.asarray(_scalar(_scalar(v, info.expr.dtype), ods[1])),
                              miss[where])
        cur = res[where].astype(ods[0]) if ods[0] != ad else res[where]
        res[where] = np.asarray(rop.apply(cur, rep)).astype(ad)


def structure_key(info: KernelInfo, data: QueryData) -> tuple[Any, ...]:
    """In-memory cache key: the kernel structure, the result fill value's identity and
    whether skipped reduction entries may be folded in by the host (needs the runtime
    constants to agree on the skipped value; see ``coiterate.fold_value``). An epilogue's
    result fill follows its constants, which no loop compares: the reduction's is keyed."""
    return (info, out_fill_key(info, data), fold_ok(info, data))


def out_fill_key(info: KernelInfo, data: QueryData) -> Any:
    """The result fill's part of the kernel key: only loops over sparse operands compare
    it (``coiterate._may_skip``), so an all-dense kernel with a dense output ignores it."""
    if all(p.full for p in info.out_spec.level_properties()) and \
            all(k == DENSE_FILL for k in info.fill_keys):
        return DENSE_FILL
    return fill_key(data.init if info.epilogue is not None else data.out_fill)


def fold_ok(info: KernelInfo, data: QueryData) -> bool:
    """Whether this call's reduction may skip coordinates and fold their value in on the
    host (``coiterate.fold_levels``, with the constants agreeing: ``fold_value``)."""
    if info.reduce_op is None:
        return False
    fills = tuple(t.fill_value for t in data.tensors)
    levels = fold_levels(info, fills, data.out_fill)
    return levels is not None and fold_value(info, levels, fills, data.consts)[0]


def reassoc_ok(info: KernelInfo) -> bool:
    """Whether the kernel may let LLVM reassociate float arithmetic: a real float sum of
    products of same-dtype operands and constants, or ``where`` choosing between such
    products (a masked contraction: ``where(S != 0, U @ V.T, 0) * S``); only the summation
    order changes, as in any BLAS."""
    rop = info.reduce_op
    if rop is None or rop.name != "add" or info.acc_dtype.kind != "f":
        return False

    def products(n: PNode) -> bool:
        if isinstance(n, PAccess | PConst):
            return n.dtype == info.acc_dtype
        if isinstance(n, PApply) and n.dtype == info.acc_dtype:
            if n.op.name == "multiply":
                return all(products(a) for a in n.args)
            if n.op.name == "where":  # the condition takes no part in the arithmetic
                return all(products(a) for a in n.args[1:])
        return False

    return products(info.expr)


def build_kernel(info: KernelInfo, data: QueryData, key: tuple[Any, ...]) -> Kernel:
    """Lower, generate and wrap the kernel of ``info`` (``key``: its ``structure_key``;
    the module compiles, or loads from the disk cache, on its first call)."""
    fills = tuple(t.fill_value for t in data.tensors)
    lowered = lower(info, fills, data.out_fill, fold=bool(key[2]))
    text = "\n\n".join(format_function(f) for f in lowered.functions)
    # only a scalar accumulator's loop can become a vector reduction; in-place scatters
    # (A^T x) measured no faster, so they keep strict order
    fast = reassoc_ok(info) and lowered.output.acc_depth is not None
    fns, host_ws = hoist_workspaces(lowered.functions)
    digest = cache.source_hash(module_src(fns, "", fast))
    source = module_src(fns, digest, fast)
    cache.STATS["generated"] += 1
    return Kernel(digest, info, lowered, source, text,
                  tuple(o.alias for o in info.operands), host_ws)


HostRunner = Callable[[KernelInfo, QueryData], Tensor]


def _numpy(info: KernelInfo, data: QueryData) -> Tensor:
    cache.STATS["numpy"] += 1
    return run_numpy(info, data)


def cached_kernel(info: KernelInfo, data: QueryData) -> Kernel:
    """The compiled kernel of a query, from the in-memory cache or built once."""
    key = structure_key(info, data)
    k = cache.memory_get(key)
    if k is None:
        k = build_kernel(info, data, key)
        cache.memory_put(key, k)
    return k


def choose_runner(info: KernelInfo, data: QueryData, *, allow_numpy: bool = True
                  ) -> tuple[Kernel | None, HostRunner | None]:
    """What runs a query: NumPy for small all-dense ones, the formats stage for a
    relayout, else the compiled kernel (exactly one of the two is not None)."""
    if allow_numpy and numpy_eligible(info, data):
        return None, _numpy
    if is_relayout(info):
        return None, run_relayout
    return cached_kernel(info, data), None


def compile_query(query: Query, env: dict[Alias, Any]) -> Kernel:
    """The kernel of one normal-form compute query (env maps Alias -> Tensor)."""
    return cached_kernel(*analyze_query(query, env))


def run_query(query: Query, env: dict[Alias, Any], *, allow_numpy: bool = True) -> Tensor:
    """Evaluate one compute query (see :func:`choose_runner`)."""
    info, data = analyze_query(query, env)
    kernel, host = choose_runner(info, data, allow_numpy=allow_numpy)
    return kernel(data) if kernel is not None else host(info, data)  # type: ignore[misc]


def execute_plan(plan: Plan) -> tuple[Tensor, ...]:
    """Run a normal-form plan; returns the tensors its ``Produces`` names."""
    if not isinstance(plan, Plan):
        raise TypeError(f"execute_plan expects a Plan, got {type(plan).__name__}")
    env: dict[Alias, Any] = {}
    for body in plan.bodies:
        match body:
            case Query(lhs=lhs, rhs=Table(tns=Immediate(val=t))):
                if not isinstance(t, Tensor):
                    raise TypeError(f"input {lhs.name} is not a lazysparse Tensor: "
                                    f"{type(t).__name__}")
                env[lhs] = t
            case Query(lhs=lhs):
                env[lhs] = run_query(body, env)
            case Produces(args=args):
                out = []
                for a in args:
                    if a not in env:
                        raise ValueError(f"Produces names unbound alias {a!r}")
                    out.append(env[a])
                return tuple(out)
            case _:
                raise ValueError(f"not a normal-form plan statement: {body!r}")
    raise ValueError("plan has no Produces statement")


# ---------------------------------------------------------------------- arguments


def _scalar(v: Any, dtype: np.dtype) -> Any:
    """``v`` as a NumPy scalar of ``dtype`` (complex to real keeps the real part)."""
    if type(v) is dtype.type:  # already one (most fills and inits): no conversion
        return v
    with np.errstate(all="ignore"):
        arr = np.asarray(v)
        if arr.dtype.kind == "c" and dtype.kind != "c":
            arr = arr.real
        return arr.astype(dtype)[()]


def kernel_args(k: Kernel, data: QueryData) -> list[Any]:
    """Positional arguments of the kernel, in ``Lowerer.params`` order."""
    info, lw = k.info, k.lowered
    args: list[Any] = []
    for op, t in zip(info.operands, data.tensors, strict=True):
        for lvi, lv in zip(op.levels, t.levels, strict=True):
            if lvi.located:
                args.append(np.int64(lv.size))
            else:
                if not lvi.chained:
                    args.append(lv.ptr)
                args.append(lv.idx)
        args += [t.values, _scalar(t.fill_value, op.dtype)]
    args += [np.int64(data.extents[f]) for f in info.loop_order]
    args += [_scalar(v, d) for v, d in zip(data.consts, info.const_dtypes, strict=True)]
    ad = info.acc_dtype
    init = _scalar(data.init if info.reduce_op is not None else data.out_fill, ad)
    ident = info.reduce_op.identity_for(ad) if info.reduce_op is not None else None
    args += [init, _scalar(data.out_fill, info.out_dtype),
             _scalar(ident if ident is not None else init, ad)]
    spec = info.out_spec
    sizes = [data.out_shape[m] for m in spec.mode_order]
    nst = len(sizes) if lw.output.mode is OutputMode.DENSE else lw.output.dense_prefix
    for m in range(nst):
        args.append(np.int64(math.prod(sizes[m + 1:nst])))
    if lw.output.mode is OutputMode.SHARED:
        osize = data.tensors[lw.output.shared_slot].values.shape[0]  # type: ignore[index]
    else:
        osize = math.prod(sizes)
    args += [np.int64(osize), np.int64(math.prod(sizes[:lw.output.dense_prefix]))]
    return args


def assemble(k: Kernel, data: QueryData, res: tuple[Any, ...]) -> Tensor:
    """Wrap the kernel's returned arrays as the result Tensor."""
    info, out = k.info, k.lowered.output
    spec = info.out_spec
    shape = data.out_shape
    sizes = [shape[m] for m in spec.mode_order]
    fillv = _scalar(data.out_fill, info.out_dtype)
    if out.mode is OutputMode.DENSE:
        levels = [Dense(n) for n in sizes]
        return Tensor(shape, levels, spec.mode_order, res[0], fillv, format=spec,
                      check=False)
    if out.mode is OutputMode.SHARED:
        src = data.tensors[out.shared_slot]  # type: ignore[index]
        return Tensor(shape, list(src.levels), spec.mode_order, res[0], fillv,
                      format=spec, check=False)
    vals = res[-1]
    levels: list[Any] = [Dense(n) for n in sizes[:out.dense_prefix]]
    it = iter(res[:-1])
    for grp in out.groups:
        ptr = next(it)
        if ptr.size and int(ptr[-1]) < 2**31 - 1 and max(shape) < 2**31 - 1:
            ptr = ptr.astype(np.int32)  # small: ptr has one entry per parent position
        for j, m in enumerate(grp):
            idx = next(it)
            kind = spec.level_kinds[m]
            if j == 0:
                levels.append(Compressed(sizes[m], ptr, idx, unique=kind == "compressed"))
            else:
                levels.append(Singleton(sizes[m], idx))
    return Tensor(shape, levels, spec.mode_order, vals, fillv, format=spec, check=False)
