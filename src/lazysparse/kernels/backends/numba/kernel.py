"""The Numba kernel of a query: lowered once from its recorded plan, printed as a Python
module, compiled by Numba, cached by structure (:func:`cached_kernel`).

A :class:`Kernel` is keyed by the query's structure (operand formats, dtypes and fill
values, operators, loop order, output format) — never by data or by the values of scalar
constants, which are passed as arguments.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from lazysparse.formats.compiled.sync import KeyLocks
from lazysparse.formats.dtypes import SUPPORTED_DTYPE_SET
from lazysparse.formats.levels import Dense
from lazysparse.formats.specs import FormatSpec
from lazysparse.formats.stored_fills import drop_stored_fills
from lazysparse.formats.tensor import Tensor
from lazysparse.kernels.backends import host
from lazysparse.kernels.backends.numba import cache
from lazysparse.kernels.backends.numba.codegen import eval_size, hoist_workspaces, module_src
from lazysparse.kernels.backends.numba.cpu_host import (
    HostFacts,
    WorkspacePool,
    chunks,
    host_facts,
    no_workspaces,
    run_chunks,
)
from lazysparse.kernels.compile.ir.dead_code import drop_dead_assigns
from lazysparse.kernels.compile.ir.loop_ir import Alloc, format_function
from lazysparse.kernels.compile.lowering.kernel import Lowered, lower_plan
from lazysparse.kernels.compile.planning.analysis import (
    DENSE_FILL,
    KernelInfo,
    PAccess,
    PApply,
    PConst,
    PNode,
    QueryData,
    fill_key,
)
from lazysparse.kernels.compile.planning.coiterate import fold_levels, fold_value
from lazysparse.kernels.compile.planning.decisions import QueryDecisions
from lazysparse.kernels.compile.planning.hash_workspace import prefer_hash_workspace
from lazysparse.kernels.compile.planning.output_plan import OutputMode
from lazysparse.kernels.compile.planning.params import bind
from lazysparse.kernels.compile.planning.runners import MAX_NESTED_BLOCKS

# the dispatcher statistics already counted into cache.STATS, by dispatcher (generated
# modules live as long as the process, so their dispatchers' ids stay theirs); read and
# written under _COUNTING, so two threads never count one compile twice
_COUNTED: dict[int, tuple[int, int]] = {}
_COUNTING = threading.Lock()
_BUILDING = KeyLocks()  # kernels being generated, by structure key


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
    _ws_pool: WorkspacePool = field(default_factory=WorkspacePool, repr=False)

    def workspaces(self, fn: str, args: list[Any]) -> Callable[[], tuple[Any, ...]]:
        """A maker of one worker's workspace arrays for function ``fn`` (see
        :class:`~lazysparse.kernels.backends.numba.cpu_host.WorkspacePool`: reused across calls)."""
        allocs = self.host_ws.get(fn, ())
        if not allocs:
            return no_workspaces
        env = dict(zip(self.lowered.params, args, strict=True))
        specs = tuple((eval_size(a.size, env), np.dtype(a.dtype), a.fill) for a in allocs)
        return self._ws_pool.maker(fn, specs)

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

    @cached_property
    def facts(self) -> HostFacts:
        """What each call's host reads of the lowered kernel, derived once."""
        return host_facts(self)

    @cached_property
    def dispatchers(self) -> tuple[Any, ...]:
        """The module's Numba dispatchers, one per lowered function."""
        mod = self.module
        return tuple([getattr(mod, f.name) for f in self.lowered.functions])

    def chunks(self, data: QueryData) -> int:
        """How many chunks a call on ``data`` splits the outermost loop into at the current
        thread count (1: it runs in order; ``compile.planning.parallel.chunk_count``)."""
        return chunks(self, data, kernel_args(self, data))

    def __call__(self, data: QueryData) -> Tensor:
        """Run on the query's data and assemble the result tensor."""
        args = kernel_args(self, data)
        fns = self.dispatchers
        before = _specializations(fns)
        res = run_chunks(self, data, args)
        if _specializations(fns) != before:  # a new one: compiled or loaded from disk
            for f in fns:
                _count_specializations(f)
        return assemble(self, data, res)


def _specializations(fns: tuple[Any, ...]) -> int:
    """How many specializations the dispatchers hold together."""
    n = 0
    for f in fns:
        n += len(f.overloads)
    return n


def _count_specializations(disp: Any) -> None:
    """Add the dispatcher's compiles and disk loads since last counted to ``cache.STATS``."""
    with _COUNTING:
        h0, m0 = _COUNTED.get(id(disp), (0, 0))
        h1, m1 = _COUNTED[id(disp)] = _stat_sums(disp)
    cache.STATS.bump("disk_loaded", h1 - h0)
    cache.STATS.bump("compiled", m1 - m0)


