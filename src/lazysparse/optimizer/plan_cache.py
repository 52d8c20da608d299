"""Optimized plans cached by structure, so a repeated expression skips the optimizer.

The key is everything the passes decide on: the plan's structural key, its scalar constants
by value, each input's shape and density bucket (the optimizer's nnz estimates), which
inputs are the same object, and the densify limit. The cached plan keeps no data: its input
tables hold slot numbers, filled with the new call's tensors in input order. A plan whose
optimized form holds data anywhere else is not cached.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from lazysparse.formats.config import get_densify_limit
from lazysparse.logic.nodes import Immediate, LogicNode, Plan, Query, Table, _scalar_key
from lazysparse.logic.structural_key import key_and_parameters
from lazysparse.optimizer.pipeline import optimize
from lazysparse.optimizer.rewrite import walk

CAPACITY = 512


@dataclass(frozen=True)
class _Slot:
    """Stands for input ``index`` of the plan in a cached optimized plan."""

    index: int


_CACHE: OrderedDict[Any, tuple[Plan, frozenset[int]]] = OrderedDict()
_LOCK = threading.Lock()
STATS = {"hits": 0, "misses": 0, "uncacheable": 0}


def _is_data(val: Any) -> bool:
    return hasattr(val, "levels") or hasattr(val, "__array__") and not isinstance(
        val, int | float | complex | bool) and getattr(val, "ndim", 0) > 0


def _inputs(plan: Plan) -> list[Any]:
    """The data the plan reads, in walk order (a tensor read twice appears twice)."""
    return [n.val for n in walk(plan) if isinstance(n, Immediate) and _is_data(n.val)]


def _density_bucket(t: Any) -> int:
    size = math.prod(t.shape)
    nnz = int(getattr(t, "nnz", size))
    return -1 if size == 0 else round(4 * math.log2((nnz + 1) / (size + 1)))


def plan_key(plan: Plan, inputs: list[Any]) -> Any:
    """What the optimizer's decisions depend on (see the module docstring)."""
    first: dict[int, int] = {}
    same = tuple(first.setdefault(id(t), i) for i, t in enumerate(inputs))
    shapes = tuple((tuple(t.shape), _density_bucket(t)) for t in inputs)
    key, params = key_and_parameters(plan)
    consts = tuple(_scalar_key(c) for c in params)
    return (key, consts, shapes, same, get_densify_limit())


def _template(opt: Plan, inputs: list[Any]) -> tuple[Plan, frozenset[int]] | None:
    """``opt`` with its input tensors replaced by slots, or None when it holds other data."""
    index = {id(t): i for i, t in reversed(list(enumerate(inputs)))}
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
        bodies.append(body)
    return Plan(tuple(bodies)), frozenset(slots)


def _fill(template: Plan, slots: frozenset[int], inputs: list[Any]) -> Plan:
    bodies = []
    for j, body in enumerate(template.bodies):
        if j in slots:
            assert isinstance(body, Query) and isinstance(body.rhs, Table)
            slot = body.rhs.tns.val
            body = Query(body.lhs, Table(Immediate(inputs[slot.index]), body.rhs.idxs))
        bodies.append(body)
    return Plan(tuple(bodies))


def optimize_cached(plan: Plan) -> Plan:
    """``optimize(plan)``, from the cache when a plan of the same structure was optimized."""
    inputs = _inputs(plan)
    try:
        key = plan_key(plan, inputs)
        hash(key)
    except TypeError:  # an unhashable constant: optimize without caching
        STATS["uncacheable"] += 1
        return optimize(plan)
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
    if hit is not None:
        STATS["hits"] += 1
        return _fill(hit[0], hit[1], inputs)
    STATS["misses"] += 1
    opt = optimize(plan)
    tpl = _template(opt, inputs)
    if tpl is None:
        STATS["uncacheable"] += 1
        return opt
    with _LOCK:
        _CACHE[key] = tpl
        while len(_CACHE) > CAPACITY:
            _CACHE.popitem(last=False)
    return opt


def clear_plan_cache() -> None:
    """Forget every cached optimized plan."""
    with _LOCK:
        _CACHE.clear()
