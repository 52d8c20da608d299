"""Builders of normal-form plans for kernel tests (the optimizer is not in the loop)."""

from __future__ import annotations

from typing import Any

import numpy as np

from lazysparse.formats.specs import format_spec
from lazysparse.formats.tensor import Tensor
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
    Table,
)
from lazysparse.logic.operators import get_operator


def F(*names: str) -> tuple[Field, ...]:
    return tuple(Field(n) for n in names)


def acc(name: str, *idx: str) -> Relabel:
    return Relabel(Alias(name), F(*idx))


def mj(op: str, *args: Any) -> MapJoin:
    """MapJoin; more than two arguments of a binary op nest left (normal form is binary)."""
    o = Immediate(get_operator(op))
    node = MapJoin(o, tuple(args[:2]))
    for a in args[2:]:
        node = MapJoin(o, (node, a))
    return node


def agg(op: str, init: Any, arg: Any, *idx: str) -> Aggregate:
    return Aggregate(Immediate(get_operator(op)), Immediate(init), arg, F(*idx))


def compute(name: str, fmt: str, ndim: int, body: Any, mode_order: Any = None) -> Query:
    spec = format_spec(fmt, ndim, mode_order)
    return Query(Alias(name), Reformat(Immediate(spec), body))


def plan(inputs: dict[str, Tensor], *queries: Query, out: str | tuple[str, ...] = "out") -> Plan:
    bodies: list[Any] = []
    for name, t in inputs.items():
        bodies.append(Query(Alias(name), Table(Immediate(t), F(*[f"x{k}" for k in range(t.ndim)]))))
    bodies += list(queries)
    outs = (out,) if isinstance(out, str) else out
    bodies.append(Produces(tuple(Alias(o) for o in outs)))
    return Plan(tuple(bodies))


def tensor(a: np.ndarray, fmt: str = "dense", fill: Any = 0, mode_order: Any = None) -> Tensor:
    return Tensor.from_numpy(a, fmt, fill, mode_order=mode_order)


def dense(t: Tensor) -> np.ndarray:
    return np.asarray(t.to_numpy())


def spmv_plan(A: Tensor, x: Tensor, out_fmt: str = "dense") -> Plan:
    body = agg("add", 0, Reorder(mj("multiply", acc("A", "i", "j"), acc("x", "j")), F("i", "j")),
               "j")
    return plan({"A": A, "x": x}, compute("out", out_fmt, 1, body))
