"""What every backend's host does the same way: run a normal-form plan query by query, and
wrap a kernel's result arrays as a tensor.

The CPU host (:mod:`backends.execute`) and the GPU host (:mod:`backends.cuda.runtime`) differ
in how a query runs and in their tensor class (``formats.Tensor`` over NumPy arrays,
``DeviceTensor`` over CuPy arrays); both pass those in here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lazysparse.formats.layouts import relabel_layout
from lazysparse.formats.levels import Compressed, Dense, Singleton
from lazysparse.formats.specs import FormatSpec
from lazysparse.kernels.compile.planning.analysis import KernelInfo, QueryData
from lazysparse.kernels.compile.planning.output_plan import OutputMode, OutputPlan
from lazysparse.kernels.compile.planning.params import scalar
from lazysparse.logic.nodes import Plan
from lazysparse.logic.plan_loop import CheckInput, RunQuery, run_statements

INT32_MAX = 2**31 - 1

# (shape, levels, mode order, values, fill value, format) -> a tensor of the backend
MakeTensor = Callable[[tuple[int, ...], list[Any], Sequence[int], Any, Any, FormatSpec], Any]


def assemble(info: KernelInfo, data: QueryData, out: OutputPlan, res: tuple[Any, ...],
             make: MakeTensor, written: Callable[[Any], Any] | None = None) -> Any:
    """The result tensor of a kernel's arrays, in the layout its query asked for (a
    hashed or bytemap layout is relabeled from the compressed one the kernel wrote).
    ``written`` maps the tensor as written first (the CPU host drops a shared pattern's
    entries equal to the fill: ``formats.stored_fills.drop_stored_fills``)."""
    t = _assemble_written(info, data, out, res, make)
    if written is not None:
        t = written(t)
    if info.stored_spec is not None:
        t = relabel_layout(t, info.stored_spec)
    return t


def _assemble_written(info: KernelInfo, data: QueryData, out: OutputPlan,
                      res: tuple[Any, ...], make: MakeTensor) -> Any:
    """Wrap a kernel's result arrays (``res``: the dense or shared values, or per sparse
    group its ``ptr`` and index arrays, then the values) as the result tensor. A group's
    ``ptr`` is int32 when its entries and the result's extents fit (its index arrays were
    allocated in the result's index dtype already)."""
    spec = info.out_spec
    shape = data.out_shape
    sizes = [shape[m] for m in spec.mode_order]
    fillv = scalar(data.out_fill, info.out_dtype)
    if out.mode is OutputMode.DENSE:
        return make(shape, [Dense(n) for n in sizes], spec.mode_order, res[0], fillv, spec)
    if out.mode is OutputMode.SHARED:
        src = data.tensors[out.shared_slot]  # type: ignore[index]
        return make(shape, list(src.levels), spec.mode_order, res[0], fillv, spec)
    levels: list[Any] = [Dense(n) for n in sizes[:out.dense_prefix]]
    small = max(shape, default=0) < INT32_MAX
    it = iter(res[:-1])
    for grp in out.groups:
        ptr = next(it)
        idxs = [next(it) for _ in grp]
        if small and int(idxs[0].shape[0]) < INT32_MAX:
            ptr = ptr.astype(np.int32)  # one entry per parent position: worth halving
        for j, (m, idx) in enumerate(zip(grp, idxs, strict=True)):
            if j == 0:
                levels.append(Compressed.of_kind(spec.level_kinds[m], sizes[m], ptr, idx))
            else:
                levels.append(Singleton(sizes[m], idx))
    return make(shape, levels, spec.mode_order, res[-1], fillv, spec)


def run_plan(plan: Plan, run_query: RunQuery, check_input: CheckInput,
             caller: str = "execute_plan") -> tuple[Any, ...]:
    """Run a normal-form plan: bind its inputs (checked by ``check_input``), evaluate each
    compute query with ``run_query`` (the one plan loop, ``logic.plan_loop``); returns the
    tensors its ``Produces`` names."""
    if not isinstance(plan, Plan):
        raise TypeError(f"{caller} expects a Plan, got {type(plan).__name__}")
    out = run_statements(plan, {}, run_query, check_input)
    if out is None:
        raise ValueError("plan has no Produces statement")
    return out


__all__ = ["CheckInput", "MakeTensor", "RunQuery", "assemble", "run_plan"]
