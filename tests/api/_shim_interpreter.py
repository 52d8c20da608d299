"""TEST-ONLY SHIM: a tiny dense NumPy interpreter of Finch-Logic plans, used as the
executor by tests/api only while ``lazysparse.logic.interpret`` does not exist yet."""

from __future__ import annotations

from typing import Any

import numpy as np

from lazysparse.formats import Tensor
from lazysparse.logic.nodes import (
    Aggregate,
    Alias,
    Field,
    Immediate,
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


def _align(arr: np.ndarray, fields: tuple, target: tuple) -> np.ndarray:
    perm = [fields.index(f) for f in target if f in fields]
    arr = np.transpose(arr, perm) if perm else arr
    shape = []
    it = iter(arr.shape)
    for f in target:
        shape.append(next(it) if f in fields else 1)
    return arr.reshape(shape)


def _eval(node: Any, env: dict) -> tuple[Any, tuple]:
    match node:
        case Table(tns=tns, idxs=idxs):
            return tns.val.to_numpy(), idxs
        case Subquery(lhs=lhs, arg=arg):
            if lhs not in env:
                env[lhs] = _eval(arg, env)
            return env[lhs]
        case Relabel(arg=Alias() as a, idxs=idxs):
            return env[a][0], idxs
        case Relabel(arg=arg, idxs=idxs):
            return _eval(arg, env)[0], idxs
        case Reformat(arg=arg):
            return _eval(arg, env)
        case Reorder(arg=arg, idxs=idxs):
            arr, fields = _eval(arg, env)
            for k, f in reversed(list(enumerate(fields))):
                if f not in idxs:
                    assert arr.shape[k] == 1, (arr.shape, fields, idxs)
                    arr = arr.reshape(arr.shape[:k] + arr.shape[k + 1:])
            fields = tuple(f for f in fields if f in idxs)
            return _align(arr, fields, idxs), idxs
        case Immediate(val=v):
            return np.asarray(v), ()
        case MapJoin(op=op, args=args):
            evs = [a if isinstance(a, Field) else _eval(a, env) for a in args]
            target: list = []
            for e in evs:
                for f in ((e,) if isinstance(e, Field) else e[1]):
                    if f not in target:
                        target.append(f)
            target_t = tuple(target)
            sizes: dict = {}
            for e in evs:
                if not isinstance(e, Field):
                    for f, d in zip(e[1], np.shape(e[0]), strict=True):
                        if d != 1:
                            sizes[f] = d
            arrs = []
            for e in evs:
                if isinstance(e, Field):
                    r = np.arange(sizes.get(e, 1), dtype=np.int64)
                    arrs.append(_align(r, (e,), target_t))
                else:
                    arrs.append(_align(e[0], e[1], target_t))
            out = np.asarray(op.val.apply(*arrs))
            return np.broadcast_to(out, np.broadcast_shapes(*(a.shape for a in arrs))), target_t
        case Aggregate(op=op, init=init, arg=arg, idxs=idxs):
            arr, fields = _eval(arg, env)
            axes = tuple(k for k, f in enumerate(fields) if f in idxs)
            acc = np.asarray(init.val)
            if not axes:
                return np.asarray(op.val.apply(acc, arr)), fields
            res = np.moveaxis(arr, axes, tuple(range(len(axes)))).reshape(
                (-1,) + tuple(d for k, d in enumerate(arr.shape) if k not in axes))
            out = np.broadcast_to(acc, res.shape[1:])
            for row in res:
                out = op.val.apply(out, row)
            return np.asarray(out), tuple(f for f in fields if f not in idxs)
    raise TypeError(f"shim: cannot evaluate {node!r}")


def shim_interpret(plan: Plan) -> tuple[Tensor, ...]:
    env: dict = {}
    out: tuple = ()
    for body in plan.bodies:
        if isinstance(body, Query):
            env[body.lhs] = _eval(body.rhs, env)
        elif isinstance(body, Produces):
            out = tuple(Tensor.from_numpy(np.array(env[a][0]), "dense",
                                          np.asarray(env[a][0]).dtype.type(0))
                        for a in body.args)
    return out
