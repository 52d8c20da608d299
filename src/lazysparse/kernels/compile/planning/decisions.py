"""One record of the decisions taken about one compute query (issue 26).

Following a query used to re-derive its decisions where each was needed: the analysis ran
again for ``xp.explain``'s notes, the kernel plan again for lowering, the runner was
re-checked by the explainer. A :class:`QueryDecisions` is built once per query and passed
down instead:

- the analysis (``KernelInfo`` and ``QueryData``) of the operands as the kernel reads them;
- the operands sorted first (``compile.planning.ordering``) and those read as their canonical
  csr-like layout (``compile.planning.structured_inputs``);
- the kernel plan, where a layout decision already made it (lowering reuses it);
- the runner ``backends.execute.choose_runner`` chose (``compile.planning.runners.Runner``).

``xp.explain`` prints the record (``engine.explain``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from lazysparse.kernels.compile.planning.analysis import KernelInfo, QueryData
from lazysparse.kernels.compile.planning.kernel_plan import KernelPlan, dropping_fill, plan_kernel
from lazysparse.kernels.compile.planning.runners import Runner


@dataclass(frozen=True, eq=False)
class QueryDecisions:
    """Every decision about one compute query, each taken once (see the module doc)."""

    info: KernelInfo
    data: QueryData
    # the plan of ``info`` with no folding, no hash workspace and every entry stored (the
    # one layout decisions read); None: no decision needed it yet
    plan: KernelPlan | None = None
    sorted: tuple[str, ...] = ()  # aliases sorted before the kernel reads them
    converted: tuple[str, ...] = ()  # aliases read as their canonical csr-like layout
    runner: Runner | None = None  # None: not chosen yet, or nothing can run the query

    @property
    def fills(self) -> tuple[Any, ...]:
        """The operands' fill values, in slot order."""
        return tuple(t.fill_value for t in self.data.tensors)

    def layout_plan(self) -> KernelPlan:
        """The recorded plan, or the plan of ``info`` made now (see :attr:`plan`)."""
        if self.plan is not None:
            return self.plan
        return plan_kernel(self.info, self.fills, self.data.out_fill)

    def planned(self) -> QueryDecisions:
        """This record with its plan made (a layout decision is about to read it)."""
        return self if self.plan is not None else replace(self, plan=self.layout_plan())

    def kernel_plan(self, fold: bool = False, hash_ws: bool = False,
                    drop_fill: bool = False) -> KernelPlan:
        """The plan of the kernel to build (``kernel_plan.plan_kernel``'s flags): the
        recorded plan where folding and the hash workspace are off (they change the
        loops), else one made now."""
        if self.plan is None or fold or hash_ws:
            return plan_kernel(self.info, self.fills, self.data.out_fill, fold, hash_ws,
                               drop_fill)
        return dropping_fill(self.plan, self.data.out_fill) if drop_fill else self.plan

    def with_runner(self, runner: Runner | None) -> QueryDecisions:
        """This record with the chosen runner."""
        return replace(self, runner=runner)

    def record(self) -> DecisionsRecord:
        """The decisions without the data they were taken on (what a cache keeps)."""
        return DecisionsRecord(self.info, self.plan, self.sorted, self.converted, self.runner)


@dataclass(frozen=True, eq=False)
class DecisionsRecord:
    """A query's decisions kept past its call (``backends.program.Program``): no tensor of
    that call, so a cached plan holds no user data alive."""

    info: KernelInfo
    plan: KernelPlan | None
    sorted: tuple[str, ...]
    converted: tuple[str, ...]
    runner: Runner | None

    def bound(self, data: QueryData) -> QueryDecisions:
        """These decisions over another call's ``data`` (one they hold for)."""
        return QueryDecisions(self.info, data, self.plan, self.sorted, self.converted,
                              self.runner)


__all__ = ["DecisionsRecord", "QueryDecisions"]
