"""Golden tests: each optimizer pass on a hand-written plan, compared by equality."""

from __future__ import annotations

import numpy as np
import pytest

from lazysparse.formats import format_spec
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
from lazysparse.logic.operators import get_operator
from lazysparse.optimizer.formats import choose_formats, normal_form
from lazysparse.optimizer.fuse import fuse_aggregates
from lazysparse.optimizer.inline import drop_format_copies, inline_copies, inline_pointwise
from lazysparse.optimizer.lift import (
    isolate_aggregates,
    isolate_reformats,
    isolate_tables,
    lift_subqueries,
)
from lazysparse.optimizer.loop_order import choose_loop_orders, concordize
from lazysparse.optimizer.push_fields import push_fields
from tests.optimizer.plans import dense, sparse

i, j, k, a, b, c, d, z = (Field(n) for n in "ijkabcdz")
A, B, C, D, E, S, U, V, X, Y = (Alias(n) for n in "ABCDESUVXY")
ADD = Immediate(get_operator("add"))
MUL = Immediate(get_operator("multiply"))
ZERO = Immediate(np.float64(0.0))
CSR = sparse(40, 40, 0.05, 0)
CSR2 = sparse(40, 40, 0.05, 1)
DENSE_M = dense(np.ones((40, 4)))
DENSE_M2 = dense(np.ones((40, 4)))
VEC = dense(np.ones(40))


def spec(name: str, ndim: int, mode: tuple[int, ...] | None = None) -> Immediate:
    return Immediate(format_spec(name, ndim, mode))


def inputs(**tensors: object) -> tuple[Query, ...]:
    return tuple(Query(Alias(n), Table(Immediate(t), (i, j)[: t.ndim]))  # type: ignore[attr-defined]
                 for n, t in tensors.items())


# --- lift / isolate -------------------------------------------------------------------------

def test_lift_subqueries_shares_a_subquery_used_twice() -> None:
    t = Immediate(CSR)
    leaf1 = Subquery(A, Table(t, (i, j)))
    leaf2 = Subquery(A, Table(t, (i, j)))  # equal, a different object
    prod = Subquery(B, MapJoin(MUL, (Relabel(leaf1, (a, b)), Relabel(leaf2, (a, b)))))
    plan = Plan((Query(C, Relabel(prod, (c, d))), Produces((C,))))
    assert lift_subqueries(plan) == Plan((
        Query(A, Table(t, (i, j))),
        Query(B, MapJoin(MUL, (Relabel(Relabel(A, (i, j)), (a, b)),
                               Relabel(Relabel(A, (i, j)), (a, b))))),
        Query(C, Relabel(Relabel(B, (a, b)), (c, d))),
        Produces((C,)),
    ))


def test_lift_subqueries_rejects_undefined_alias() -> None:
    with pytest.raises(ValueError, match="no query defines"):
        lift_subqueries(Plan((Produces((A,)),)))


def test_isolate_aggregates() -> None:
    agg = Aggregate(ADD, ZERO, MapJoin(MUL, (Relabel(U, (i, k)), Relabel(V, (j, k)))), (k,))
    plan = Plan((Query(B, MapJoin(MUL, (Relabel(S, (i, j)), agg))), Produces((B,))))
    assert isolate_aggregates(plan) == Plan((
        Query(Alias("Q0"), agg),
        Query(B, MapJoin(MUL, (Relabel(S, (i, j)), Relabel(Alias("Q0"), (i, j))))),
        Produces((B,)),
    ))


def test_isolate_aggregates_keeps_a_root_aggregate() -> None:
    plan = Plan((Query(B, Aggregate(ADD, ZERO, Relabel(S, (i, j)), (j,))), Produces((B,))))
    assert isolate_aggregates(plan) == plan


