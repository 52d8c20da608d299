"""How the optimizer chose each kernel's loop order, named as in the final plan (what
``xp.explain`` prints per kernel).

Recomputed rather than recorded: the passes are pure, so running them again up to
``choose_loop_orders`` reproduces its reports, which are then followed through the later
passes to the kernels' final aliases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lazysparse.logic.nodes import Alias, Field, MapJoin, Plan, Query, Reformat, Table
from lazysparse.optimizer.analysis import (
    AliasInfo,
    field_sizes,
    nonzero_probability,
    output_estimate,
    query_parts,
)
from lazysparse.optimizer.exact_counts import ExactCount
from lazysparse.optimizer.formats import normal_form
from lazysparse.optimizer.loop_order import (
    ScheduleReport,
    choose_loop_orders,
    loop_order_reports,
)
from lazysparse.optimizer.pipeline import PASSES, run_passes
from lazysparse.optimizer.rewrite import accesses, produced


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


@dataclass(frozen=True)
class KernelEstimate:
    """The optimizer's estimate for one kernel: iterations of its innermost loop (the
    products a contraction forms; exact from degree statistics for a one-index
    contraction of stored operands, ``degrees.py``) and its result's stored entries."""

    work: float
    entries: float
    size: int
    # the stored entries of the result once the kernel ran (``xp.explain(..., run=True)``)
    actual_entries: int | None = None
    # the estimated density, and the exact count that decided the format where the
    # estimate was unsure (``exact_counts.py``; then ``entries`` is the count's)
    density: float | None = None
    exact: ExactCount | None = None

    def describe(self) -> str:
        """``estimate: work W, output E entries (density d)[; exact count ...][; actual:
        N entries]``."""
        density = self.entries / self.size if self.size else 0.0
        line = (f"estimate: work {self.work:.3g} (innermost iterations), "
                f"output {self.entries:.3g} entries (density {density:.3g})")
        if self.exact is not None:
            e = self.exact
            line = (f"estimate: work {self.work:.3g} (innermost iterations), output density "
                    f"{self.density or 0.0:.3g} (unsure); exact count: {e.entries} entries "
                    f"(density {e.density:.3g}, {e.kind.value}) decided the format: "
                    f"{'dense' if e.dense else 'sparse'}")
        if self.actual_entries is not None:
            line += f"; actual: {self.actual_entries} stored entries"
        return line


def kernel_estimate(q: Query, infos: dict[Alias, AliasInfo]) -> KernelEstimate:
    """The estimate of canonical compute query ``q`` of an optimized plan, whose operands'
    facts are in ``infos`` (``plan_infos``)."""
    _, _, loop = query_parts(q.rhs)
    sizes = field_sizes(loop.arg, infos)
    for f in loop.idxs:
        sizes.setdefault(f, 1)
    fields = set(loop.idxs)
    work = math.prod(sizes[f] for f in fields) * nonzero_probability(loop.arg, fields,
                                                                      sizes, infos)
    info = infos[q.lhs]
    density, exact = output_estimate(q.rhs, infos)
    return KernelEstimate(work, info.nnz, info.size, density=density, exact=exact)
