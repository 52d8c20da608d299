"""The normal-form checker accepts the grammar of docs/architecture.md and nothing else."""

from __future__ import annotations

import numpy as np
import pytest

from lazysparse.formats import Tensor, format_spec
from lazysparse.logic import NormalFormError, check_normal_form, interpret, is_normal_form
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
from tests.logic.plans import i, j, k, mapjoin, matmul_normal_form, op

CSR = Tensor.from_numpy(np.eye(4) * 2, "csr")
CSC = Tensor.from_numpy(np.eye(4) * 3, "csc")
DENSE = Tensor.from_numpy(np.ones((4, 4)), "dense")
a, b, c = Alias("A"), Alias("B"), Alias("C")


def _plan(rhs, A=CSR, B=DENSE) -> Plan:  # noqa: ANN001, N803
    return Plan((Query(a, Table(Immediate(A), (i, j))), Query(b, Table(Immediate(B), (j, k))),
                 Query(c, rhs), Produces((c,))))


def _spec(n: int = 2, name: str = "dense") -> Immediate:
    return Immediate(format_spec(name, n))


def test_accepts_matmul_in_concordant_orders() -> None:
    for A, loop in ((CSR, (i, j, k)), (CSC, (j, i, k)), (DENSE, (i, j, k))):
        p = matmul_normal_form(A, DENSE, loop)
        check_normal_form(p)
        assert is_normal_form(p)
        np.testing.assert_allclose(interpret(p)[0].to_numpy(), A.to_numpy() @ np.ones((4, 4)))


def test_accepts_pointwise_scalars_fields_and_chained_queries() -> None:
    body = Reorder(MapJoin(op("where"), (mapjoin("greater", Relabel(a, (i, j)), 1.0),
                                         Field("j"), Immediate(-1))), (i, j))
    p = Plan((Query(a, Table(Immediate(CSR), (i, j))),
              Query(b, Reformat(_spec(), body)),
              Query(c, Reformat(_spec(1), Aggregate(op("maximum"), Immediate(-1),
                                                    Reorder(Relabel(b, (i, j)), (i, j)), (j,)))),
              Produces((c, b))))
    check_normal_form(p)


@pytest.mark.parametrize(("rhs", "rule"), [
    # body not wrapped in reorder
    (Reformat(_spec(), MapJoin(op("add"), (Relabel(a, (i, j)), Immediate(1.0)))), "LOOP"),
    # no reformat
    (Reorder(Relabel(a, (i, j)), (i, j)), "COMPUTE_QUERY"),
    # relabel of a non-alias
    (Reformat(_spec(), Reorder(Relabel(MapJoin(op("negative"), (Relabel(a, (i, j)),)),
                                       (i, j)), (i, j))), "ACCESS"),
    # field missing from the loop order
    (Reformat(_spec(1), Reorder(Relabel(a, (i, j)), (i,))), "LOOP"),
    # nested aggregate inside pointwise
    (Reformat(_spec(1), Reorder(MapJoin(op("add"), (
        Aggregate(op("add"), Immediate(0.0), Relabel(a, (i, j)), (j,)), Immediate(1.0))),
        (i, j))), "POINTWISE"),
    # reduced field not in the loop
    (Reformat(_spec(2), Aggregate(op("add"), Immediate(0.0), Reorder(Relabel(a, (i, j)), (i, j)),
                                  (k,))), "MAPREDUCE"),
    # format rank does not match the result
    (Reformat(_spec(2), Aggregate(op("add"), Immediate(0.0), Reorder(Relabel(a, (i, j)), (i, j)),
                                  (j,))), "2 levels but the result has 1 axes"),
    # wrong arity
    (Reformat(_spec(), Reorder(MapJoin(op("add"), (Relabel(a, (i, j)),)), (i, j))),
     "add takes 2 args"),
    # tensor in pointwise position
    (Reformat(_spec(), Reorder(MapJoin(op("add"), (Relabel(a, (i, j)), Immediate(CSR))),
                               (i, j))), "must be a scalar"),
])
def test_rejects_with_the_rule_named(rhs, rule: str) -> None:  # noqa: ANN001
    with pytest.raises(NormalFormError, match=rule):
        check_normal_form(_plan(rhs))
    assert not is_normal_form(_plan(rhs))


def test_rejects_discordant_access() -> None:
    # CSC's storage order is (j, i): looping i outside j is discordant
    p = matmul_normal_form(CSC, DENSE, (i, j, k))
    with pytest.raises(NormalFormError, match="concordance"):
        check_normal_form(p)
    check_normal_form(matmul_normal_form(CSC, DENSE, (j, i, k)))