def test_isolate_reformats() -> None:
    ref = Reformat(spec("csc", 2), Relabel(A, (i, j)))
    plan = Plan((Query(B, MapJoin(MUL, (ref, Relabel(A, (i, j))))), Produces((B,))))
    assert isolate_reformats(plan) == Plan((
        Query(Alias("Q0"), ref),
        Query(B, MapJoin(MUL, (Relabel(Alias("Q0"), (i, j)), Relabel(A, (i, j))))),
        Produces((B,)),
    ))


def test_isolate_tables_one_query_per_tensor() -> None:
    t = Immediate(CSR)
    plan = Plan((Query(B, MapJoin(MUL, (Table(t, (i, j)), Table(t, (j, i))))), Produces((B,))))
    assert isolate_tables(plan) == Plan((
        Query(Alias("Q0"), Table(t, (i, j))),
        Query(B, MapJoin(MUL, (Relabel(Alias("Q0"), (i, j)), Relabel(Alias("Q0"), (j, i))))),
        Produces((B,)),
    ))


# --- inline ---------------------------------------------------------------------------------

def test_inline_copies_redirects_reads_and_produces() -> None:
    plan = Plan((*inputs(A=CSR), Query(B, Relabel(A, (a, b))),
                 Query(C, MapJoin(MUL, (Relabel(B, (i, j)), Relabel(B, (j, i))))),
                 Produces((B, C))))
    assert inline_copies(plan) == Plan((
        *inputs(A=CSR),
        Query(C, MapJoin(MUL, (Relabel(A, (i, j)), Relabel(A, (j, i))))),
        Produces((A, C)),
    ))


def test_inline_pointwise_fuses_a_map_into_its_consumer() -> None:
    add = MapJoin(ADD, (Relabel(A, (i, j)), Relabel(B, (i, j))))
    plan = Plan((*inputs(A=CSR, B=CSR2), Query(C, add),
                 Query(D, Aggregate(ADD, ZERO, Relabel(C, (a, b)), (b,))), Produces((D,))))
    assert inline_pointwise(plan) == Plan((
        *inputs(A=CSR, B=CSR2),
        Query(D, Aggregate(ADD, ZERO, Relabel(add, (a, b)), (b,))),
        Produces((D,)),
    ))


def test_inline_pointwise_keeps_produced_and_transposes_inline() -> None:
    tr = Reorder(Relabel(A, (i, j)), (j, i))
    plan = Plan((*inputs(A=CSR), Query(B, tr), Query(C, MapJoin(MUL, (Relabel(B, (a, b)),))),
                 Produces((C,))))
    out = inline_pointwise(plan)
    assert out == Plan((*inputs(A=CSR), Query(C, MapJoin(MUL, (Relabel(tr, (a, b)),))),
                        Produces((C,))))
    keep = Plan((*inputs(A=CSR), Query(B, tr), Produces((B,))))
    assert inline_pointwise(keep) == keep


# --- push fields ----------------------------------------------------------------------------

def test_push_fields_resolves_relabels_and_reorders() -> None:
    add = MapJoin(ADD, (Relabel(A, (i, j)), Reorder(Relabel(B, (i, j)), (j, i))))
    rhs = MapJoin(MUL, (Relabel(add, (a, b)), Relabel(E, (a, b))))
    plan = Plan((*inputs(A=CSR, B=CSR2, E=CSR), Query(D, rhs), Produces((D,))))
    body = MapJoin(MUL, (MapJoin(ADD, (Relabel(A, (a, b)), Relabel(B, (a, b)))),
                         Relabel(E, (a, b))))
    assert push_fields(plan) == Plan((*inputs(A=CSR, B=CSR2, E=CSR),
                                      Query(D, Reorder(body, (a, b))), Produces((D,))))


