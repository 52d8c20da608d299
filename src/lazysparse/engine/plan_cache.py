"""Optimized plans cached by structure, so a repeated expression skips the optimizer.

The key is everything the passes decide on: the device whose passes run (``cpu`` and
``cuda`` differ: ``optimizer.pipeline.passes_for``), the plan's structural key, the
*class* of each scalar constant (its kind and whether it is 0, 1, -1, NaN, ±inf, an integer
extreme, or else its sign: the values operator algebra treats specially), each input's
shape, density bucket (the optimizer's nnz estimates) and skew (its degree statistics),
which inputs are the same object, and the densify limit; where exact counts decided formats
(``optimizer.exact_counts``), their verdicts on the call's data. A fully dense input's fill value
is left out: no decision reads it, and dense iterates whose fill drifts with constants
(``r + beta * p``) must share one plan.

The cached plan keeps no data and no constant values: its input tables hold ``_Slot``
numbers and its pointwise constants ``_Param`` numbers, filled from the new call's inputs
and parameters. A plan whose optimized form holds other data, or a constant the optimizer
made itself, is cached under its constants' values instead. Constants of one class that
would lead the optimizer elsewhere (``c1 + c2 == 0`` by coincidence) reuse a plan that is
still correct: result fill values are computed at run time and the kernels check the fill
decisions they were built for (``kernels.backends.program``).
"""

from __future__ import annotations

import math
import operator
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lazysparse.engine import plan_store
from lazysparse.formats.compiled.sync import Counters
from lazysparse.formats.config import get_densify_limit
from lazysparse.formats.statistics import skew_signature
from lazysparse.formats.tensor import Tensor
from lazysparse.logic.nodes import (
    Aggregate,
    Immediate,
    LogicNode,
    MapJoin,
    Plan,
    Query,
    Table,
    _scalar_key,
)
from lazysparse.logic.structural_key import (
    data_key,
    key_data_and_parameter_nodes,
    scalar_kind,
    spec_key,
)
from lazysparse.logic.traversal import map_children, prewalk, walk
from lazysparse.optimizer.analysis import counted_formats
from lazysparse.optimizer.pipeline import optimize
from lazysparse.optimizer.unreached import reads_values, reread_values

CAPACITY = 512


@dataclass(frozen=True)
class _Slot:
    """Stands for input ``index`` of the plan in a cached optimized plan."""

    index: int


@dataclass(frozen=True)
class _Param:
    """Stands for scalar parameter ``index`` of the plan in a cached optimized plan."""

    index: int


@dataclass(eq=False)
class CachedPlan:
    """An optimized plan with ``_Slot`` inputs and ``_Param`` constants, and what an
    executor derived from it once (``program``: e.g. ``kernels.backends.program.Program``).
    ``store_key``: the key it goes on disk under (None once it is there as a plan that ran
    compiled: :func:`persist`); ``eager_saved``: on disk as a plan that ran eager only
    (:func:`persist_eager`); ``from_disk``: read from ``plan_store`` as a plan that ran
    compiled, so its kernels are in the kernel cache."""

    template: Plan
    slots: frozenset[int]
    cached: bool = True
    program: Any = field(default=None, repr=False)
    store_key: Any = field(default=None, repr=False)
    from_disk: bool = False
    eager_saved: bool = False

    def fill(self, inputs: list[Any], params: tuple[Any, ...]) -> Plan:
        """The optimized plan of a call with ``inputs`` and ``params``."""
        return _fill(self.template, self.slots, inputs, params)

    def plan(self, inputs: list[Any], params: tuple[Any, ...]) -> Plan:
        """The optimized plan to run: filled from the call when cached, else the plan
        itself."""
        return self.fill(inputs, params) if self.cached else self.template


_BY_VALUE = object()  # marks a class key whose plans are cached under constant values
_VALUE = operator.attrgetter("val")  # an Immediate's value, read in C
_CACHE: OrderedDict[Any, Any] = OrderedDict()
_LOCK = threading.Lock()
STATS = Counters("hits", "misses", "uncacheable", "disk_hits", "optimized")


