"""``explain``: the plan before and after optimization, and each kernel it runs.

Nothing is computed: intermediate results are stood in for by empty tensors of their
chosen format, which is all code generation looks at.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lazysparse.formats import Compressed, Dense, FormatSpec, Singleton, Tensor
from lazysparse.logic.nodes import Alias, Field, MapJoin, Plan, Query, Reformat, Table
from lazysparse.optimizer.analysis import plan_infos, query_parts
from lazysparse.optimizer.formats import normal_form
from lazysparse.optimizer.loop_order import (
    ScheduleReport,
    choose_loop_orders,
    loop_order_reports,
)
from lazysparse.optimizer.pipeline import PASSES, optimize, run_passes
from lazysparse.optimizer.rewrite import accesses, produced


@dataclass(frozen=True)
class KernelExplanation:
    """One kernel of an optimized plan."""

    alias: str
    query: Query
    loop_order: tuple[str, ...]
    output_format: FormatSpec
    inputs: tuple[str, ...]
    source: str
    # how choose_loop_orders picked the loop order (None: a copy concordize inserted)
    schedule: str | None = None

    def __str__(self) -> str:
        fmt = self.output_format
        sched = f"  {self.schedule}\n" if self.schedule else ""
        return (f"kernel {self.alias} = f({', '.join(self.inputs)})\n"
                f"  loop order (outermost first): {', '.join(self.loop_order) or '()'}\n"
                f"{sched}"
                f"  output format: {fmt.name} levels={fmt.level_kinds} "
                f"mode_order={fmt.mode_order}\n"
                f"  source:\n" + _indent(self.source, 4))


@dataclass(frozen=True)
class Explanation:
    """What running a plan would do: ``before``/``after`` plans and the ``kernels``."""

    before: Plan
    after: Plan
    kernels: tuple[KernelExplanation, ...]

    def __str__(self) -> str:
        parts = ["== plan ==", _show(self.before), "== optimized plan ==", _show(self.after),
                 f"== {len(self.kernels)} kernel(s) =="]
        parts += [str(k) for k in self.kernels]
        return "\n".join(parts)

    def __repr__(self) -> str:
        return (f"Explanation({len(self.kernels)} kernel(s): "
                + "; ".join(f"{k.alias} loops {','.join(k.loop_order)} -> "
                            f"{k.output_format.name}" for k in self.kernels) + ")")


def _indent(text: str, n: int) -> str:
    pad = " " * n
    return "\n".join(pad + line for line in text.splitlines())


def _show(plan: Plan) -> str:
    try:
        return str(plan)
    except ImportError:  # the logic printer is not installed yet
        return repr(plan)


def placeholder(shape: tuple[int, ...], spec: FormatSpec, dtype: Any, fill: Any) -> Tensor:
    """An empty tensor with ``spec``'s levels (no entries), standing in for a result."""
    levels = []
    parents = 1
    for kind, m in zip(spec.level_kinds, spec.mode_order, strict=True):
        n = shape[m]
        if kind == "dense":
            levels.append(Dense(n))
            parents *= n
        elif kind == "singleton":
            levels.append(Singleton(n, np.zeros(0, np.int64)))
        else:
            levels.append(Compressed(n, np.zeros(parents + 1, np.int64), np.zeros(0, np.int64),
                                     unique=kind == "compressed"))
            parents = 0
    nvals = parents if levels else 1
    values = np.zeros(nvals if nvals < 2**20 else 0, dtype=dtype)
    return Tensor(shape, levels, spec.mode_order, values, fill, check=False)


