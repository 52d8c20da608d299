"""Turning lazy arrays into results: plan assembly, memoization, the run.

``compute_arrays`` puts every requested array into one ``Plan`` (so shared subexpressions
run once), hands it to the engine's executor for the arrays' device (``engine.executor_for``:
``LAZYSPARSE_EXECUTOR`` picks the cpu's), and stores each result on its array, so a later
plan uses the stored tensor instead of recomputing it. A unit-axis view of stored data
(:func:`stored_view`) needs no kernel. ``LazyArray`` computes through here; the public
``xp.compute``/``xp.explain`` (``api/chapters/compute.py``) check their arguments first.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING

from lazysparse.api.array import memo
from lazysparse.api.array.devices import device_mix_error, is_device_tensor
from lazysparse.api.array.held_regions import (
    copied_without_fills,
    dense_when_full,
    region_layout,
)
from lazysparse.api.array.held_values import held_values, only_these
from lazysparse.api.array.live import BY_ALIAS
from lazysparse.api.array.memo import memoized
from lazysparse.api.array.plan_nodes import fresh_alias, fresh_fields
from lazysparse.engine import Explanation, executor_for, explain_plan
from lazysparse.engine.known_shapes import run_known
from lazysparse.formats import tensor_ops as T
from lazysparse.formats.specs import FormatSpec
from lazysparse.logic.nodes import (
    Alias,
    Immediate,
    LogicNode,
    Plan,
    Produces,
    Query,
    Reformat,
    Relabel,
    Reorder,
    Subquery,
    Table,
)
from lazysparse.logic.traversal import prewalk

if TYPE_CHECKING:
    from lazysparse.api.array.lazy_array import LazyArray
    from lazysparse.formats import Tensor


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


def _region_kept(node: LogicNode, layouts: dict[int, FormatSpec],
                 cache: dict[int, LogicNode]) -> LogicNode | None:
    """A kept held value's subquery computed into its region layout (``layouts``, by
    subquery id: ``held_regions.region_layout``), its history rewritten as
    :func:`substitute_memoized` does; a memoized subquery's table; else None."""
    spec = layouts.get(id(node))
    if spec is None:
        return _memoized_table(node)
    assert isinstance(node, Subquery)
    arg = prewalk(node.arg, lambda n: _region_kept(n, layouts, cache), cache)
    return Subquery(node.lhs, Reformat(Immediate(spec), arg))


def build_plan(arrays: tuple[LazyArray, ...],
               layouts: dict[int, FormatSpec] | None = None) -> Plan:
    """One plan computing every array in ``arrays``: a query each, then ``Produces``;
    ``layouts``: the region layout of kept held values, by subquery id (every read of
    such a value in the plan reads that layout)."""
    cache: dict[int, LogicNode] = {}
    queries: list[LogicNode] = []
    outs: list[Alias] = []
    for a in arrays:
        a._sync()  # ``a.expr``; the attributes below read directly (this runs per compute)
        if layouts:
            expr = prewalk(a._expr, lambda n: _region_kept(n, layouts, cache), cache)
        else:
            expr = a._expr if a._epoch >= memo.EPOCH else substitute_memoized(a._expr, cache)
        out = fresh_alias()
        fields = fresh_fields(len(a._shape))
        rhs: LogicNode = Relabel(expr, fields)
        if a._requested_format is not None:
            rhs = Reformat(Immediate(a._requested_format), rhs)
        queries.append(Query(out, rhs))
        outs.append(out)
    return Plan((*queries, Produces(tuple(outs))))


def compute_arrays(arrays: tuple[LazyArray, ...], keep_regions: bool = False) -> None:
    """Compute ``arrays`` together in one plan; each keeps its result and becomes a leaf.
    Reductions the user still holds inside their histories, or sharing them, are computed
    in the same plan when keeping them costs no more than recomputing them
    (``api.held_values``), in a layout keeping their implicit region
    (``api.held_regions``); ``keep_regions``: ``arrays`` too (a value the library
    materializes for its own use: an eager function's operand, a write, a conversion,
    which the user never asked to compute). ValueError when the arrays live on several
    devices."""
    if not keep_regions and len(arrays) == 1 and _computed_known(arrays[0]):
        return
    if len(arrays) > 1:  # loops below, not comprehensions: per call
        devices = {a._device.name for a in arrays}
        if len(devices) > 1:
            raise device_mix_error(devices)
    todo_by_id: dict[int, LazyArray] = {}
    for a in arrays:
        if a.result is None:
            if isinstance(a._expr.arg, Reorder) and (view := stored_view(a)) is not None:
                a.set_result(view)  # a unit-axis view of stored data: no kernel
            else:
                todo_by_id[id(a)] = a
    if todo_by_id:
        todo = tuple(todo_by_id.values())
        kept = held_values(todo, BY_ALIAS)
        layouts = _region_layouts([k.array for k in kept]) if kept else None
        if keep_regions:
            layouts = {**(layouts or {}), **_region_layouts(todo)}
        if kept:
            todo += tuple([k.array for k in kept])
        results = executor_for(todo[0]._device.name)(build_plan(todo, layouts))
        for a, tensor in zip(todo, results, strict=True):
            if layouts and id(a._expr) in layouts:
                tensor = dense_when_full(tensor)
            elif layouts:
                tensor = copied_without_fills(a, tensor)
            a.set_result(tensor)


