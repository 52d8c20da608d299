"""Which level a scattered write's result gets (issue 14; Zhang et al., "Compilation of
Modular and General Sparse Workspaces", §6: the workspace follows the loop order).

A result's fields are stored in loop order, so its writes scatter only below a reduced loop
that encloses an output loop (a Gustavson SpGEMM: ``for i, for k (reduced), for j``). When
exactly the last output field scatters, the kernel accumulates a row in a dense workspace
with a touched list and drains the list into the result. Sorting that list is what the
ordered compressed level would demand (about half of a SpGEMM's time on the bench_kernels
data), and no consumer may need it: the level becomes *unordered* compressed, and the
consumers that do need order (a merge, a canonical format, a binary search) sort it then
(``compile.planning.ordering``, ``formats.ordering``). Likewise a result whose last field is
stored by exactly one sparse operand, in an unordered level (``(A @ B) * 2``, ``A * dense``), takes
its entries in that operand's order and stays unordered instead of sorting the operand.
Explicit formats (``asformat``) are kept.
"""

from __future__ import annotations

from lazysparse.formats.levels.registry import PLAIN_KIND, UNORDERED_KIND
from lazysparse.formats.specs import UNORDERED_KINDS
from lazysparse.logic.nodes import Alias, LogicNode
from lazysparse.optimizer.analysis import AliasInfo, query_parts, result_axes
from lazysparse.optimizer.rewrite import accesses


def scattered_fields(rhs: LogicNode) -> tuple[str, ...]:
    """The output fields written below the first reduced loop that encloses an output loop
    (empty when every write arrives in storage order)."""
    _, agg, loop = query_parts(rhs)
    if agg is None:
        return ()
    reduced = {f.name for f in agg.idxs}
    out = [f.name for f in result_axes(rhs)]
    order = [f.name for f in loop.idxs]
    for d, f in enumerate(order):
        if f in reduced:
            after = tuple(g for g in order[d + 1:] if g in out)
            if after:
                return after
    return ()


def follows_unordered(rhs: LogicNode, infos: dict[Alias, AliasInfo]) -> bool:
    """Whether the result's last field is stored by exactly one sparse operand, in an
    unordered last level, with no reduced loop inside that field's loop."""
    _, agg, loop = query_parts(rhs)
    out = result_axes(rhs)
    if not out:
        return False
    last = out[-1]
    order = list(loop.idxs)
    if agg is not None and any(order.index(f) > order.index(last) for f in agg.idxs):
        return False
    found = []
    for acc in accesses(loop.arg):
        info = infos.get(acc.arg)  # type: ignore[arg-type]
        if info is None or not info.sparse or last not in acc.idxs:
            continue
        kinds = info.level_kinds or ()
        level = info.mode_order.index(acc.idxs.index(last))
        found.append(level == len(kinds) - 1 and kinds[level] in UNORDERED_KINDS)
    return found == [True]


def scatter_level_kinds(rhs: LogicNode, kinds: tuple[str, ...],
                        infos: dict[Alias, AliasInfo]) -> tuple[str, ...]:
    """``kinds`` with the last level unordered when it alone receives scattered writes
    through a row workspace, or follows one unordered operand (see the module docstring)."""
    if not kinds or kinds[-1] != PLAIN_KIND:
        return kinds
    out = [f.name for f in result_axes(rhs)]
    if scattered_fields(rhs) == (out[-1],) or follows_unordered(rhs, infos):
        return kinds[:-1] + (UNORDERED_KIND,)
    return kinds