def test_rejects_plan_shape_errors() -> None:
    good = matmul_normal_form(CSR, DENSE)
    with pytest.raises(NormalFormError, match="last statement"):
        check_normal_form(Plan(good.bodies[:-1]))
    neg = Query(c, Reformat(_spec(), Reorder(mapjoin("negative", Relabel(a, (i, j))), (i, j))))
    with pytest.raises(NormalFormError, match="before compute"):
        check_normal_form(Plan((good.bodies[0], neg, good.bodies[1], Produces((c,)))))
    with pytest.raises(NormalFormError, match="discordant|concordance"):
        check_normal_form(matmul_normal_form(CSR, DENSE, (i, k, j)))
    with pytest.raises(NormalFormError, match="not defined"):
        check_normal_form(Plan((good.bodies[0], good.bodies[2], good.bodies[3])))
    with pytest.raises(NormalFormError, match="produces"):
        check_normal_form(Plan((*good.bodies[:-1], Produces((Alias("Z"),)))))
    with pytest.raises(NormalFormError, match="defined twice"):
        check_normal_form(Plan((good.bodies[0], good.bodies[0], good.bodies[3])))
    with pytest.raises(NormalFormError, match="expected a Plan"):
        check_normal_form(good.bodies[0])
    assert issubclass(NormalFormError, ValueError)


# --- EPILOGUE: a map of the aggregate's value, its operands indexed by result axes ----------

VEC = Tensor.from_numpy(np.arange(1.0, 5.0), "dense")
SPVEC = Tensor.from_numpy(np.array([0.0, 2.0, 0.0, 1.0]), "coo")


def _row_sums() -> Aggregate:
    return Aggregate(op("add"), Immediate(0.0), Reorder(Relabel(a, (i, j)), (i, j)), (j,))


def _epilogue_plan(body, vec=VEC) -> Plan:  # noqa: ANN001
    return Plan((Query(a, Table(Immediate(CSR), (i, j))), Query(b, Table(Immediate(vec), (i,))),
                 Query(c, Reformat(_spec(1), body)), Produces((c,))))


def test_epilogue_of_an_aggregate_is_accepted_and_interpreted() -> None:
    body = mapjoin("add", mapjoin("multiply", Immediate(0.5), _row_sums()), Relabel(b, (i,)))
    p = _epilogue_plan(body)
    check_normal_form(p)
    (r,) = interpret(p)
    np.testing.assert_allclose(r.to_numpy(), 0.5 * (np.eye(4) * 2).sum(axis=1)
                               + np.arange(1.0, 5.0))


def test_epilogue_result_axes_are_the_aggregates_in_loop_order() -> None:
    """The map's operands may list the axes in another order; the result keeps the loop's."""
    t = Tensor.from_numpy(np.arange(12.0).reshape(4, 3), "dense", mode_order=(1, 0))
    x = Field("x")
    inner = Aggregate(op("add"), Immediate(0.0),
                      Reorder(Relabel(a, (i, j, x)), (i, j, x)), (x,))
    body = mapjoin("add", Relabel(b, (j, i)), inner)  # b's axes are (j, i), stored i first
    p = Plan((Query(a, Table(Immediate(Tensor.from_numpy(np.ones((3, 4, 2)), "dense")),
                             (i, j, x))),
              Query(b, Table(Immediate(t), (j, i))),
              Query(c, Reformat(_spec(2), body)), Produces((c,))))
    check_normal_form(p)
    (r,) = interpret(p)
    np.testing.assert_allclose(r.to_numpy(), 2.0 + np.arange(12.0).reshape(4, 3).T)


@pytest.mark.parametrize("bad, rule", [
    (lambda: mapjoin("add", _row_sums(), _row_sums()), "exactly one aggregate"),
    (lambda: mapjoin("add", _row_sums(), Relabel(b, (j,))), "not in the loop order"),
    (lambda: mapjoin("add", _row_sums(), Relabel(a, (i, j))), "not in the loop order"),
    (lambda: mapjoin("add", _row_sums()), "takes 2 args"),
])
def test_malformed_epilogues_are_rejected(bad, rule) -> None:  # noqa: ANN001
    with pytest.raises(NormalFormError, match=rule):
        check_normal_form(_epilogue_plan(bad()))


def test_epilogue_operand_stored_sparse_is_rejected() -> None:
    body = mapjoin("add", _row_sums(), Relabel(b, (i,)))
    with pytest.raises(NormalFormError, match="not stored dense"):
        check_normal_form(_epilogue_plan(body, SPVEC))
