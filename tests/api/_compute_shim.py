"""TEST-ONLY SHIM for the api-compute tests: a small dense NumPy interpreter of Finch-Logic
plans, used (as the executor ``api-compute-shim``) only while ``lazysparse.logic.interpret``
does not exist. Unlike tests/api/_shim_interpreter.py it keeps 0-d results 0-d, reduces
empty axes, and sizes a Field used as a value from every field seen so far (fields are
globally unique)."""

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

Value = tuple[np.ndarray, tuple[Field, ...]]


def _align(arr: np.ndarray, fields: tuple[Field, ...], target: tuple[Field, ...]) -> np.ndarray:
    """``arr`` (axes ``fields``) transposed/expanded to broadcast against ``target``."""
    perm = [fields.index(f) for f in target if f in fields]
    arr = np.transpose(arr, perm) if len(perm) > 1 else arr
    it = iter(arr.shape)
    return arr.reshape([next(it) if f in fields else 1 for f in target])


def _has_data(node: Any) -> bool:
    """Whether ``node`` reads a table or alias (so its evaluation records field sizes)."""
    if isinstance(node, Table | Relabel | Subquery):
        return True
    return any(_has_data(c) for c in getattr(node, "children", ()))


class _Interp:
    def __init__(self) -> None:
        self.env: dict[Alias, Value] = {}
        self.sizes: dict[Field, int] = {}

    def note(self, arr: np.ndarray, fields: tuple[Field, ...]) -> Value:
        for f, d in zip(fields, arr.shape, strict=True):
            if d != 1 or f not in self.sizes:
                self.sizes[f] = d
        return arr, fields

    def eval(self, node: Any) -> Value:
        match node:
            case Table(tns=tns, idxs=idxs):
                return self.note(np.asarray(tns.val.to_numpy()), idxs)
            case Subquery(lhs=lhs, arg=arg):
                if lhs not in self.env:
                    self.env[lhs] = self.eval(arg)
                return self.env[lhs]
            case Relabel(arg=arg, idxs=idxs):
                arr = self.env[arg][0] if isinstance(arg, Alias) else self.eval(arg)[0]
                return self.note(arr, idxs)
            case Reformat(arg=arg):
                return self.eval(arg)
            case Reorder(arg=arg, idxs=idxs):
                arr, fields = self.eval(arg)
                for k in reversed(range(len(fields))):
                    if fields[k] not in idxs:
                        assert arr.shape[k] == 1, (arr.shape, fields, idxs)
                        arr = arr.reshape(arr.shape[:k] + arr.shape[k + 1:])
                kept = tuple(f for f in fields if f in idxs)
                return self.note(_align(arr, kept, idxs), idxs)
            case Immediate(val=v):
                return np.asarray(v), ()
            case Field():
                n = self.sizes[node]
                return np.arange(n, dtype=np.int64), (node,)
            case MapJoin(op=op, args=args):
                # data-carrying arguments first, so Fields used as values know their sizes
                order = sorted(range(len(args)), key=lambda k: not _has_data(args[k]))
                done = {k: self.eval(args[k]) for k in order}
                evs = [done[k] for k in range(len(args))]
                target: list[Field] = []
                for _, fs in evs:
                    target += [f for f in fs if f not in target]
                t = tuple(target)
                arrs = [_align(a, fs, t) if fs else a for a, fs in evs]
                shape = np.broadcast_shapes(*(np.shape(a) for a in arrs))
                out = np.asarray(op.val.apply(*arrs))
                return self.note(np.broadcast_to(out, shape).copy(), t)
            case Aggregate(op=op, init=init, arg=arg, idxs=idxs):
                arr, fields = self.eval(arg)
                axes = [k for k, f in enumerate(fields) if f in idxs]
                rest = tuple(f for f in fields if f not in idxs)
                moved = np.moveaxis(arr, axes, list(range(len(axes))))
                n = int(np.prod([arr.shape[k] for k in axes], dtype=np.int64))
                flat = moved.reshape((n, *moved.shape[len(axes):]))
                out: Any = np.broadcast_to(np.asarray(init.val), flat.shape[1:])
                for row in flat:
                    out = op.val.apply(out, row)
                return self.note(np.asarray(out), rest)
        raise TypeError(f"api-compute shim: cannot evaluate {node!r}")


def compute_shim_interpret(plan: Plan) -> tuple[Tensor, ...]:
    """Run ``plan`` densely; dense tensors with fill 0 as results."""
    it = _Interp()
    out: tuple[Tensor, ...] = ()
    for body in plan.bodies:
        if isinstance(body, Query):
            it.env[body.lhs] = it.eval(body.rhs)
        elif isinstance(body, Produces):
            out = tuple(Tensor.from_numpy(np.asarray(it.env[a][0], order="C"), "dense",
                                          np.asarray(it.env[a][0]).dtype.type(0))
                        for a in body.args)
    return out
