"""Turning lazy arrays into results: plan assembly, executor choice, memoization.

``compute(*arrays)`` puts every requested array into one ``Plan`` (so shared subexpressions
run once), hands it to the executor chosen by ``LAZYSPARSE_EXECUTOR``, and stores each result
on its array, so a later plan uses the stored tensor instead of recomputing it.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

from lazysparse.logic.nodes import (
    Aggregate,
    Alias,
    Immediate,
    LogicNode,
    MapJoin,
    Plan,
    Produces,
    Query,
    Reformat,
    Relabel,
    Reorder,
    Subquery,
    Table,
)

if TYPE_CHECKING:
    from lazysparse.api.lazy_array import LazyArray
    from lazysparse.formats import Tensor

Executor = Callable[[Plan], "tuple[Tensor, ...]"]

# Computed arrays by the alias of their subquery, held only while the LazyArray lives
# (its ``result`` is the memoized tensor; Tensors themselves take no weak references).
_MEMO: weakref.WeakValueDictionary[Alias, LazyArray] = weakref.WeakValueDictionary()


def memoized(alias: Alias) -> Tensor | None:
    """The computed value of the subquery ``alias``, if an array still holds it."""
    arr = _MEMO.get(alias)
    if arr is None or arr.expr.lhs != alias:
        return None
    return arr.result


def reference_executor(plan: Plan) -> tuple[Tensor, ...]:
    """Run ``plan`` with the dense NumPy reference interpreter (the oracle)."""
    from lazysparse.logic import interpret

    return interpret(plan)


_EXECUTORS: dict[str, Callable[[], Executor]] = {
    "reference": lambda: reference_executor,
}


def register_executor(name: str, factory: Callable[[], Executor]) -> None:
    """Make ``LAZYSPARSE_EXECUTOR=name`` select the executor ``factory()`` returns."""
    _EXECUTORS[name] = factory


def default_executor_name() -> str:
    """The default executor: the compiled path when installed, else the reference one."""
    return "compiled" if "compiled" in _EXECUTORS else "reference"


def get_executor() -> Executor:
    """The executor named by ``LAZYSPARSE_EXECUTOR`` (default: compiled when available)."""
    name = os.environ.get("LAZYSPARSE_EXECUTOR", "").strip().lower() or default_executor_name()
    try:
        factory = _EXECUTORS[name]
    except KeyError:
        raise ValueError(
            f"LAZYSPARSE_EXECUTOR={name!r} is not an executor; choose one of {sorted(_EXECUTORS)}"
        ) from None
    return factory()


def substitute_memoized(node: LogicNode, cache: dict[int, LogicNode] | None = None) -> LogicNode:
    """Replace every subquery whose result is memoized by a ``Table`` of that result."""
    if cache is None:
        cache = {}
    key = id(node)
    if key in cache:
        return cache[key]
    out: LogicNode
    match node:
        case Subquery(lhs=lhs, arg=arg):
            memo = memoized(lhs)
            if memo is not None and not isinstance(arg, Table):
                from lazysparse.api.building import fresh_fields

                out = Subquery(lhs, Table(Immediate(memo), fresh_fields(memo.ndim)))
            else:
                new_arg = substitute_memoized(arg, cache)
                out = node if new_arg is arg else Subquery(lhs, new_arg)
        case MapJoin(op=op, args=args):
            new_args = tuple(substitute_memoized(a, cache) for a in args)
            out = node if new_args == args else MapJoin(op, new_args)
        case Aggregate(op=op, init=init, arg=arg, idxs=idxs):
            new = substitute_memoized(arg, cache)
            out = node if new is arg else Aggregate(op, init, new, idxs)
        case Reorder(arg=arg, idxs=idxs) | Relabel(arg=arg, idxs=idxs):
            new = substitute_memoized(arg, cache)
            out = node if new is arg else type(node)(new, idxs)
        case Reformat(tns=tns, arg=arg):
            new = substitute_memoized(arg, cache)
            out = node if new is arg else Reformat(tns, new)
        case _:
            out = node
    cache[key] = out
    return out


def build_plan(arrays: tuple[LazyArray, ...]) -> Plan:
    """One plan computing every array in ``arrays``: a query each, then ``Produces``."""
    from lazysparse.api.building import fresh_alias, fresh_fields

    cache: dict[int, LogicNode] = {}
    queries: list[LogicNode] = []
    outs: list[Alias] = []
    for a in arrays:
        expr = a.expr if a.history_epoch >= EPOCH else substitute_memoized(a.expr, cache)
        out = fresh_alias()
        fields = fresh_fields(a.ndim)
        rhs: LogicNode = Relabel(expr, fields)
        if a.requested_format is not None:
            rhs = Reformat(Immediate(a.requested_format), rhs)
        queries.append(Query(out, rhs))
        outs.append(out)
    return Plan((*queries, Produces(tuple(outs))))


def _inputs_to_device(plan: Plan) -> Plan:
    """``plan`` (normal form) with host tensors it reads copied to the GPU: constants the
    api made on the host for a cuda expression (e.g. ``broadcast_to``'s extent); arrays of
    the user were checked to share one device when the expression was built."""
    from lazysparse.api.lazy_array import is_device_tensor
    from lazysparse.kernels.cuda.device import to_cuda

    bodies = []
    for body in plan.bodies:
        match body:
            case Query(lhs=lhs, rhs=Table(tns=Immediate(val=t), idxs=idxs)) if (
                    not is_device_tensor(t)):
                body = Query(lhs, Table(Immediate(to_cuda(t)), idxs))
        bodies.append(body)
    return Plan(tuple(bodies))


def cuda_executor(plan: Plan) -> tuple[Tensor, ...]:
    """Run ``plan`` on the GPU: optimize, move host constants to the device, execute with
    the CUDA backend (``kernels.cuda.runtime``); results are ``DeviceTensor`` s."""
    from lazysparse.kernels.cuda.runtime import execute_plan_cuda
    from lazysparse.optimizer import optimize

    return execute_plan_cuda(_inputs_to_device(optimize(plan, device="cuda")))


def executor_for(device_name: str) -> Executor:
    """The executor of plans over arrays on ``device_name``: ``LAZYSPARSE_EXECUTOR``'s for
    the cpu, the CUDA backend for ``"cuda"``."""
    return cuda_executor if device_name == "cuda" else get_executor()


def compute(*arrays: LazyArray) -> LazyArray | tuple[LazyArray, ...]:
    """Compute ``arrays`` together in one plan (run by the cpu's executor, or by the CUDA
    backend for arrays on device cuda); each keeps its result and becomes a leaf. Returns
    the array itself for one argument (``x = xp.compute(x)``) and a tuple of the arrays for
    several (``x, r = xp.compute(x, r)``). Reductions the user still holds inside their
    histories are computed in the same plan (``lazy_array.held_reductions``: CG's ``Ap``
    then runs once). The arrays must share one device (ValueError otherwise): eager
    functions of several arrays (``concat`` …) compute their operands here, so this is
    also their mixing check."""
    from lazysparse.api.lazy_array import LazyArray, device_mix_error, held_reductions
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
        todo += tuple(a for a in held_reductions(todo) if a.device == todo[0].device)
        results = executor_for(todo[0].device.name)(build_plan(todo))
        for a, tensor in zip(todo, results, strict=True):
            a.set_result(tensor)
    return arrays[0] if len(arrays) == 1 else arrays


def memoize(alias: Alias, array: LazyArray) -> None:
    """Remember ``array`` (computed) as the value of ``alias`` for later plans."""
    global EPOCH
    _MEMO[alias] = array
    EPOCH += 1


# How many results were memoized so far: an expression whose uncomputed history was all
# built at the current epoch holds no subquery computed since, so nothing to substitute.
EPOCH = 0