def test_push_fields_names_dropped_size1_fields_and_keeps_added_ones() -> None:
    # a Reorder inside a mapjoin only permutes names: B still joins on (i, j)
    # x (n,1) + v (n,) broadcast: the size-1 axis of x gets a fresh field the Reorder drops
    rhs = Reorder(MapJoin(ADD, (Reorder(Relabel(X, (i, z)), (i,)), Relabel(Y, (i,)))), (i, j))
    agg = Aggregate(ADD, ZERO, MapJoin(MUL, (Relabel(A, (i, k)), k)), (k,))
    x1 = dense(np.ones((40, 1)))
    plan = Plan((Query(X, Table(Immediate(x1), (i, j))), *inputs(Y=VEC, A=CSR),
                 Query(D, rhs), Query(E, agg), Produces((D, E))))
    out = push_fields(plan)
    d0 = Field("d0")
    assert out.bodies[3] == Query(D, Reorder(
        MapJoin(ADD, (Relabel(X, (i, d0)), Relabel(Y, (i,)))), (i, j)))
    assert out.bodies[4] == Query(E, Aggregate(ADD, ZERO, Reorder(
        MapJoin(MUL, (Relabel(A, (i, k)), k)), (i, k)), (k,)))


# --- fuse aggregates ------------------------------------------------------------------------

def _sddmm_unfused() -> Plan:
    uv = Aggregate(ADD, ZERO, Reorder(MapJoin(MUL, (Relabel(U, (a, k)), Relabel(V, (b, k)))),
                                      (a, b, k)), (k,))
    return Plan((*inputs(S=CSR, U=DENSE_M, V=DENSE_M2), Query(C, uv),
                 Query(D, Reorder(MapJoin(MUL, (Relabel(S, (i, j)), Relabel(C, (i, j)))),
                                  (i, j))),
                 Produces((D,))))


def test_fuse_pushes_masking_product_into_the_matmul() -> None:
    r0 = Field("r0")
    body = MapJoin(MUL, (Relabel(S, (i, j)), MapJoin(MUL, (Relabel(U, (i, r0)),
                                                          Relabel(V, (j, r0))))))
    assert fuse_aggregates(_sddmm_unfused()) == Plan((
        *inputs(S=CSR, U=DENSE_M, V=DENSE_M2),
        Query(D, Aggregate(ADD, ZERO, Reorder(body, (i, j, r0)), (r0,))),
        Produces((D,)),
    ))


def test_fuse_refuses_a_non_annihilating_op() -> None:
    plan = _sddmm_unfused()
    q = plan.bodies[4]
    add_plan = Plan((*plan.bodies[:4], Query(D, Reorder(MapJoin(ADD, q.rhs.arg.args), (i, j))),
                     plan.bodies[5]))
    assert fuse_aggregates(add_plan) == add_plan


def test_fuse_refuses_an_aggregate_that_is_produced() -> None:
    plan = _sddmm_unfused()
    shared = Plan((*plan.bodies[:5], Produces((D, C))))
    assert fuse_aggregates(shared) == shared


def test_fuse_merges_nested_sums() -> None:
    inner = Aggregate(ADD, ZERO, Reorder(Relabel(A, (a, b)), (a, b)), (b,))
    outer = Aggregate(ADD, ZERO, Reorder(Relabel(C, (i,)), (i,)), (i,))
    plan = Plan((*inputs(A=CSR), Query(C, inner), Query(D, outer), Produces((D,))))
    r0 = Field("r0")
    assert fuse_aggregates(plan) == Plan((
        *inputs(A=CSR),
        Query(D, Aggregate(ADD, ZERO, Reorder(Relabel(A, (i, r0)), (i, r0)), (i, r0))),
        Produces((D,)),
    ))


def test_fuse_turns_empty_aggregate_into_mapjoin() -> None:
    plan = Plan((*inputs(A=CSR), Query(D, Aggregate(ADD, ZERO, Reorder(Relabel(A, (i, j)),
                                                                       (i, j)), ())),
                 Produces((D,))))
    assert fuse_aggregates(plan).bodies[1] == Query(
        D, Reorder(MapJoin(ADD, (ZERO, Relabel(A, (i, j)))), (i, j)))


# --- loop order and concordize ------------------------------------------------------------

def _matmul(left: Relabel, right: Relabel, out: tuple[Field, ...]) -> Aggregate:
    return Aggregate(ADD, ZERO, Reorder(MapJoin(MUL, (left, right)), (*out, k)), (k,))


