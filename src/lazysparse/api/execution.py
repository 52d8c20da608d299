"""Turning lazy arrays into results: plan assembly, memoization, ``explain``.

``compute(*arrays)`` puts every requested array into one ``Plan`` (so shared subexpressions
run once), hands it to the engine's executor for the arrays' device (``engine.executor_for``:
``LAZYSPARSE_EXECUTOR`` picks the cpu's), and stores each result on its array, so a later
plan uses the stored tensor instead of recomputing it.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from lazysparse.api import memo
from lazysparse.api.building import fresh_alias, fresh_fields
from lazysparse.api.held_values import held_values
from lazysparse.api.memo import memoized
from lazysparse.engine import Explanation, executor_for, explain_plan
from lazysparse.logic.nodes import (
    Alias,
    Immediate,
    LogicNode,
    Plan,
    Produces,
    Query,
    Reformat,
    Relabel,
    Subquery,
    Table,
)
from lazysparse.logic.traversal import prewalk

if TYPE_CHECKING:
    from lazysparse.api.lazy_array import LazyArray


def substitute_memoized(node: LogicNode, cache: dict[int, LogicNode] | None = None) -> LogicNode:
    """Replace every subquery whose result is memoized by a ``Table`` of that result
    (``cache``: the rewritten nodes by id, shared by the arrays of one plan)."""
    return prewalk(node, _memoized_table, cache)


def _memoized_table(node: LogicNode) -> LogicNode | None:
    """A ``Table`` of ``node``'s memoized result when it is a computed subquery, else None."""
    if isinstance(node, Subquery) and not isinstance(node.arg, Table):
        value = memoized(node.lhs)
        if value is not None:
            return Subquery(node.lhs, Table(Immediate(value), fresh_fields(value.ndim)))
    return None


def build_plan(arrays: tuple[LazyArray, ...]) -> Plan:
    """One plan computing every array in ``arrays``: a query each, then ``Produces``."""
    cache: dict[int, LogicNode] = {}
    queries: list[LogicNode] = []
    outs: list[Alias] = []
    for a in arrays:
        expr = a.expr if a.history_epoch >= memo.EPOCH else substitute_memoized(a.expr, cache)
        out = fresh_alias()
        fields = fresh_fields(a.ndim)
        rhs: LogicNode = Relabel(expr, fields)
        if a.requested_format is not None:
            rhs = Reformat(Immediate(a.requested_format), rhs)
        queries.append(Query(out, rhs))
        outs.append(out)
    return Plan((*queries, Produces(tuple(outs))))


def compute(*arrays: LazyArray) -> LazyArray | tuple[LazyArray, ...]:
    """Compute ``arrays`` together in one plan (run by the cpu's executor, or by the CUDA
    backend for arrays on device cuda); each keeps its result and becomes a leaf. Returns
    the array itself for one argument (``x = xp.compute(x)``) and a tuple of the arrays for
    several (``x, r = xp.compute(x, r)``). Reductions the user still holds inside their
    histories, or sharing them, are computed in the same plan when keeping them costs no
    more than recomputing them (``api.held_values``: CG's ``Ap``, ``r`` and ``p`` then run
    once). The arrays must share one device (ValueError otherwise): eager
    functions of several arrays (``concat`` …) compute their operands here, so this is
    also their mixing check."""
    from lazysparse.api.lazy_array import _BY_ALIAS, LazyArray, device_mix_error
    from lazysparse.api.views import stored_view

    for a in arrays:
        if not isinstance(a, LazyArray):
            raise TypeError(f"compute() takes lazysparse arrays, got {type(a).__name__}")
    devices = {a.device.name for a in arrays}
    if len(devices) > 1:
        raise device_mix_error(devices)
    for a in arrays:
        if a.result is None and (view := stored_view(a)) is not None:
            a.set_result(view)  # a unit-axis view of stored data: no kernel
    todo = tuple({id(a): a for a in arrays if a.result is None}.values())
    if todo:
        todo += tuple(k.array for k in held_values(todo, _BY_ALIAS))
        results = executor_for(todo[0].device.name)(build_plan(todo))
        for a, tensor in zip(todo, results, strict=True):
            a.set_result(tensor)
    return arrays[0] if len(arrays) == 1 else arrays


def explain(*arrays: Any) -> Explanation:
    """``xp.explain(*arrays)``: how computing ``arrays`` together would run (a Plan works too)."""
    if len(arrays) == 1 and isinstance(arrays[0], Plan):
        return explain_plan(arrays[0])
    from lazysparse.api.lazy_array import _BY_ALIAS, LazyArray

    for a in arrays:
        if not isinstance(a, LazyArray):
            raise TypeError(f"explain takes lazysparse arrays, got {type(a).__name__}")
    if not arrays:
        raise TypeError("explain needs at least one array")
    todo = tuple({id(a): a for a in arrays if a.result is None}.values())
    kept = held_values(todo, _BY_ALIAS) if todo else ()
    expl = explain_plan(build_plan(tuple(arrays) + tuple(k.array for k in kept)))
    return dataclasses.replace(expl, kept=tuple(k.describe() for k in kept))
