"""Which results keep an operand's structure (issue 16): a map of banded, ELL, blocked or
run-length operands stays in their layout where the algebra allows.

A query with no reduction whose sparse operands all store the result's fields in the
result's order, in one structured layout, and whose result the format choice made sparse
(the fill survives, ``A * 2``, ``A + A``, ``where(A > 0, A, 0)``), is stored in that layout;
a map of run-length operands stays run-length even when the fill changes (``img * 2 + 1``:
the same runs, each value mapped once, the fill mapped too). The result is stored so:
the kernel writes one value per stored position of the operand and shares its index
arrays, or (several operands: ``A + B`` on two DIAs) writes csr-like and the host lays the
union out as the structure again (``compile.planning.structured_inputs``). A reduction, a
transpose, a mix with other sparse formats, or a run-length operand times something that
varies along its runs (``R * x``) gets the usual choice.
"""

from __future__ import annotations

from lazysparse.formats.levels.registry import is_located, is_run_valued
from lazysparse.formats.specs import STRUCTURED_KINDS
from lazysparse.logic.nodes import Alias, LogicNode
from lazysparse.optimizer.analysis import AliasInfo, query_parts, result_axes
from lazysparse.optimizer.rewrite import accesses


def structured_kinds(rhs: LogicNode, kinds: tuple[str, ...],
                     infos: dict[Alias, AliasInfo]) -> tuple[str, ...]:
    """``kinds``, or the structured layout of the query's sparse operands when the result
    keeps it (see the module docstring)."""
    if not kinds:
        return kinds
    _, agg, loop = query_parts(rhs)
    if agg is not None:
        return kinds
    out = result_axes(rhs)
    layouts = set()
    dense_last = False  # a dense operand varies along the last field (within a run)
    for acc in accesses(loop.arg):
        info = infos.get(acc.arg)  # type: ignore[arg-type]
        if info is None or not info.sparse:
            dense_last = dense_last or bool(out and out[-1] in acc.idxs)  # type: ignore[attr-defined]
            continue
        own = info.level_kinds or ()
        if (own[-1] not in STRUCTURED_KINDS or tuple(acc.idxs) != tuple(out)  # type: ignore[attr-defined]
                or info.mode_order != tuple(range(len(own)))):
            return kinds
        layouts.add(own)
    if len(layouts) != 1:
        return kinds
    (own,) = layouts
    if len(own) != len(kinds) or (is_run_valued(own[-1]) and dense_last):
        return kinds  # one value per run would not hold
    if is_located(kinds[-1]) and not is_run_valued(own[-1]):
        return kinds  # the fill does not survive (``A + 1``): dense, as for csr
    return own
