"""``explain``: the plan before and after optimization, and each kernel it runs (the
optimizer's plan and loop-order reports, the kernels' generated source).

Nothing is computed: intermediate results are stood in for by empty tensors of their
chosen format, which is all code generation looks at.
"""

from __future__ import annotations

import dataclasses
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from lazysparse.engine.plan_cache import CachedPlan, lookup
from lazysparse.engine.tiers import tier_line
from lazysparse.formats import FormatSpec, Tensor
from lazysparse.formats.levels.registry import level_class
from lazysparse.formats.specs import is_structured
from lazysparse.logic.nodes import Alias, Plan, Query, Reformat, Table
from lazysparse.optimizer.analysis import plan_infos
from lazysparse.optimizer.reports import KernelEstimate, kernel_estimate, schedule_reports

if TYPE_CHECKING:
    from lazysparse.kernels.backends.numba.kernel import Kernel
    from lazysparse.kernels.compile.planning.decisions import QueryDecisions


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
    # the query's decisions (operands sorted or read csr-like, its runner), as recorded
    decisions: QueryDecisions | None = field(default=None, compare=False, repr=False)
    # the optimizer's work and output-size estimate (optimizer.reports.kernel_estimate)
    estimate: KernelEstimate | None = None

    def __str__(self) -> str:
        fmt = self.output_format
        sched = f"  {self.schedule}\n" if self.schedule else ""
        if self.estimate is not None:
            sched += f"  {self.estimate.describe()}\n"
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
    # held arrays a compute of the explained arrays computes and keeps too, with the reason
    # (``api.held_values``); their queries are part of ``before``
    kept: tuple[str, ...] = ()
    # the execution tier of the plan's shape (``engine.tiers.tier_line``)
    tier: str = ""

    def __str__(self) -> str:
        parts = ["== plan ==", str(self.before)]
        if self.kept:
            parts += ["== values kept (held by the user, computed once) =="]
            parts += [f"  {line}" for line in self.kept]
        parts += ["== optimized plan ==", str(self.after)]
        if self.tier:
            parts.append(self.tier)
        parts.append(f"== {len(self.kernels)} kernel(s) ==")
        parts += [str(k) for k in self.kernels]
        return "\n".join(parts)

    def __repr__(self) -> str:
        return (f"Explanation({len(self.kernels)} kernel(s): "
                + "; ".join(f"{k.alias} loops {','.join(k.loop_order)} -> "
                            f"{k.output_format.name}" for k in self.kernels) + ")")


def _indent(text: str, n: int) -> str:
    pad = " " * n
    return "\n".join(pad + line for line in text.splitlines())


def placeholder(shape: tuple[int, ...], spec: FormatSpec, dtype: Any, fill: Any) -> Tensor:
    """An empty tensor with ``spec``'s levels (no entries), standing in for a result."""
    if is_structured(spec):
        from lazysparse.formats.structured import build_structured

        empty = np.zeros(0, np.int64)
        return build_structured(shape, spec, empty, empty, np.zeros(0, dtype), fill,
                                blocksize=(1, 1))
    levels = []
    parents = 1
    for kind, m in zip(spec.level_kinds, spec.mode_order, strict=True):
        level = level_class(kind).empty(kind, shape[m], parents)
        levels.append(level)
        parents = level.npositions(parents)
    nvals = parents if levels else 1
    values = np.zeros(nvals if nvals < 2**20 else 0, dtype=dtype)
    return Tensor(shape, levels, spec.mode_order, values, fill, check=False)


def _decision_notes(d: QueryDecisions) -> list[str]:
    """What the query's recorded decisions add to its schedule line."""
    from lazysparse.kernels.compile.planning.runners import (
        Runner,  # loaded with the backend, on first use
    )

    notes = []
    if d.sorted:  # unordered levels this kernel merges
        notes.append(f"sorts {', '.join(d.sorted)} first (an unordered level it merges, "
                     "follows or appends in order)")
    if d.converted:  # structured levels it cannot walk
        notes.append(f"reads {', '.join(d.converted)} as csr-like (a structured level it "
                     "cannot walk here: compile.planning.structured_inputs)")
    if d.runner is Runner.RELAYOUT:  # backends.execute.choose_runner picks formats.convert
        notes.append("runs as a relayout (one counting-sort pass, formats.convert); the "
                     "kernel below is not used")
    return notes


def _schedule_line(body: Query, schedules: dict[Any, Any], d: QueryDecisions) -> str | None:
    """How the loop order was picked, and the query's recorded decisions."""
    parts = []
    if body.lhs in schedules:
        report, names = schedules[body.lhs]
        line = report.describe(names)
        if tuple(names.get(f, f.name) for f in report.chosen) != d.info.loop_order:
            line += "; a later pass reordered the loops (absorb_transposes)"
        parts.append(line)
    parts += _decision_notes(d)
    return "; ".join(parts) if parts else None