def structure_key(info: KernelInfo, data: QueryData) -> tuple[Any, ...]:
    """In-memory cache key: the kernel structure, the result fill value's identity and
    whether skipped reduction entries may be folded in by the host (needs the runtime
    constants to agree on the skipped value; see ``coiterate.fold_value``). An epilogue's
    result fill follows its constants, which no loop compares: the reduction's is keyed.
    Last, whether a scattered row goes through a hash workspace
    (``compile.planning.hash_workspace``)."""
    return (info, out_fill_key(info, data), fold_ok(info, data),
            prefer_hash_workspace(info, data))


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


def build_kernel(d: QueryDecisions, key: tuple[Any, ...]) -> Kernel:
    """Lower, generate and wrap the kernel of ``d`` (``key``: its ``structure_key``; the
    plan is the record's where it has one; the module compiles, or loads from the disk
    cache, on its first call)."""
    info = d.info
    lowered = lower_plan(d.kernel_plan(fold=bool(key[2]), hash_ws=bool(key[3]),
                                       drop_fill=True))
    # the lowering's unread bookkeeping goes before printing: Numba would type and lower it
    pruned = tuple(drop_dead_assigns(f) for f in lowered.functions)
    text = "\n\n".join(format_function(f) for f in pruned)
    # only a scalar accumulator's loop can become a vector reduction; in-place scatters
    # (A^T x) measured no faster, so they keep strict order
    fast = reassoc_ok(info) and lowered.output.acc_depth is not None
    fns, host_ws = hoist_workspaces(pruned, lowered.signature.extent_names())
    digest = cache.source_hash(module_src(fns, "", fast))
    source = module_src(fns, digest, fast)
    cache.STATS.bump("generated")
    return Kernel(digest, info, lowered, source, text,
                  tuple(o.alias for o in info.operands), host_ws)


def cached_kernel(d: QueryDecisions) -> Kernel:
    """The compiled kernel of a query, from the in-memory cache or built once (threads
    wanting the same new kernel wait for the one building it)."""
    key = structure_key(d.info, d.data)
    k = cache.memory_get(key)
    if k is None:
        with _BUILDING.holding(key):
            k = cache.memory_get(key)
            if k is None:
                k = build_kernel(d, key)
                cache.memory_put(key, k)
    return k


@functools.lru_cache(maxsize=1024)
def compiles(source: str) -> bool:
    """Whether Python compiles a generated module: False only for ``too many statically
    nested blocks`` (an indentation deeper than the limit is compiled to find out; asked
    only where ``runners.nesting`` cannot tell from the analysis)."""
    depth = max(((len(ln) - len(ln.lstrip(" "))) // 4 for ln in source.splitlines()
                 if ln.strip()), default=0)
    if depth - 1 <= MAX_NESTED_BLOCKS:  # the ``def`` body's level is not a block
        return True
    try:
        compile(source, "<lazysparse kernel>", "exec")
    except SyntaxError as exc:
        if "too many statically nested blocks" in str(exc):
            return False
        raise
    return True


def kernel_args(k: Kernel, data: QueryData) -> list[Any]:
    """Positional arguments of the kernel, in ``Lowered.signature`` order."""
    return bind(k.lowered.signature, k.info, data, k.lowered.output)


def _make_tensor(shape: tuple[int, ...], levels: list[Any], mode_order: Any, values: Any,
                 fill: Any, spec: FormatSpec) -> Tensor:
    """The result tensor of a kernel's arrays: a dense result of a supported dtype built
    directly (what the constructor's checks would make of it), any other through them."""
    if type(values) is np.ndarray and values.ndim == 1 and type(shape) is tuple and \
            values.dtype in SUPPORTED_DTYPE_SET and type(fill) is values.dtype.type and \
            _all_dense(levels):
        return Tensor.dense_result(shape, spec, values, fill)
    return Tensor(shape, levels, mode_order, values, fill, format=spec, check=False)


def _all_dense(levels: list[Any]) -> bool:
    for lv in levels:
        if type(lv) is not Dense:
            return False
    return True


def assemble(k: Kernel, data: QueryData, res: tuple[Any, ...]) -> Tensor:
    """Wrap the kernel's returned arrays as the result Tensor (a shared pattern's entries
    that computed the fill are dropped: ``formats.stored_fills.drop_stored_fills``)."""
    lw = k.lowered
    # a shared output also returns how many values each chunk found equal to the fill
    some = (lw.output.mode is OutputMode.SHARED and lw.drop_fill is not None
            and bool(res[1].any()))
    return host.assemble(k.info, data, lw.output, res, _make_tensor,
                         drop_stored_fills if some else None)

__all__ = ["MAX_NESTED_BLOCKS", "Kernel", "assemble", "build_kernel", "cached_kernel", "compiles",
           "fold_ok", "kernel_args", "out_fill_key", "reassoc_ok", "structure_key"]