def _is_data(val: Any) -> bool:
    return hasattr(val, "levels") or hasattr(val, "__array__") and not isinstance(
        val, int | float | complex | bool) and getattr(val, "ndim", 0) > 0


def _is_dense(t: Any) -> bool:
    """Every level full and locatable (what kernels call located: its fill is unused)."""
    return all(lv.properties.full and lv.capabilities.locate for lv in t.levels)


def input_key(val: Any) -> Any:
    """The key of an input: its signature (without the fill value when it is dense), its
    shape, its density bucket and its skew (``formats.statistics.skew_signature``: degree
    statistics size skewed operands); None for what is not data. Everything the optimizer reads
    of an input, so the structural key caches it with a computed array's leaf."""
    if hasattr(val, "levels") and hasattr(val, "signature") and _is_dense(val):
        key: Any = ("dense-data", spec_key(val.spec), val.dtype, val.ndim)
    else:
        key = data_key(val)
        if key is None:
            return None
    skew = skew_signature(val) if isinstance(val, Tensor) and not _is_dense(val) else ()
    return (key, tuple(val.shape), _density_bucket(val), skew)


def _density_bucket(t: Any) -> int:
    size = math.prod(t.shape)
    nnz = int(getattr(t, "nnz", size))
    return -1 if size == 0 else round(4 * math.log2((nnz + 1) / (size + 1)))


_INT_EXTREMES = frozenset(int(v) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8,
                                           np.uint16, np.uint32, np.uint64)
                          for v in (np.iinfo(t).min, np.iinfo(t).max))


_ZERO_PART = _scalar_key(0.0)  # a real constant's imaginary part in its class


def const_class(val: Any) -> Any:
    """What the optimizer may tell apart in a constant: its kind, and its value when it is
    one operator algebra treats specially (0, 1, -1, NaN, ±inf, integer extremes, bools),
    else only its sign."""
    kind = scalar_kind(val)
    if isinstance(val, float | np.floating):  # the common case, without complex()
        x = float(val)
        if math.isfinite(x) and x not in (0.0, 1.0, -1.0):
            return (kind, ("pos" if x > 0 else "neg", _ZERO_PART))
    if isinstance(val, bool | np.bool_):
        return (kind, bool(val))
    try:
        c = complex(val)
    except (TypeError, ValueError):
        return (kind, _scalar_key(val))
    parts = []
    for x in (c.real, c.imag):
        if math.isnan(x) or math.isinf(x) or x in (0.0, 1.0, -1.0):
            parts.append(_scalar_key(x))
        elif isinstance(val, int | np.integer) and int(val) in _INT_EXTREMES:
            parts.append(("extreme", int(val)))  # an integer max/min's identity
        else:
            parts.append("pos" if x > 0 else "neg")
    return (kind, tuple(parts))


def plan_key(plan: Plan) -> tuple[Any, list[Any], tuple[Immediate, ...]]:
    """What the optimizer's decisions depend on (see the module docstring; shapes and
    density buckets are in the data keys), the data the plan reads (in key order; a tensor
    read twice appears twice) and the plan's parameter nodes in parameter order, from one
    walk."""
    key, inputs, nodes = key_data_and_parameter_nodes(plan, input_key)
    return (key, const_classes(tuple(map(_VALUE, nodes))), same_inputs(inputs),
            get_densify_limit()), inputs, nodes


def same_inputs(inputs: Any) -> tuple[int, ...]:
    """Which inputs are the same object: each input's first position (maps in C: this runs
    per compute)."""
    first: dict[int, int] = {}
    return tuple(map(first.setdefault, map(id, inputs), range(len(inputs))))


