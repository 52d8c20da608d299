"""A dense NumPy evaluator of logic plans, used by these tests only while
``lazysparse.logic.interpret`` (the project's oracle) is not available.

Each expression evaluates to ``(array, fields)`` with one array axis per field.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lazysparse.logic.nodes import (
    Aggregate,
    Alias,
    Field,
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
from lazysparse.logic.operators import aggregate_dtype

Val = tuple[np.ndarray, tuple[Field, ...]]


def _align(v: Val, fields: tuple[Field, ...]) -> np.ndarray:
    arr, fs = v
    perm = [fs.index(f) for f in fields if f in fs]
    arr = np.transpose(arr, perm) if perm else arr
    shape, it = [], iter(arr.shape)
    for f in fields:
        shape.append(next(it) if f in fs else 1)
    return arr.reshape(shape)


def _eval(node: LogicNode, env: dict[Alias, Val], memo: dict[int, Val]) -> Val:
    key = id(node)
    if key in memo:
        return memo[key]
    match node:
        case Table(tns=tns, idxs=idxs):
            out: Val = (np.asarray(tns.val.to_numpy()), tuple(idxs))
        case Alias():
            out = env[node]
        case Subquery(lhs=lhs, arg=arg):
            if lhs not in env:
                env[lhs] = _eval(arg, env, memo)
            out = env[lhs]
        case Relabel(arg=arg, idxs=idxs):
            arr, fs = _eval(arg, env, memo)
            assert len(fs) == len(idxs), (fs, idxs)
            out = (arr, tuple(idxs))
        case Reorder(arg=arg, idxs=idxs):
            arr, fs = _eval(arg, env, memo)
            drop = [k for k, f in enumerate(fs) if f not in idxs]
            assert all(arr.shape[k] == 1 for k in drop), "Reorder drops a non-size-1 axis"
            arr = arr.reshape([d for k, d in enumerate(arr.shape) if k not in drop])
            kept = tuple(f for f in fs if f in idxs)
            out = (_align((arr, kept), tuple(idxs)), tuple(idxs))
        case MapJoin(op=op, args=args):
            vals: list[Any] = []
            fields: list[Field] = []
            for a in args:
                if isinstance(a, Field | Immediate):
                    continue
                v = _eval(a, env, memo)
                fields.extend(f for f in v[1] if f not in fields)
            for a in args:
                if isinstance(a, Field) and a not in fields:
                    fields.append(a)
            ft = tuple(fields)
            sizes: dict[Field, int] = {}
            for a in args:
                if not isinstance(a, Field | Immediate):
                    arr, fs = _eval(a, env, memo)
                    for f, d in zip(fs, arr.shape, strict=True):
                        sizes[f] = max(sizes.get(f, 1), d)
            for a in args:
                if isinstance(a, Immediate):
                    vals.append(a.val)
                elif isinstance(a, Field):
                    n = sizes.get(a, 1)
                    vals.append(_align((np.arange(n, dtype=np.int64), (a,)), ft))
                else:
                    vals.append(_align(_eval(a, env, memo), ft))
            res = np.asarray(op.val.apply(*vals))
            res = np.broadcast_to(res, [sizes.get(f, 1) for f in ft]).copy()
            out = (res, ft)
        case Aggregate(op=op, init=init, arg=arg, idxs=idxs):
            arr, fs = _eval(arg, env, memo)
            dt = aggregate_dtype(op.val, init.val, arr.dtype)
            red = [k for k, f in enumerate(fs) if f in idxs]
            keep = [k for k in range(len(fs)) if k not in red]
            moved = np.transpose(arr, red + keep)
            kept_shape = moved.shape[len(red):]
            flat = moved.reshape((-1, *kept_shape))
            acc = np.full(kept_shape, init.val, dtype=dt)
            for t in range(flat.shape[0]):
                acc = np.asarray(op.val.apply(acc, flat[t]), dtype=dt)
            out = (acc.reshape(kept_shape), tuple(fs[k] for k in keep))
        case Reformat(arg=arg):
            out = _eval(arg, env, memo)
        case Immediate(val=v):
            out = (np.asarray(v), ())
        case _:
            raise TypeError(f"shim cannot evaluate {node!r}")
    memo[key] = out
    return out


def interpret_dense(plan: Plan) -> tuple[np.ndarray, ...]:
    """Results of ``plan`` as dense NumPy arrays, in ``Produces`` order."""
    env: dict[Alias, Val] = {}
    memo: dict[int, Val] = {}
    for body in plan.bodies:
        if isinstance(body, Query):
            env[body.lhs] = _eval(body.rhs, env, memo)
        elif isinstance(body, Produces):
            return tuple(env[a][0] for a in body.args)  # type: ignore[index]
    raise ValueError("plan has no Produces")
