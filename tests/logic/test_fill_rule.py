"""The fill rule (docs/api.md): a dense operand has no implicit region, so its nominal fill
decides nothing; an implicit fill that annihilates an op at its position decides the value
wherever another operand holds data. Golden cases of ``operators.mapjoin_region`` and the
reference interpreter's implicit masks."""

from __future__ import annotations

import numpy as np
import pytest

from lazysparse.formats import Tensor
from lazysparse.logic.inference import infer_region
from lazysparse.logic.interpreter import evaluate
from lazysparse.logic.nodes import Field, Immediate, MapJoin, Table
from lazysparse.logic.operators import get_operator, mapjoin_region

F64 = np.float64
i, j = Field("i"), Field("j")


@pytest.mark.parametrize(("op", "fills", "full", "want_fill", "want_full"), [
    # no dense operand: op(fills), IEEE
    ("multiply", (F64(0), F64(np.inf)), (False, False), np.nan, False),
    ("divide", (F64(0), F64(0)), (False, False), np.nan, False),
    ("add", (F64(0), 1.0), (False, False), 1.0, False),
    # a sparse numerator / factor annihilates a dense operand: its pattern, fill 0
    ("multiply", (F64(0), F64(np.inf)), (False, True), 0.0, False),
    ("multiply", (F64(np.nan), F64(0)), (True, False), 0.0, False),
    ("divide", (F64(0), F64(0)), (False, True), 0.0, False),
    ("floor_divide", (F64(0), F64(0)), (False, True), 0.0, False),
    # a 0 divisor does not annihilate: the result is dense, nominal fill 0
    ("divide", (F64(0), F64(0)), (True, False), 0.0, True),
    ("add", (F64(0), F64(5)), (False, True), 0.0, True),
    ("maximum", (F64(0), F64(-1)), (False, True), 0.0, True),
    ("logical_and", (np.False_, np.True_), (False, True), False, False),
])
def test_mapjoin_region(op: str, fills: tuple, full: tuple, want_fill: float,
                        want_full: bool) -> None:
    fill, is_full = mapjoin_region(get_operator(op), fills, full)
    assert is_full == want_full
    np.testing.assert_equal(np.asarray(fill), np.asarray(want_fill, dtype=np.asarray(fill).dtype))


def test_where_selects_a_sparse_branch() -> None:
    where = get_operator("where")
    fill, full = mapjoin_region(where, (np.False_, F64(7), 0.0), (False, True, False))
    assert (fill, full) == (0.0, False)
    _, full = mapjoin_region(where, (np.False_, 0.0, F64(7)), (False, False, True))
    assert full  # the mask selects the dense branch where it is absent


def test_divide_annihilates_only_its_numerator() -> None:
    div = get_operator("divide")
    assert div.annihilator_at(0, np.dtype(F64)) == 0
    assert div.annihilator_at(1, np.dtype(F64)) is None
    mul = get_operator("multiply")
    assert mul.annihilator_at(1, np.dtype(F64)) == 0


def _csr(dense: np.ndarray) -> Tensor:
    return Tensor.from_numpy(dense, "csr", dense.dtype.type(0))


def test_interpreter_sparse_over_dense_with_zero_divisors() -> None:
    s = np.array([[1.0, 0.0], [0.0, 0.0]])
    d = np.array([[0.0, 0.0], [np.nan, np.inf]])
    expr = MapJoin(Immediate(get_operator("divide")),
                   (Table(Immediate(_csr(s)), (i, j)),
                    Table(Immediate(Tensor.from_numpy(d, "dense", F64(0))), (i, j))))
    v = evaluate(expr)
    np.testing.assert_array_equal(v.data, [[np.inf, 0.0], [0.0, 0.0]])
    assert v.fill == 0 and v.implicit.tolist() == [[False, True], [True, True]]


def test_interpreter_all_implicit_is_ieee() -> None:
    a = Tensor.from_numpy(np.array([2.0, 0.0]), "coo", F64(0))
    b = Tensor.from_numpy(np.array([np.inf, np.inf]), "coo", F64(np.inf))
    expr = MapJoin(Immediate(get_operator("multiply")),
                   (Table(Immediate(a), (i,)), Table(Immediate(b), (i,))))
    v = evaluate(expr)
    # position 1: both implicit, 0 * inf is NaN (the fill); position 0: 2 * inf stored
    np.testing.assert_array_equal(v.data, [np.inf, np.nan])
    assert np.isnan(v.fill)


def test_infer_region_follows_the_rule() -> None:
    s = Table(Immediate(_csr(np.eye(2))), (i, j))
    d = Table(Immediate(Tensor.from_numpy(np.ones((2, 2)), "dense", F64(0))), (i, j))
    inv = MapJoin(Immediate(get_operator("divide")), (Immediate(1.0), d))
    prod = MapJoin(Immediate(get_operator("multiply")), (s, inv))
    assert infer_region(inv, lambda n: None) == (0.0, True)
    fill, full = infer_region(prod, lambda n: None)
    assert (fill, full) == (0.0, False)
    add = MapJoin(Immediate(get_operator("add")), (s, d))
    assert infer_region(add, lambda n: None)[1]
    assert infer_region(MapJoin(Immediate(get_operator("add")), (s, i)), lambda n: None)[1]