def test_loop_order_gustavson_for_csr_matmul() -> None:
    plan = Plan((*inputs(A=CSR, B=CSR2), Query(C, _matmul(Relabel(A, (i, k)), Relabel(B, (k, j)),
                                                          (i, j))), Produces((C,))))
    out = choose_loop_orders(plan)
    assert out.bodies[2] == Query(C, Aggregate(ADD, ZERO, Reorder(
        MapJoin(MUL, (Relabel(A, (i, k)), Relabel(B, (k, j)))), (i, k, j)), (k,)))


def test_loop_order_transposed_matvec_follows_storage() -> None:
    plan = Plan((*inputs(A=CSR, X=VEC),
                 Query(C, Aggregate(ADD, ZERO, Reorder(MapJoin(MUL, (Relabel(A, (k, j)),
                                                                     Relabel(X, (k,)))),
                                                       (j, k)), (k,))), Produces((C,))))
    out = choose_loop_orders(plan)
    assert out.bodies[2].rhs.arg.idxs == (k, j)


def test_loop_order_sddmm_iterates_the_mask() -> None:
    body = MapJoin(MUL, (Relabel(S, (i, j)), MapJoin(MUL, (Relabel(U, (i, k)),
                                                          Relabel(V, (j, k))))))
    plan = Plan((*inputs(S=CSR, U=DENSE_M, V=DENSE_M2),
                 Query(D, Aggregate(ADD, ZERO, Reorder(body, (i, j, k)), (k,))),
                 Produces((D,))))
    assert choose_loop_orders(plan).bodies[3].rhs.arg.idxs == (i, j, k)


def test_loop_order_relabels_consumers_to_physical_axes() -> None:
    # C = A.T @ B.T is not produced: computed j,k,i; its reader sees axes (j, i)
    mm = _matmul(Relabel(A, (k, i)), Relabel(B, (j, k)), (i, j))
    rd = Reorder(MapJoin(MUL, (Relabel(C, (a, b)), Immediate(2.0))), (a, b))
    plan = Plan((*inputs(A=CSR, B=CSR2), Query(C, mm), Query(D, rd), Produces((D,))))
    out = choose_loop_orders(plan)
    assert out.bodies[2].rhs.arg.idxs == (j, k, i)
    assert out.bodies[3].rhs == Reorder(MapJoin(MUL, (Relabel(C, (b, a)), Immediate(2.0))),
                                        (a, b))


def test_loop_order_produced_result_keeps_logical_axes() -> None:
    mm = _matmul(Relabel(A, (k, i)), Relabel(B, (j, k)), (i, j))
    plan = Plan((*inputs(A=CSR, B=CSR2), Query(C, mm), Produces((C,))))
    order = choose_loop_orders(plan).bodies[2].rhs.arg.idxs
    assert order.index(i) < order.index(j)


def test_loop_order_reduces_dropped_size1_fields_with_overwrite() -> None:
    x1 = dense(np.ones((40, 1)))
    d0 = Field("d0")
    rhs = Reorder(MapJoin(ADD, (Relabel(X, (i, d0)), Relabel(Y, (i,)))), (i,))
    plan = Plan((Query(X, Table(Immediate(x1), (i, j))), *inputs(Y=VEC), Query(D, rhs),
                 Produces((D,))))
    q = choose_loop_orders(plan).bodies[2]
    assert isinstance(q.rhs, Aggregate)
    assert q.rhs.op == Immediate(get_operator("overwrite")) and q.rhs.idxs == (d0,)
    assert q.rhs.arg.idxs == (i, d0)


