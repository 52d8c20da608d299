"""The optimizer: an ordered list of pure passes from an api plan to a normal-form plan."""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce

from lazysparse.logic.nodes import Plan
from lazysparse.logic.normal_form import check_normal_form
from lazysparse.optimizer.epilogue import fuse_epilogues
from lazysparse.optimizer.formats import choose_formats, choose_ordered_formats, normal_form
from lazysparse.optimizer.fuse import fuse_aggregates
from lazysparse.optimizer.inline import drop_format_copies, inline_copies, inline_pointwise
from lazysparse.optimizer.lift import (
    isolate_aggregates,
    isolate_reformats,
    isolate_tables,
    lift_subqueries,
)
from lazysparse.optimizer.loop_order import (
    choose_axis_ordered_loops,
    choose_loop_orders,
    concordize,
)
from lazysparse.optimizer.push_fields import push_fields
from lazysparse.optimizer.transpose import absorb_transposes

Pass = Callable[[Plan], Plan]

PASSES: list[Pass] = [
    lift_subqueries,
    isolate_reformats,
    isolate_aggregates,
    isolate_tables,
    inline_copies,
    inline_pointwise,
    push_fields,
    fuse_aggregates,
    choose_loop_orders,
    concordize,
    absorb_transposes,
    choose_formats,
    fuse_epilogues,
    drop_format_copies,
    normal_form,
]

# passes whose output only the CPU kernels run: the CUDA backend keeps a transposed copy
# and a map after a reduction as kernels of their own (docs/optimizer.md)
CPU_ONLY: frozenset[Pass] = frozenset({absorb_transposes, fuse_epilogues})


def run_passes(plan: Plan, passes: list[Pass] | None = None) -> Plan:
    """Apply ``passes`` (default: all of :data:`PASSES`) in order."""
    return reduce(lambda p, f: f(p), PASSES if passes is None else passes, plan)


# passes the CUDA backend runs in another form: its results keep every level ordered, and
# its reductions write in loop order (no RESULT reorder)
CUDA_FORMS: dict[Pass, Pass] = {choose_formats: choose_ordered_formats,
                                choose_loop_orders: choose_axis_ordered_loops}


def passes_for(device: str) -> list[Pass]:
    """The passes whose result ``device``'s kernels run (``"cpu"``: all of them)."""
    if device == "cpu":
        return PASSES
    return [CUDA_FORMS.get(p, p) for p in PASSES if p not in CPU_ONLY]


def optimize(plan: Plan, device: str = "cpu") -> Plan:
    """The normal-form plan computing the same results as ``plan`` (checked), for the
    kernels of ``device`` (``"cpu"`` or ``"cuda"``)."""
    if not isinstance(plan, Plan):
        raise TypeError(f"optimize takes a logic Plan, got {type(plan).__name__}")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"optimize: unknown device {device!r} (expected 'cpu' or 'cuda')")
    out = run_passes(plan, passes_for(device))
    check_normal_form(out)
    return out