def _computed_known(a: LazyArray) -> bool:
    """Compute ``a`` through its shape's cached program from its key, without a plan
    (``engine.known_shapes.run_known``), where the full path would only build, key, look up
    and run that one plan: an uncomputed cpu array with no view or queued write to bring up
    to date, no requested format, not a view of stored data (a ``Reorder``: the full path
    may answer it without a kernel), nothing memoized in its history since it was built
    (no substitution), and no other uncomputed array held (``held_values.only_these``:
    none to keep). True when it computed ``a``."""
    if (a._result is not None or a._view is not None or a._update is not None
            or a._requested_format is not None or a._epoch < memo.EPOCH
            or type(a._expr.arg) is Reorder or a._device.name != "cpu"
            or not only_these((a,))):
        return False
    results = run_known(a._expr, len(a._shape))
    if results is None:
        return False
    a.set_result(results[0])
    return True


def _region_layouts(arrays: Iterable[LazyArray]) -> dict[int, FormatSpec]:
    """The region layout of each of ``arrays`` that has an implicit region, by the id of
    its subquery (``held_regions``: its stored form keeps that region for later reads)."""
    out: dict[int, FormatSpec] = {}
    for a in arrays:
        spec = region_layout(a)
        if spec is not None:
            out[id(a._expr)] = spec
    return out


def explain_arrays(arrays: tuple[LazyArray, ...], run: bool = False) -> Explanation:
    """How computing ``arrays`` together would run, with the held values it would keep
    (``run``: running the kernels, ``engine.explain.explain_plan``)."""
    todo = tuple({id(a): a for a in arrays if a.result is None}.values())
    kept = held_values(todo, BY_ALIAS) if todo else ()
    layouts = _region_layouts([k.array for k in kept]) if kept else None
    expl = explain_plan(build_plan(tuple(arrays) + tuple(k.array for k in kept), layouts),
                        run=run)
    return dataclasses.replace(expl, kept=tuple(k.describe() for k in kept))


# ---------------------------------------------------------------- unit-axis views


def unit_source(x: LazyArray) -> tuple[Subquery, tuple[int, ...]] | None:
    """``(source expression, its shape)`` when ``x`` is a unit-axis view (a Reorder that
    keeps the source's axes in order and only adds or drops fields; the api drops only
    size-1 axes: ``views.unit_view``), else None."""
    body = x.expr.arg
    if x.requested_format is not None or not isinstance(body, Reorder):
        return None
    inner = body.arg
    if not (isinstance(inner, Relabel) and isinstance(inner.arg, Subquery)):
        return None
    f, out = inner.idxs, body.idxs
    if len(set(f)) != len(f) or [g for g in out if g in f] != [g for g in f if g in out]:
        return None
    shape = tuple(x.shape[out.index(g)] if g in out else 1 for g in f)
    return inner.arg, shape


def stored_tensor(node: LogicNode) -> Tensor | None:
    """The tensor a leaf subquery (or a memoized one) stands for, else None."""
    if not isinstance(node, Subquery):
        return None
    if isinstance(node.arg, Table) and isinstance(node.arg.tns, Immediate):
        return node.arg.tns.val
    return memoized(node.lhs)


def stored_view(x: LazyArray) -> Tensor | None:
    """The value of a unit-axis view of stored data (``views.unit_view`` of a computed
    array), without running a kernel: the same data with size-1 axes renumbered (a NumPy
    view when dense). None for any other array."""
    src = unit_source(x)
    if src is None:
        return None
    t = stored_tensor(src[0])
    if t is None or is_device_tensor(t) or t.shape != src[1]:
        return None
    return T.with_shape(t, x.shape)