@dataclass(frozen=True)
class _Reports:
    """The loop-order reports of one plan-cache entry on the inputs (held weakly: a cache
    keeps no user data alive) and parameters they were made for."""

    inputs: tuple[weakref.ref[Any], ...]
    params: tuple[Any, ...]
    reports: dict[Any, Any]

    def hold(self, inputs: list[Any], params: tuple[Any, ...]) -> bool:
        """Whether these are the reports of ``inputs`` and ``params`` (the same objects)."""
        return (len(inputs) == len(self.inputs) and len(params) == len(self.params)
                and all(r() is t for r, t in zip(self.inputs, inputs, strict=True))
                and all(a is b for a, b in zip(self.params, params, strict=True)))


# per plan-cache entry, how the optimizer chose its kernels' loop orders for the inputs
# last explained (``optimizer.reports.schedule_reports`` runs the passes again: an
# expression explained again over the same arrays runs none)
_SCHEDULES: weakref.WeakKeyDictionary[CachedPlan, _Reports] = weakref.WeakKeyDictionary()


def _schedules(entry: CachedPlan, plan: Plan, inputs: list[Any], params: tuple[Any, ...]
               ) -> dict[Any, Any]:
    """The loop-order reports of ``plan`` (``entry``'s, filled with ``inputs`` and
    ``params``), made once for those inputs."""
    kept = _SCHEDULES.get(entry)
    if kept is not None and kept.hold(inputs, params):
        return kept.reports
    reports = schedule_reports(plan)
    try:
        refs = tuple(weakref.ref(t) for t in inputs)
    except TypeError:  # an input no weak reference can follow: not kept
        return reports
    _SCHEDULES[entry] = _Reports(refs, params, reports)
    return reports


def _decided(entry: CachedPlan, j: int, body: Query, env: dict[Alias, Any],
             params: tuple[Any, ...]) -> tuple[QueryDecisions, Kernel, Kernel | None]:
    """Query ``j``'s decisions, the kernel whose source explain shows and the one that runs
    it (None: a host runner): as a compute of the entry recorded them where a run on this
    data would use that record (``program.recorded``), else decided once now."""
    from lazysparse.kernels.backends import execute, program  # loaded on first use
    from lazysparse.kernels.backends.numba.kernel import cached_kernel
    from lazysparse.kernels.compile.planning.runners import Runner

    rec = program.recorded(entry, j, env, params)
    if rec is not None:
        d, run = rec
        return d, run if run is not None else cached_kernel(d), run
    d, shown = execute.explain_query(body, env)
    return d, shown, shown if d.runner is Runner.COMPILED else None


def explain_plan(plan: Plan, run: bool = False) -> Explanation:
    """Optimize ``plan`` (from the plan cache: optimized once) and describe every kernel of
    the result, printing each query's decisions record: a compute's where one ran it
    (``kernels.backends.program.recorded``), else decided once here
    (``kernels.backends.execute.explain_query``). ``run``: run each query too, on its
    decided runner, so that later kernels read real results and each estimate shows its
    actual stored entries."""
    from lazysparse.kernels.backends.execute import run_decided  # loads on first use

    entry, inputs, params = lookup(plan)  # what a compute of the plan runs, optimized once
    after = entry.plan(inputs, params)
    schedules = _schedules(entry, plan, inputs, params)
    infos = plan_infos(after)
    env: dict[Alias, Any] = {}
    kernels = []
    for j, body in enumerate(after.bodies):
        if not isinstance(body, Query):
            continue
        if isinstance(body.rhs, Table):
            env[body.lhs] = body.rhs.tns.val
            continue
        assert isinstance(body.rhs, Reformat)
        spec: FormatSpec = body.rhs.tns.val
        d, k, runs = _decided(entry, j, body, env, params)
        estimate = kernel_estimate(body, infos)
        info = infos[body.lhs]
        if run:
            env[body.lhs] = run_decided(d, runs)
            estimate = dataclasses.replace(estimate, actual_entries=int(env[body.lhs].nnz))
        else:
            env[body.lhs] = placeholder(info.shape, spec, d.info.out_dtype, info.fill
                                        if info.fill is not None else 0)
        kernels.append(KernelExplanation(body.lhs.name, body, d.info.loop_order,
                                         d.info.out_spec, tuple(k.inputs), k.source,
                                         _schedule_line(body, schedules, d), d, estimate))
    return Explanation(plan, after, tuple(kernels), tier=tier_line(entry, inputs))
