"""Plan builders for the optimizer tests, with the api's conventions
(lazysparse.api.array.plan_nodes):
fresh fields, a Subquery per result, size-1 broadcasting through Reorder drops."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from lazysparse.api.array.plan_nodes import (
    broadcast_shapes,
    build_aggregate,
    build_mapjoin,
    fresh_alias,
    fresh_fields,
    identify,
)
from lazysparse.formats import Tensor, format_spec
from lazysparse.logic.nodes import (
    Immediate,
    LogicNode,
    Plan,
    Produces,
    Query,
    Reformat,
    Relabel,
    Reorder,
    Table,
)
from lazysparse.logic.operators import get_operator


@dataclass
class Lz:
    """A lazy expression with its shape (what a LazyArray carries, minus the rest)."""

    expr: LogicNode
    shape: tuple[int, ...]
    requested: Any = None


def leaf(t: Tensor) -> Lz:
    """A stored tensor as a lazy leaf."""
    return Lz(identify(Table(Immediate(t), fresh_fields(t.ndim))), tuple(t.shape))


def sparse(n: int, m: int, density: float, seed: int, fmt: str = "csr") -> Tensor:
    """A random sparse matrix stored in ``fmt``."""
    a = sp.random(n, m, density=density, format="coo", random_state=seed).toarray()
    return Tensor.from_numpy(a, fmt)


def dense(a: np.ndarray) -> Tensor:
    return Tensor.from_numpy(np.asarray(a), "dense")


def ew(name: str, *xs: Lz | Any) -> Lz:
    """Broadcasting elementwise op (scalars become Immediates)."""
    shapes = [x.shape for x in xs if isinstance(x, Lz)]
    out = broadcast_shapes(*shapes)
    operands = [(x.expr, x.shape) if isinstance(x, Lz) else Immediate(x) for x in xs]
    expr, _ = build_mapjoin(get_operator(name), operands, out)
    return Lz(expr, out)


def reduce(name: str, x: Lz, axes: tuple[int, ...], init: Any = None,
           keepdims: bool = False) -> Lz:
    op = get_operator(name)
    if init is None:
        init = op.init_for(np.float64)
    expr = build_aggregate(op, init, x.expr, len(x.shape), axes, keepdims)
    shape = tuple(1 if k in axes else d for k, d in enumerate(x.shape) if keepdims or k not in axes)
    return Lz(expr, shape)


def permute(x: Lz, perm: tuple[int, ...]) -> Lz:
    f = fresh_fields(len(x.shape))
    return Lz(Reorder(Relabel(x.expr, f), tuple(f[p] for p in perm)),
              tuple(x.shape[p] for p in perm))


def expand(x: Lz, axis: int) -> Lz:
    """``x`` with a new size-1 axis at ``axis`` (``x[..., None, ...]``)."""
    f = fresh_fields(len(x.shape))
    new = fresh_fields(1)
    idxs = (*f[:axis], *new, *f[axis:])
    shape = (*x.shape[:axis], 1, *x.shape[axis:])
    return Lz(identify(Reorder(Relabel(x.expr, f), idxs)), shape)


def matmul(a: Lz, b: Lz, mul: str = "multiply", add: str = "add", init: Any = 0.0) -> Lz:
    """2-D (or matrix-vector) product as broadcast ``mul`` + ``add`` reduction."""
    if len(b.shape) == 1:
        return reduce(add, ew(mul, a, expand(b, 0)), (1,), init=init)
    return reduce(add, ew(mul, expand(a, 2), expand(b, 0)), (1,), init=init)


def asformat(x: Lz, fmt: str) -> Lz:
    return Lz(x.expr, x.shape, format_spec(fmt, len(x.shape)))


def plan_of(*xs: Lz) -> Plan:
    """One plan producing ``xs`` (as ``api.chapters.compute.build_plan`` does)."""
    queries: list[LogicNode] = []
    outs = []
    for x in xs:
        out = fresh_alias()
        rhs: LogicNode = Relabel(x.expr, fresh_fields(len(x.shape)))
        if x.requested is not None:
            rhs = Reformat(Immediate(x.requested), rhs)
        queries.append(Query(out, rhs))
        outs.append(out)
    return Plan((*queries, Produces(tuple(outs))))


def oracle(plan: Plan) -> tuple[np.ndarray, ...]:
    """Dense results of ``plan`` by the reference interpreter (``logic.interpret``)."""
    from lazysparse.logic import interpret

    return tuple(np.asarray(t.to_numpy()) for t in interpret(plan))