def test_concordize_inserts_one_deduplicated_transpose() -> None:
    body = MapJoin(MUL, (Relabel(A, (j, i)), Relabel(A, (j, i))))
    plan = Plan((*inputs(A=CSR), Query(D, Reorder(body, (i, j))),
                 Query(E, Reorder(MapJoin(MUL, (Relabel(A, (j, i)), Immediate(2.0))), (i, j))),
                 Produces((D, E))))
    out = concordize(plan)
    t0, t1, T0 = Field("t0"), Field("t1"), Alias("T0")
    assert out == Plan((
        *inputs(A=CSR),
        Query(T0, Reformat(spec("csc", 2), Reorder(Relabel(A, (t0, t1)), (t0, t1)))),
        Query(D, Reorder(MapJoin(MUL, (Relabel(T0, (j, i)), Relabel(T0, (j, i)))), (i, j))),
        Query(E, Reorder(MapJoin(MUL, (Relabel(T0, (j, i)), Immediate(2.0))), (i, j))),
        Produces((D, E)),
    ))


def test_concordize_leaves_concordant_coo_alone() -> None:
    coo = sparse(40, 40, 0.05, 3, "coo")
    plan = Plan((*inputs(A=coo), Query(D, Reorder(MapJoin(MUL, (Relabel(A, (i, j)),
                                                               Immediate(2.0))), (i, j))),
                 Produces((D,))))
    assert concordize(plan) == plan


# --- formats and normal form --------------------------------------------------------------

def test_formats_annihilating_product_is_sparse_union_with_constant_is_dense() -> None:
    prod = Reorder(MapJoin(MUL, (Relabel(A, (i, j)), Relabel(B, (i, j)))), (i, j))
    plus1 = Reorder(MapJoin(ADD, (Relabel(A, (i, j)), Immediate(1.0))), (i, j))
    union = Reorder(MapJoin(ADD, (Relabel(A, (i, j)), Relabel(B, (i, j)))), (i, j))
    plan = Plan((*inputs(A=CSR, B=CSR2), Query(C, prod), Query(D, plus1), Query(E, union),
                 Produces((C, D, E))))
    out = choose_formats(plan)
    # the product's rows are mostly empty (5% x 5%): compressed rows (DCSR)
    assert out.bodies[2] == Query(C, Reformat(spec("dcsr", 2), prod))
    assert out.bodies[3] == Query(D, Reformat(spec("dense", 2), plus1))
    assert out.bodies[4] == Query(E, Reformat(spec("csr", 2), union))


def test_formats_aggregate_keeps_sparse_level_iff_init_absorbs_fill() -> None:
    rowsum = Aggregate(ADD, ZERO, Reorder(Relabel(A, (i, j)), (i, j)), (j,))
    rowmax = Aggregate(Immediate(get_operator("maximum")), Immediate(np.float64(-np.inf)),
                       Reorder(Relabel(A, (i, j)), (i, j)), (j,))
    big = sparse(2000, 2000, 0.00005, 4)
    plan = Plan((*inputs(A=big), Query(C, rowsum), Query(D, rowmax), Produces((C, D))))
    out = choose_formats(plan)
    assert out.bodies[1].rhs.tns == spec("csf", 1)   # sum: 0 + 0 == 0, rows stay sparse
    assert out.bodies[2].rhs.tns == spec("dense", 1)  # max from -inf: max(-inf, 0) != -inf


def test_formats_keep_existing_reformat() -> None:
    rhs = Reformat(spec("csc", 2), Reorder(Relabel(A, (i, j)), (i, j)))
    plan = Plan((*inputs(A=CSR), Query(C, rhs), Produces((C,))))
    assert choose_formats(plan) == plan


def test_normal_form_drops_dead_queries_and_renames() -> None:
    live = Reformat(spec("dense", 2), Reorder(MapJoin(ADD, (Relabel(S, (a, b)),
                                                            Immediate(1.0))), (a, b)))
    dead = Reformat(spec("dense", 2), Reorder(Relabel(S, (a, b)), (a, b)))
    plan = Plan((*inputs(S=CSR), Query(C, dead), Query(D, live), Produces((D,))))
    i0, i1, A0, A1 = Field("i0"), Field("i1"), Alias("A0"), Alias("A1")
    assert normal_form(plan) == Plan((
        Query(A0, Table(Immediate(CSR), (i0, i1))),
        Query(A1, Reformat(spec("dense", 2), Reorder(MapJoin(ADD, (Relabel(A0, (i0, i1)),
                                                                   Immediate(1.0))), (i0, i1)))),
        Produces((A1,)),
    ))