def const_classes(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """``const_class`` of each constant; a finite float (Python's or ``float64``) other
    than 0, 1 and -1, the common constant, is classed inline, without two calls each."""
    out = []
    for val in values:
        kind = _FLOAT_KINDS.get(type(val))
        if kind is not None and math.isfinite(val) and val not in (0.0, 1.0, -1.0):
            out.append((kind, ("pos" if val > 0 else "neg", _ZERO_PART)))
        else:
            out.append(const_class(val))
    return tuple(out)


_FLOAT_KINDS = {float: scalar_kind(0.0), np.float64: scalar_kind(np.float64(0.0))}


def _parametrize(node: LogicNode, pindex: dict[int, int]) -> LogicNode | None:
    """``node`` with its pointwise constants replaced by ``_Param`` s (None when one of
    them is not a parameter of the plan)."""
    failed = False

    def visit(n: LogicNode) -> LogicNode:
        nonlocal failed
        if isinstance(n, Immediate):
            return n
        if isinstance(n, MapJoin):
            args = []
            for a in n.args:
                if isinstance(a, Immediate):
                    if id(a) not in pindex:
                        failed = True
                        return n
                    args.append(Immediate(_Param(pindex[id(a)])))
                else:
                    args.append(visit(a))
            return MapJoin(n.op, tuple(args))
        if isinstance(n, Aggregate):  # the init stays: it is in the key by value
            return Aggregate(n.op, n.init, visit(n.arg), n.idxs)
        return map_children(n, visit)

    out = visit(node)
    return None if failed else out


def _template(opt: Plan, inputs: list[Any], nodes: tuple[Immediate, ...],
              by_value: bool) -> CachedPlan | None:
    """``opt`` with its input tensors replaced by slots and its constants by parameters
    (kept by value with ``by_value``); None when it holds other data or, unless
    ``by_value``, a constant that is not one of the plan's parameters."""
    index = {id(t): i for i, t in reversed(list(enumerate(inputs)))}
    pindex = {id(n): i for i, n in enumerate(nodes)}
    bodies: list[LogicNode] = []
    slots: set[int] = set()
    for body in opt.bodies:
        if isinstance(body, Query) and isinstance(body.rhs, Table) and \
                id(body.rhs.tns.val) in index:
            i = index[id(body.rhs.tns.val)]
            slots.add(len(bodies))
            body = Query(body.lhs, Table(Immediate(_Slot(i)), body.rhs.idxs))
        elif any(isinstance(n, Immediate) and _is_data(n.val) for n in walk(body)):
            return None
        elif not by_value:
            new = _parametrize(body, pindex)
            if new is None:
                return None
            body = new
        bodies.append(body)
    return CachedPlan(Plan(tuple(bodies)), frozenset(slots))


def _fill(template: Plan, slots: frozenset[int], inputs: list[Any],
          params: tuple[Any, ...]) -> Plan:
    def param(n: LogicNode) -> LogicNode | None:
        if isinstance(n, Immediate) and isinstance(n.val, _Param):
            return Immediate(params[n.val.index])
        return n if isinstance(n, Immediate | Table) else None

    bodies = []
    for j, body in enumerate(template.bodies):
        if j in slots:
            assert isinstance(body, Query) and isinstance(body.rhs, Table)
            slot = body.rhs.tns.val
            body = Query(body.lhs, Table(Immediate(inputs[slot.index]), body.rhs.idxs))
        elif isinstance(body, Query):
            body = prewalk(body, param)
        bodies.append(body)
    return Plan(tuple(bodies))


def lookup(plan: Plan, device: str = "cpu") -> tuple[CachedPlan, list[Any], tuple[Any, ...]]:
    """The form of ``plan`` optimized for ``device`` from the cache (in memory, then on disk:
    ``engine.plan_store``; optimizing it on a miss of both), the plan's inputs and its
    parameter values. An entry that could not be cached (``cached`` False) holds the
    optimized plan itself, with no slots or parameters."""
    try:
        raw, inputs, nodes = plan_key(plan)
        key: Any = (device, raw)
        hash(key)  # C only: the key's structures hash by identity, its classes are small
    except TypeError:  # an unhashable constant: optimize without caching
        STATS.bump("uncacheable")
        return CachedPlan(_optimize(plan, device), frozenset(), cached=False), [], ()
    params = tuple(map(_VALUE, nodes))
    by_value = False
    with _LOCK:  # the hit path, as short as it was before the disk store
        hit = _CACHE.get(key)
        if hit is _BY_VALUE:
            by_value = True
            key = _value_key(key, params)
            hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
    counted = isinstance(hit, _Counted)
    if counted:  # formats an exact count decided: the call's own counts pick the plan
        key = _counted_key(key, hit, inputs, params)
        hit = _get(key)
    if hit is not None:
        STATS.bump("hits")
        return hit, inputs, params
    STATS.bump("misses")
    entry = None if counted else _stored(key, by_value)
    if entry is None:
        entry, key, opt = _optimized(plan, device, key, inputs, nodes, params, by_value,
                                     counted)
        if entry is None:
            STATS.bump("uncacheable")
            return CachedPlan(opt, frozenset(), cached=False), inputs, params
    _put(key, entry)
    return entry, inputs, params


def known_entry(key: Any, inputs: list[Any] | None = None,
                params: tuple[Any, ...] = ()) -> CachedPlan | None:
    """The cached entry under the full plan-cache ``key`` (``(device, plan_key(...)[0])``)
    when it is a plain hit (marked recently used, as :func:`lookup` does; the caller
    counts the hit once it uses it); None for a miss or a shape cached by constant values
    (those need :func:`lookup`'s full path). A shape whose formats exact counts decided
    is found as :func:`lookup` finds it, by the counts' verdicts on ``inputs`` and
    ``params`` (the plan's data and constants), when they are given; else None."""
    with _LOCK:
        hit = _CACHE.get(key)
        if type(hit) is CachedPlan:
            _CACHE.move_to_end(key)
            return hit
    if inputs is None or not isinstance(hit, _Counted):
        return None
    found = _get(_counted_key(key, hit, inputs, params))
    return found if type(found) is CachedPlan else None


@dataclass(eq=False)
class _Counted:
    """Marks a key whose plans' formats exact counts decided (``optimizer.exact_counts``):
    the plans are cached under the counts' verdicts too, found with ``probe``'s queries.
    ``last``: the latest call's inputs (weakly), levels, parameters and verdicts, one tuple
    replaced whole, so a loop over the same data does not re-derive them."""

    probe: CachedPlan
    last: tuple[Any, ...] = ()


def _counted_key(key: Any, marker: _Counted, inputs: list[Any],
                 params: tuple[Any, ...]) -> Any:
    """``key`` with the verdicts of the marker's exact counts on this call's inputs (each
    count is memoized with its tensor; the same inputs again reuse the verdicts)."""
    levels = tuple(id(getattr(t, "levels", None)) for t in inputs)
    consts = tuple(_scalar_key(p) for p in params)
    last = marker.last
    if (last and last[1] == levels and last[2] == consts and len(last[0]) == len(inputs)
            and all(r() is t for r, t in zip(last[0], inputs, strict=True))):
        verdicts = last[3]
        if reads_values(verdicts):  # finiteness, read again: data may be written in place
            verdicts = reread_values(verdicts, _slot_tables(marker.probe, inputs))
    else:
        verdicts = counted_formats(marker.probe.fill(inputs, params))
        try:
            marker.last = (tuple(weakref.ref(t) for t in inputs), levels, consts, verdicts)
        except TypeError:  # an input without weak references: derive them each call
            pass
    return (key, "counted", verdicts)


def _slot_tables(entry: CachedPlan, inputs: list[Any]) -> dict[str, Any]:
    """The call's input tensor of each input table of ``entry``, by the table's alias."""
    bodies = entry.template.bodies
    return {bodies[j].lhs.name: inputs[bodies[j].rhs.tns.val.index]  # type: ignore[attr-defined]
            for j in entry.slots}


def _get(key: Any) -> Any:
    """The entry under ``key`` (marked recently used), or None."""
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
    return hit


def _put(key: Any, entry: Any) -> None:
    """Keep ``entry`` under ``key``, dropping the least recently used past ``CAPACITY``."""
    with _LOCK:
        _CACHE[key] = entry
        while len(_CACHE) > CAPACITY:
            _CACHE.popitem(last=False)


def _value_key(key: Any, params: tuple[Any, ...]) -> Any:
    """The key of a shape cached under its constants' values."""
    return (key, tuple(_scalar_key(p) for p in params))


def _stored(key: Any, by_value: bool) -> CachedPlan | None:
    """The entry a process left on disk for ``key`` (``plan_store``), or None; a shape
    cached by its constants' values is never on disk (one file per shape, not per value).
    A plan that only ran eager there keeps its ``store_key``: it is written again, as
    compiled, once its kernels are (:func:`persist`)."""
    if by_value:
        return None
    found = plan_store.load(key)
    if not (isinstance(found, tuple) and len(found) == 3 and isinstance(found[0], Plan)
            and isinstance(found[2], bool)):
        return None
    STATS.bump("disk_hits")
    plan, slots, compiled = found
    if compiled:
        return CachedPlan(plan, frozenset(slots), from_disk=True)
    return CachedPlan(plan, frozenset(slots), store_key=key, eager_saved=True)


def _optimized(plan: Plan, device: str, key: Any, inputs: list[Any],
               nodes: tuple[Immediate, ...], params: tuple[Any, ...], by_value: bool,
               counted: bool) -> tuple[CachedPlan | None, Any, Plan]:
    """The new cache entry of ``plan`` (None when it cannot be cached), its key and the
    optimized plan. An entry under a class key goes on disk once it runs compiled
    (:func:`persist`), unless exact counts on this call's data decided its formats (then it
    is kept in memory under the counts' verdicts: another process's data may count
    otherwise)."""
    opt = _optimize(plan, device)
    entry = _template(opt, inputs, nodes, by_value)
    if entry is None and not by_value:
        # a constant the optimizer made itself: cache this shape under constant values
        entry = _template(opt, inputs, nodes, True)
        if entry is not None:
            _put(key, _BY_VALUE)
            key, by_value = _value_key(key, params), True
    if entry is None:
        return None, key, opt
    verdicts = () if counted else counted_formats(opt)
    if verdicts:
        _put(key, _Counted(entry))
        return entry, (key, "counted", verdicts), opt
    if not by_value and not counted:
        entry.store_key = key
    return entry, key, opt


def persist(entry: CachedPlan) -> None:
    """Keep a shape that ran compiled on disk for later processes, once: a plan on disk
    marked compiled means its kernels are in the kernel cache too, so a new process runs it
    compiled at once (``engine.tiers``) without optimizing it again."""
    key = entry.store_key
    if key is not None:
        entry.store_key = None
        entry.eager_saved = True
        plan_store.save(key, (entry.template, tuple(sorted(entry.slots)), True))


def persist_eager(entry: CachedPlan) -> None:
    """Keep a shape that ran eager on disk for later processes, once, marked eager-only: a
    new process reads its plan instead of optimizing it again, and runs it eager (its
    kernels may never have compiled); :func:`persist` marks it compiled later."""
    key = entry.store_key
    if key is not None and not entry.eager_saved:
        entry.eager_saved = True
        plan_store.save(key, (entry.template, tuple(sorted(entry.slots)), False))


def _optimize(plan: Plan, device: str) -> Plan:
    """Run the optimizer (counted: ``STATS["optimized"]``)."""
    STATS.bump("optimized")
    return optimize(plan, device)


def clear_plan_cache() -> None:
    """Forget every optimized plan cached in this process (those on disk stay:
    ``plan_store.clear``)."""
    with _LOCK:
        _CACHE.clear()
