"""Small plan-building helpers for the logic tests."""

from __future__ import annotations

from typing import Any

import numpy as np

from lazysparse.formats import Tensor, format_spec
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

i, j, k, m = Field("i"), Field("j"), Field("k"), Field("m")


def op(name: str) -> Immediate:
    return Immediate(get_operator(name))


def table(a: Any, *idxs: Field, fmt: str = "dense", fill: Any = 0) -> Table:
    t = a if isinstance(a, Tensor) else Tensor.from_numpy(np.asarray(a), fmt, fill)
    return Table(Immediate(t), tuple(idxs))


def mapjoin(name: str, *args: Any) -> MapJoin:
    return MapJoin(op(name), tuple(a if hasattr(a, "children") else Immediate(a) for a in args))


def aggregate(name: str, init: Any, arg: Any, *idxs: Field) -> Aggregate:
    return Aggregate(op(name), Immediate(init), arg, tuple(idxs))


def query_plan(*exprs: Any) -> Plan:
    """plan(query(R0, e0), ..., produces(R0, ...))."""
    outs = tuple(Alias(f"R{n}") for n in range(len(exprs)))
    return Plan((*(Query(a, e) for a, e in zip(outs, exprs, strict=True)), Produces(outs)))


def matmul_normal_form(A: Tensor, B: Tensor, loop: tuple[Field, ...] = (i, j, k),
                       out: str = "dense") -> Plan:
    """The normal-form plan of A @ B with a given loop order."""
    a, b, c = Alias("A"), Alias("B"), Alias("C")
    body = Reorder(MapJoin(op("multiply"), (Relabel(a, (i, j)), Relabel(b, (j, k)))), loop)
    agg = Aggregate(op("add"), Immediate(np.float64(0)), body, (j,))
    res_axes = tuple(f for f in loop if f != j)
    mode = tuple(res_axes.index(f) for f in (i, k)) if out != "csr" else None
    spec = format_spec(out, 2, mode) if out not in ("csr", "csc") else format_spec(out, 2)
    return Plan((Query(a, Table(Immediate(A), (i, j))), Query(b, Table(Immediate(B), (j, k))),
                 Query(c, Reformat(Immediate(spec), agg)), Produces((c,))))


__all__ = ["Relabel", "Reorder", "Reformat", "Alias", "Immediate", "Query", "Plan"]
