"""Golden tests of the structure rule (``optimizer.structure``, issue 16): plan in, plan
out. A map of structured operands (DIA, BSR, ELL, run-length) that stays sparse keeps their
layout; a reduction, a transpose, a mix with csr, or a run-length operand times a row that
varies along its runs gets the usual csr choice."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sps

from lazysparse.formats import Tensor, format_spec
from lazysparse.formats.conversion.convert import convert
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

A, B, C, X = Alias("A"), Alias("B"), Alias("C"), Alias("X")
i, j = Field("i"), Field("j")
ADD = Immediate(get_operator("add"))
MUL = Immediate(get_operator("multiply"))
TWO = Immediate(np.float64(2.0))
ZERO = Immediate(np.float64(0.0))
BIG = sparse(2000, 2000, 0.0005, 0)
DIA = Tensor.from_scipy(sps.diags([1.0, 2.0, 3.0], [-1, 0, 4], shape=(2000, 2000),
                                  format="dia"))
RLE = convert(BIG, "rle")


def _plan(rhs: object, **tensors: object) -> Plan:
    qs = [Query(Alias(n), Table(Immediate(t), (i, j))) for n, t in tensors.items()]
    return Plan((*qs, Query(C, rhs), Produces((C,))))  # type: ignore[arg-type]


def _chosen(rhs: object, **tensors: object) -> object:
    out = choose_formats(_plan(rhs, **tensors))
    body = out.bodies[-2]
    assert body == Query(C, Reformat(body.rhs.tns, rhs))  # type: ignore[attr-defined]
    return body.rhs.tns.val  # type: ignore[attr-defined]


def test_scaling_a_dia_keeps_dia() -> None:
    rhs = Reorder(MapJoin(MUL, (Relabel(A, (i, j)), TWO)), (i, j))
    assert _chosen(rhs, A=DIA) == format_spec("dia", 2)


def test_adding_two_dias_keeps_dia() -> None:
    rhs = Reorder(MapJoin(ADD, (Relabel(A, (i, j)), Relabel(B, (i, j)))), (i, j))
    assert _chosen(rhs, A=DIA, B=DIA) == format_spec("dia", 2)


def test_dia_plus_csr_is_csr() -> None:
    rhs = Reorder(MapJoin(ADD, (Relabel(A, (i, j)), Relabel(B, (i, j)))), (i, j))
    assert _chosen(rhs, A=DIA, B=BIG) == format_spec("csr", 2)


def test_transposed_dia_is_not_dia() -> None:
    rhs = Reorder(MapJoin(MUL, (Relabel(A, (j, i)), TWO)), (i, j))
    assert _chosen(rhs, A=DIA).level_kinds[-1] != "banded"  # type: ignore[attr-defined]


def test_reduction_gets_the_usual_choice() -> None:
    rhs = Aggregate(ADD, ZERO, Reorder(Relabel(A, (i, j)), (i, j)), (j,))
    assert _chosen(rhs, A=DIA).level_kinds == ("dense",)  # type: ignore[attr-defined]


def test_run_length_scaled_keeps_runs_but_not_times_a_row() -> None:
    rhs = Reorder(MapJoin(MUL, (Relabel(A, (i, j)), TWO)), (i, j))
    assert _chosen(rhs, A=RLE) == format_spec("rle", 2)
    rhs = Reorder(MapJoin(MUL, (Relabel(A, (i, j)), Relabel(X, (i, j)))), (i, j))
    assert _chosen(rhs, A=RLE, X=convert(sparse(2000, 2000, 1.0, 2), "dense")) \
        == format_spec("csr", 2)
