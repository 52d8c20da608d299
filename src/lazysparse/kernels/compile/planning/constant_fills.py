"""Whether a query's result fill is known without its constants: over dense operands
(no implicit region anywhere), ``analysis.eval_fill`` gives 0 of the result dtype for
every value of the constants when the fill rule can never leave the result an implicit
region (``x + alpha * p``: ``alpha * p`` has one only where ``alpha`` is 0, and ``x +``
fills it).

A solver step runs the same recipes with new floats on every call; knowing this once per
recipe spares the fill evaluation of each run (``backends.program.Recipe``). The rule is
the one ``logic.operator_registry.mapjoin_region`` applies, taken over every constant
value at once: a constant may be any value, so every branch a value could take counts.
"""

from __future__ import annotations

import enum
import itertools
from typing import Any

import numpy as np

from lazysparse.formats.dtypes import same_value
from lazysparse.kernels.compile.planning.analysis import (
    PAccess,
    PApply,
    PField,
    PNode,
    apply_to_values,
)


class Outcome(enum.Enum):
    """What ``mapjoin_region`` may give a node over dense operands."""

    FULL = "no implicit region"  # eval_fill then gives 0 of the result dtype
    ZERO = "an implicit region of fill 0"
    ANY = "an implicit region of any fill"


def always_full(expr: PNode) -> bool:
    """Whether ``expr`` over dense operands has no implicit region whatever its constants'
    values, so its result fill is 0 of its dtype."""
    return _outcomes(expr) == {Outcome.FULL}


def _outcomes(node: PNode) -> set[Outcome]:
    """Every outcome ``node`` may have over dense operands, for any constant values."""
    if isinstance(node, PAccess | PField):
        return {Outcome.FULL}
    if not isinstance(node, PApply):  # a constant, an epilogue's reduction result
        return {Outcome.ANY}
    out: set[Outcome] = set()
    for combo in itertools.product(*(_outcomes(a) for a in node.args)):
        out |= _apply(node, combo)
    return out


def _apply(node: PApply, args: tuple[Outcome, ...]) -> set[Outcome]:
    """The outcomes of ``node`` for one outcome per argument (``mapjoin_region``'s cases:
    no argument full, all full, or a scan of the implicit ones for an annihilator or a
    selection, the first found deciding)."""
    if Outcome.FULL not in args:
        return {_all_implicit(node, args)}
    if all(a is Outcome.FULL for a in args):
        return {Outcome.FULL}
    out: set[Outcome] = set()
    for i, a in enumerate(args):
        if a is Outcome.FULL:
            continue
        z = node.op.annihilator_at(i, node.operand_dtypes[i])
        if a is Outcome.ZERO:
            decided = _zero_decides(node, i, z, args)
            if decided is not None:
                out.add(decided)
                return out
            continue
        # any value: it may be the annihilator, select an argument, or neither (scan on)
        if z is not None:
            out.add(Outcome.ZERO if _is_zero(z) else Outcome.ANY)
        if node.op.selections:
            out.add(Outcome.ANY)
    out.add(Outcome.FULL)
    return out


def _zero_decides(node: PApply, i: int, z: Any, args: tuple[Outcome, ...]) -> Outcome | None:
    """What argument ``i`` holding an implicit 0 decides: the annihilator, a selected
    implicit argument's fill, or nothing (None: the scan goes on)."""
    zero = np.asarray(0).astype(node.operand_dtypes[i])[()]
    if z is not None and same_value(zero, z):
        return Outcome.ZERO if _is_zero(z) else Outcome.ANY
    j = node.op.selected_by(i, zero)
    if j is not None and args[j] is not Outcome.FULL:
        return args[j]
    return None


def _all_implicit(node: PApply, args: tuple[Outcome, ...]) -> Outcome:
    """Every argument implicit: the fill is ``op`` of their fills, 0 only when all are 0
    and ``op`` maps zeros to 0."""
    if any(a is Outcome.ANY for a in args):
        return Outcome.ANY
    v = apply_to_values(node.op, [0] * len(args), node.operand_dtypes)
    return Outcome.ZERO if _is_zero(v) else Outcome.ANY


def _is_zero(v: Any) -> bool:
    """Whether ``v`` is a number equal to 0 (``-0.0`` included)."""
    try:
        return bool(np.asarray(v) == 0)
    except (TypeError, ValueError):
        return False


__all__ = ["Outcome", "always_full"]
