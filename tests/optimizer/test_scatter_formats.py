"""Golden tests of the scatter format rule (``optimizer.scatter``, issue 14): plan in, plan
out. A result whose last level alone receives scattered writes (a reduced loop encloses it)
is stored unordered; so is one whose last field follows a single unordered operand; a merge
of two operands, an explicit format, or a scatter into several levels keep ordered levels."""

from __future__ import annotations

import numpy as np

from lazysparse.formats import FormatSpec, format_spec
from lazysparse.formats.ordering import unordered_as
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
from lazysparse.optimizer.formats import choose_formats
from tests.optimizer.plans import sparse

A, B, C = Alias("A"), Alias("B"), Alias("C")
i, j, k = Field("i"), Field("j"), Field("k")
ADD = Immediate(get_operator("add"))
MUL = Immediate(get_operator("multiply"))
ZERO = Immediate(np.float64(0.0))
BIG = sparse(2000, 2000, 0.0005, 0)  # products stay sparse
BIG2 = sparse(2000, 2000, 0.0005, 1)
UNORDERED = FormatSpec("csr", ("dense", "compressed-unordered"), (0, 1))
CSR = format_spec("csr", 2)


def unordered_view(t: object) -> object:
    """``t`` (csr) relabeled with an unordered last level (no copy)."""
    return unordered_as(t, UNORDERED)  # type: ignore[arg-type]


def _plan(rhs: object, **tensors: object) -> Plan:
    qs = [Query(Alias(n), Table(Immediate(t), (i, j))) for n, t in tensors.items()]
    return Plan((*qs, Query(C, rhs), Produces((C,))))  # type: ignore[arg-type]


def _spec(plan: Plan) -> object:
    return plan.bodies[-2].rhs.tns.val  # type: ignore[attr-defined]


def test_gustavson_product_gets_an_unordered_last_level() -> None:
    prod = Aggregate(ADD, ZERO, Reorder(MapJoin(MUL, (Relabel(A, (i, k)), Relabel(B, (k, j)))),
                                        (i, k, j)), (k,))
    out = choose_formats(_plan(prod, A=BIG, B=BIG2))
    assert out.bodies[-2] == Query(C, Reformat(Immediate(UNORDERED), prod))


def test_inner_products_append_in_order() -> None:
    # loop order i, j, k: the reduced loop is innermost, writes arrive in storage order
    prod = Aggregate(ADD, ZERO, Reorder(MapJoin(MUL, (Relabel(A, (i, k)), Relabel(B, (j, k)))),
                                        (i, j, k)), (k,))
    assert _spec(choose_formats(_plan(prod, A=BIG, B=BIG2))) == CSR


def test_a_map_of_one_unordered_operand_stays_unordered() -> None:
    scaled = Reorder(MapJoin(MUL, (Relabel(A, (i, j)), Immediate(2.0))), (i, j))
    out = choose_formats(_plan(scaled, A=unordered_view(BIG)))
    assert _spec(out) == UNORDERED
    assert _spec(choose_formats(_plan(scaled, A=BIG))) == CSR


def test_a_merge_of_two_operands_is_ordered() -> None:
    both = Reorder(MapJoin(MUL, (Relabel(A, (i, j)), Relabel(B, (i, j)))), (i, j))
    out = choose_formats(_plan(both, A=unordered_view(BIG), B=unordered_view(BIG2)))
    assert _spec(out).level_kinds[-1] == "compressed"


def test_an_explicit_format_is_kept() -> None:
    prod = Reformat(Immediate(CSR), Aggregate(ADD, ZERO, Reorder(MapJoin(MUL, (
        Relabel(A, (i, k)), Relabel(B, (k, j)))), (i, k, j)), (k,)))
    plan = _plan(prod, A=BIG, B=BIG2)
    assert choose_formats(plan) == plan