def test_inline_copies_drops_asformat_to_the_stored_format() -> None:
    plan = Plan((*inputs(A=CSR), Query(B, Reformat(spec("csr", 2), Relabel(A, (a, b)))),
                 Query(C, Reformat(spec("csc", 2), Relabel(A, (a, b)))), Produces((B, C))))
    assert inline_copies(plan) == Plan((
        *inputs(A=CSR), Query(C, Reformat(spec("csc", 2), Relabel(A, (a, b)))),
        Produces((A, C))))


def test_inline_pointwise_materializes_a_large_shared_map() -> None:
    big = Relabel(A, (i, j))
    for _ in range(7):
        big = MapJoin(ADD, (big, Immediate(1.0)))
    plan = Plan((*inputs(A=CSR), Query(B, big),
                 Query(C, MapJoin(MUL, (Relabel(B, (a, b)), Relabel(B, (a, b))))),
                 Produces((C,))))
    assert inline_pointwise(plan) == plan  # read twice and 15 nodes: computed once
    small = Plan((*inputs(A=CSR), Query(B, MapJoin(ADD, (Relabel(A, (i, j)), Immediate(1.0)))),
                  Query(C, MapJoin(MUL, (Relabel(B, (a, b)), Relabel(B, (a, b))))),
                  Produces((C,))))
    assert len(inline_pointwise(small).bodies) == 3


def test_discordant_inputs_transpose_the_smaller_one() -> None:
    # C is not produced, so its loop order is free; one input must be copied either way
    big, small = sparse(40, 40, 0.5, 20), sparse(40, 40, 0.02, 21)
    body = MapJoin(MUL, (Relabel(A, (i, j)), Relabel(B, (j, i))))
    total = Aggregate(ADD, ZERO, Reorder(Relabel(C, (a, b)), (a, b)), (a, b))
    rest = (Query(C, Reorder(body, (i, j))), Query(D, total), Produces((D,)))

    def copied(plan: Plan) -> Alias:
        out = concordize(choose_loop_orders(plan))
        (copy,) = [q for q in out.bodies if isinstance(q, Query) and q.lhs.name.startswith("T")]
        return copy.rhs.arg.arg.arg

    assert copied(Plan((*inputs(A=big, B=small), *rest))) == B
    assert copied(Plan((*inputs(A=small, B=big), *rest))) == A


def test_drop_format_copies_removes_a_second_copy_in_the_same_format() -> None:
    dvec = spec("dense", 1)
    summed = Reformat(dvec, Aggregate(ADD, ZERO, Relabel(A, (i, j)), (j,)))
    copy = Reformat(dvec, Reorder(Reorder(Relabel(B, (k,)), (k,)), (k,)))
    other = Reformat(dvec, Reorder(MapJoin(MUL, (Relabel(B, (k,)), Relabel(C, (k,)))), (k,)))
    plan = Plan((*inputs(A=CSR), Query(B, summed), Query(C, copy), Query(D, other),
                 Produces((C, D))))
    assert drop_format_copies(plan) == Plan((
        *inputs(A=CSR), Query(B, summed),
        Query(D, Reformat(dvec, Reorder(MapJoin(MUL, (Relabel(B, (k,)), Relabel(B, (k,)))),
                                        (k,)))),
        Produces((B, D))))


def test_drop_format_copies_keeps_copies_that_change_format_or_order() -> None:
    to_csc = Query(C, Reformat(spec("csc", 2), Relabel(B, (i, j))))
    transposed = Query(D, Reformat(spec("csr", 2), Reorder(Relabel(B, (i, j)), (j, i))))
    plan = Plan((*inputs(A=CSR), Query(B, Reformat(spec("csr", 2), Relabel(A, (i, j)))),
                 to_csc, transposed, Produces((C, D))))
    assert drop_format_copies(plan) == plan
