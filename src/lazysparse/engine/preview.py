"""``preview_plan``: what computing a plan would produce, known without running it.

The plan is optimized as a compute would optimize it (through the plan cache, so a later
compute of the same structure skips the optimizer), and the optimizer's facts of each
result are read off: its format, shape, dtype, fill value and estimated stored entries
(``optimizer.analysis``: uniform independence). No kernel is generated or run. The api's
array display (``api/array/display.py``) shows these for an uncomputed array.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lazysparse.engine.plan_cache import lookup
from lazysparse.logic.nodes import Alias, Plan, Produces, Query, Reformat, Table
from lazysparse.optimizer.analysis import plan_infos


@dataclass(frozen=True)
class ResultPreview:
    """The planned result of one produced alias: its format (name, level kinds, storage
    order), fill value and the optimizer's estimate of its stored entries."""

    format: str
    level_kinds: tuple[str, ...]
    mode_order: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: np.dtype
    fill_value: Any
    nnz: float


@dataclass(frozen=True)
class PlanPreview:
    """The planned results of a plan (in ``Produces`` order), how many kernels its
    optimized form runs, and whether a plan of this structure ran before (its program,
    kernels included, is cached)."""

    results: tuple[ResultPreview, ...]
    kernels: int
    ran_before: bool


def _format_of(body: Query) -> tuple[str, tuple[str, ...], tuple[int, ...]] | None:
    """(name, level kinds, mode order) a query stores its result in."""
    if isinstance(body.rhs, Reformat):
        spec = body.rhs.tns.val
        return spec.name, tuple(spec.level_kinds), tuple(spec.mode_order)
    if isinstance(body.rhs, Table):
        t = body.rhs.tns.val
        return t.format, tuple(t.spec.level_kinds), tuple(t.mode_order)
    return None


def preview_plan(plan: Plan, device: str = "cpu") -> PlanPreview:
    """The planned results of ``plan`` on ``device`` (``"cpu"`` or ``"cuda"``), from its
    optimized form: nothing is compiled or run."""
    entry, inputs, params = lookup(plan, device)
    opt = entry.plan(inputs, params)
    infos = plan_infos(opt)
    formats: dict[Alias, tuple[str, tuple[str, ...], tuple[int, ...]]] = {}
    kernels = 0
    produced: tuple[Any, ...] = ()
    for body in opt.bodies:
        if isinstance(body, Query):
            kernels += isinstance(body.rhs, Reformat)
            fmt = _format_of(body)
            if fmt is not None:
                formats[body.lhs] = fmt
        elif isinstance(body, Produces):
            produced = body.args
    results = []
    for out in produced:
        info = infos[out]
        name, kinds, order = formats[out]
        results.append(ResultPreview(name, kinds, order, info.shape, info.dtype, info.fill,
                                     info.nnz))
    return PlanPreview(tuple(results), kernels, entry.program is not None)