def explain_plan(plan: Plan) -> Explanation:
    """Optimize ``plan`` and describe every kernel of the result."""
    from lazysparse.kernels import compile_query

    after = optimize(plan)
    schedules = schedule_reports(plan)
    infos = plan_infos(after)
    env: dict[Alias, Any] = {}
    kernels = []
    for body in after.bodies:
        if not isinstance(body, Query):
            continue
        if isinstance(body.rhs, Table):
            env[body.lhs] = body.rhs.tns.val
            continue
        assert isinstance(body.rhs, Reformat)
        spec: FormatSpec = body.rhs.tns.val
        k = compile_query(body, env)
        line = None
        if body.lhs in schedules:
            report, names = schedules[body.lhs]
            line = report.describe(names)
            if tuple(names.get(f, f.name) for f in report.chosen) != tuple(k.loop_order):
                line += "; a later pass reordered the loops (absorb_transposes)"
        kernels.append(KernelExplanation(body.lhs.name, body, tuple(k.loop_order),
                                         k.output_format, tuple(k.inputs), k.source, line))
        info = infos[body.lhs]
        env[body.lhs] = placeholder(info.shape, spec, k.info.out_dtype, info.fill
                                    if info.fill is not None else 0)
    return Explanation(plan, after, tuple(kernels))


def schedule_reports(plan: Plan) -> dict[Alias, tuple[ScheduleReport, dict[Field, str]]]:
    """For each kernel of ``optimize(plan)`` (by its final alias), how its loop order was
    chosen, and the names the kernel gives the report's fields.

    Recomputed: the passes run up to ``choose_loop_orders``, whose reports
    (``loop_order_reports``) are followed through the later passes to the final names. A
    kernel with a fused epilogue shows the report of the aggregate it absorbed; a copy that
    ``concordize`` inserted has none."""
    at, nf = PASSES.index(choose_loop_orders), PASSES.index(normal_form)
    pre = run_passes(plan, PASSES[:at])
    reports = loop_order_reports(pre)
    mid = run_passes(pre, PASSES[at:nf])
    queries = {q.lhs: q for q in pre.bodies if isinstance(q, Query)}
    kept = {q.lhs for q in mid.bodies if isinstance(q, Query)}
    out: dict[Alias, tuple[ScheduleReport, dict[Field, str]]] = {}
    for lhs, final in _final_names(mid).items():
        q = next(b for b in mid.bodies if isinstance(b, Query) and b.lhs == lhs)
        if isinstance(q.rhs, Table):
            continue
        report = _report_of(q, queries, reports, kept)
        if report is not None:
            _, _, loop = query_parts(q.rhs)
            out[final] = (report, {f: f"i{k}" for k, f in enumerate(loop.idxs)})
    return out


def _report_of(q: Query, queries: dict[Alias, Query], reports: dict[Alias, ScheduleReport],
               kept: set[Alias]) -> ScheduleReport | None:
    """``q``'s own report, or for a fused epilogue the report of the aggregate it read."""
    rhs = q.rhs.arg if isinstance(q.rhs, Reformat) else q.rhs
    if isinstance(rhs, MapJoin) and q.lhs in queries:
        fused = [a.arg for a in accesses(queries[q.lhs].rhs)
                 if a.arg in reports and a.arg not in kept]
        if len(fused) == 1:
            return reports[fused[0]]  # type: ignore[index]
    return reports.get(q.lhs)


def _final_names(plan: Plan) -> dict[Alias, Alias]:
    """The alias ``normal_form`` gives each query of ``plan`` it keeps (inputs first, then
    the others, in order; queries nothing produced reads are dropped)."""
    needed = produced(plan)
    for body in reversed(plan.bodies):
        if isinstance(body, Query) and body.lhs in needed:
            needed.update(a.arg for a in accesses(body.rhs))  # type: ignore[misc]
    qs = [b for b in plan.bodies if isinstance(b, Query) and b.lhs in needed]
    order = ([q for q in qs if isinstance(q.rhs, Table)]
             + [q for q in qs if not isinstance(q.rhs, Table)])
    return {q.lhs: Alias(f"A{k}") for k, q in enumerate(order)}


def explain(*arrays: Any) -> Explanation:
    """``xp.explain(*arrays)``: how computing ``arrays`` together would run (a Plan works too)."""
    if len(arrays) == 1 and isinstance(arrays[0], Plan):
        return explain_plan(arrays[0])
    from lazysparse.api.execution import build_plan
    from lazysparse.api.lazy_array import LazyArray

    for a in arrays:
        if not isinstance(a, LazyArray):
            raise TypeError(f"explain takes lazysparse arrays, got {type(a).__name__}")
    if not arrays:
        raise TypeError("explain needs at least one array")
    return explain_plan(build_plan(tuple(arrays)))
