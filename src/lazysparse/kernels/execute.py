"""Public entry points: ``compile_query(query, env) -> Kernel`` and ``execute_plan(plan)``.

A :class:`Kernel` is keyed by the query's structure (operand formats, dtypes and fill
values, operators, loop order, output format) — never by data or by the values of scalar
constants, which are passed as arguments. Small all-dense kernels run on NumPy instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np

from lazysparse.formats.levels import Compressed, Dense, Singleton
from lazysparse.formats.specs import FormatSpec
from lazysparse.formats.tensor import Tensor
from lazysparse.kernels import cache
from lazysparse.kernels.analysis import KernelInfo, QueryData, analyze_query, fill_key
from lazysparse.kernels.codegen_numba import function_src
from lazysparse.kernels.lower import Lowered, lower
from lazysparse.kernels.loop_ir import format_function
from lazysparse.kernels.numpy_executor import numpy_eligible, run_numpy
from lazysparse.logic.nodes import Alias, Immediate, Plan, Produces, Query, Table


@dataclass
class Kernel:
    """A compiled normal-form query: its loop order, output format, inputs and source."""

    key: str
    info: KernelInfo
    lowered: Lowered
    source: str
    loop_ir: str
    inputs: tuple[str, ...]
    _fn: Any = field(default=None, repr=False)

    @property
    def loop_order(self) -> tuple[str, ...]:
        """Loop fields, outermost first."""
        return self.info.loop_order

    @property
    def output_format(self) -> FormatSpec:
        """The result's storage format."""
        return self.info.out_spec

    @property
    def dispatcher(self) -> Any:
        """The Numba dispatcher (imports the cached module on first use)."""
        if self._fn is None:
            self._fn = cache.load_module(self.key, self.source).kernel
        return self._fn

    def __call__(self, data: QueryData) -> Tensor:
        """Run on the query's data and assemble the result tensor."""
        args = kernel_args(self, data)
        disp = self.dispatcher
        before = _stat_sums(disp)
        res = disp(*args)
        after = _stat_sums(disp)
        cache.STATS["disk_loaded"] += after[0] - before[0]
        cache.STATS["compiled"] += after[1] - before[1]
        return assemble(self, data, res)


def _stat_sums(disp: Any) -> tuple[int, int]:
    st = disp.stats
    return sum(st.cache_hits.values()), sum(st.cache_misses.values())


def structure_key(info: KernelInfo, data: QueryData) -> tuple[Any, ...]:
    """In-memory cache key: the kernel structure plus the result fill value's identity."""
    return (info, fill_key(data.out_fill))


def _build(info: KernelInfo, data: QueryData) -> Kernel:
    fills = tuple(t.fill_value for t in data.tensors)
    lowered = lower(info, fills, data.out_fill)
    text = format_function(lowered.function)
    probe = function_src(lowered.function, "")
    digest = cache.source_hash(probe)
    source = function_src(lowered.function, digest)
    cache.STATS["generated"] += 1
    return Kernel(digest, info, lowered, source, text,
                  tuple(o.alias for o in info.operands))


def compile_query(query: Query, env: dict[Alias, Any]) -> Kernel:
    """The kernel of one normal-form compute query (env maps Alias -> Tensor)."""
    info, data = analyze_query(query, env)
    key = structure_key(info, data)
    k = cache.memory_get(key)
    if k is None:
        k = _build(info, data)
        cache.memory_put(key, k)
    return k


def run_query(query: Query, env: dict[Alias, Any], *, allow_numpy: bool = True) -> Tensor:
    """Evaluate one compute query: NumPy for small all-dense ones, else the compiled kernel."""
    info, data = analyze_query(query, env)
    if allow_numpy and numpy_eligible(info, data):
        cache.STATS["numpy"] += 1
        return run_numpy(info, data)
    key = structure_key(info, data)
    k = cache.memory_get(key)
    if k is None:
        k = _build(info, data)
        cache.memory_put(key, k)
    return k(data)


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
    nst = len(sizes) if lw.output.mode == "dense" else lw.output.dense_prefix
    for m in range(nst):
        args.append(np.int64(math.prod(sizes[m + 1:nst])))
    if lw.output.mode == "shared":
        osize = data.tensors[lw.output.shared_slot].values.shape[0]  # type: ignore[index]
    else:
        osize = math.prod(sizes)
    args += [np.int64(osize), np.int64(math.prod(sizes[:lw.output.dense_prefix])),
             np.int64(numba.get_num_threads()),
             np.empty(0, np.int32 if max(data.out_shape, default=0) < 2**31 - 1 else np.int64)]
    return args


def assemble(k: Kernel, data: QueryData, res: tuple[Any, ...]) -> Tensor:
    """Wrap the kernel's returned arrays as the result Tensor."""
    info, out = k.info, k.lowered.output
    spec = info.out_spec
    shape = data.out_shape
    sizes = [shape[m] for m in spec.mode_order]
    fillv = _scalar(data.out_fill, info.out_dtype)
    if out.mode == "dense":
        levels = [Dense(n) for n in sizes]
        return Tensor(shape, levels, spec.mode_order, res[0], fillv, format=spec,
                      check=False)
    if out.mode == "shared":
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
