"""The asymptotic cost model (Ahrens, Kjolstad, Amarasinghe): conjunctive-query containment,
task sets of schedules (Figure 4), sunk costs, the frontier, and its use by
``choose_loop_orders``. Golden counts: the paper's Figure 6 (SpMV 8/4, SpGEMM 96/12)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import lazysparse as xp
from lazysparse.formats import Tensor
from lazysparse.logic.nodes import (
    Aggregate,
    Alias,
    Field,
    Immediate,
    LogicNode,
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
from lazysparse.optimizer import asymptotic, conjunctive
from lazysparse.optimizer.analysis import AliasInfo, tensor_info
from lazysparse.optimizer.asymptotic import (
    LOCATE,
    STEP,
    QueryModel,
    paper_universe,
    schedule_cost,
    task_set,
    undominated,
)
from lazysparse.optimizer.conjunctive import (
    CQ,
    Var,
    cq_contained,
    make_cq,
    minimize,
    simplify_union,
    strictly_contained,
    union_contained,
)
from lazysparse.optimizer.loop_order import (
    MAX_MODEL_CANDIDATES,
    choose_loop_orders,
    loop_order_reports,
)
from tests.optimizer.plans import dense, sparse

i, j, k, l, m = (Field(n) for n in "ijklm")
A, B, C, D, S, X, Y, Z = (Alias(n) for n in "ABCDSXYZ")
ADD = Immediate(get_operator("add"))
MUL = Immediate(get_operator("multiply"))
ZERO = Immediate(np.float64(0.0))
CSR = sparse(30, 30, 0.1, 0)
CSR2 = sparse(30, 30, 0.1, 1)
VEC = dense(np.ones(30))
MAT = dense(np.ones((30, 30)))


def v(f: Field, n: int = 0) -> Var:
    return Var(f, n)


def cq(head: tuple[Field, ...], *clauses: tuple[str, tuple[Var, ...]]) -> CQ:
    return make_cq(head, tuple(clauses))


def infos(**tensors: Tensor) -> dict[Alias, AliasInfo]:
    return {Alias(n): tensor_info(t) for n, t in tensors.items()}


def matmul(left: Relabel, right: Relabel, out: tuple[Field, ...], red: Field
           ) -> tuple[LogicNode, Aggregate]:
    body = MapJoin(MUL, (left, right))
    return body, Aggregate(ADD, ZERO, Reorder(body, (*out, red)), (red,))


def names(order: tuple[Field, ...]) -> str:
    return "".join(f.name for f in order)


# --- conjunctive queries ------------------------------------------------------------------

def test_lazy_tasks_contain_their_projections_but_not_conversely() -> None:
    row = cq((i,), ("B", (v(i), v(j, 1))))  # {[i] | ∃j B(i, j)}: nonempty rows
    entries = cq((i, j), ("B", (v(i), v(j))))  # {[i, j] | B(i, j)}
    assert cq_contained(row, entries)
    assert not cq_contained(entries, row)
    assert strictly_contained((row,), (entries,))


def test_containment_respects_head_dimensions() -> None:
    rows = cq((i,), ("B", (v(i), v(j, 1))))
    cols = cq((j,), ("B", (v(i, 1), v(j))))
    assert not cq_contained(rows, cols) and not cq_contained(cols, rows)
    dense_ij = cq((i, j))  # {[i, j] | true}: every pair
    assert cq_contained(cq((i, j), ("B", (v(i), v(j)))), dense_ij)
    assert not cq_contained(dense_ij, cq((i, j), ("B", (v(i), v(j)))))


def test_intersection_is_contained_in_each_operand() -> None:
    both = cq((i, j), ("B", (v(i), v(j))), ("C", (v(i), v(j))))
    just_b = cq((i, j), ("B", (v(i), v(j))))
    assert cq_contained(both, just_b)
    assert not cq_contained(just_b, both)
    union = (just_b, cq((i, j), ("C", (v(i), v(j)))))
    assert union_contained((both,), union)
    assert not union_contained(union, (both,))


def test_minimize_drops_implied_clauses_and_union_drops_contained_queries() -> None:
    guarded = cq((i, k), ("B", (v(i), v(k, 1))), ("B", (v(i), v(k))))
    assert minimize(guarded) == cq((i, k), ("B", (v(i), v(k))))
    row = cq((i,), ("B", (v(i), v(k, 1))))
    assert simplify_union((row, guarded)) == (cq((i, k), ("B", (v(i), v(k)))),)


# --- task sets (Figure 4) -----------------------------------------------------------------

def test_spmv_task_sets_follow_the_protocols() -> None:
    body = MapJoin(MUL, (Relabel(B, (i, j)), Relabel(X, (j,))))
    model = QueryModel(body, infos(B=CSR, X=VEC), Aggregate(ADD, ZERO, Reorder(body, (i, j)), (j,)))
    entries = cq((i, j), ("B", (v(i), v(j))))
    steps = {minimize(c) for c in task_set(model, (i, j), ((STEP, STEP), (LOCATE,)))}
    assert steps == {entries, cq((i,), ("B", (v(i), v(j, 1))))}
    # a located column: every j of every nonempty row
    whole_rows = set(task_set(model, (i, j), ((STEP, LOCATE), (LOCATE,))))
    assert whole_rows == {cq((i,), ("B", (v(i), v(j, 1)))), cq((i, j), ("B", (v(i), v(j, 1))))}
    assert set(task_set(model, (i, j), ((LOCATE, LOCATE), (LOCATE,)))) == {cq((i, j))}


def test_a_union_coiterates_both_and_a_dense_operand_visits_everything() -> None:
    body = MapJoin(ADD, (Relabel(A, (i,)), Relabel(B, (i,))))
    vec_a, vec_b = sparse(1, 30, 0.2, 0).to_numpy()[0], sparse(1, 30, 0.2, 1).to_numpy()[0]
    facts = infos(A=Tensor.from_numpy(vec_a, "coo"), B=Tensor.from_numpy(vec_b, "coo"), X=VEC)
    tasks = set(task_set(QueryModel(body, facts, None), (i,), ((STEP,), (STEP,))))
    assert tasks == {cq((i,), ("A", (v(i),))), cq((i,), ("B", (v(i),))),
                     cq((i,), ("A", (v(i),)), ("B", (v(i),)))}
    plus_dense = MapJoin(ADD, (Relabel(A, (i,)), Relabel(X, (i,))))
    tasks = set(task_set(QueryModel(plus_dense, facts, None), (i,), ((STEP,), (LOCATE,))))
    assert cq((i,)) in tasks  # x's entries need computing where A is absent


def test_a_where_mask_drives_its_reduction() -> None:
    # sum_j where(S != 0, X, 0): outside S the body is 0, the sum's identity
    cond = MapJoin(Immediate(get_operator("not_equal")), (Relabel(S, (i, j)), ZERO))
    body = MapJoin(Immediate(get_operator("where")), (cond, Relabel(X, (i, j)), ZERO))
    agg = Aggregate(ADD, ZERO, Reorder(body, (i, j)), (j,))
    model = QueryModel(body, infos(S=CSR, X=MAT), agg)
    tasks = set(task_set(model, (i, j), ((LOCATE, STEP), (LOCATE, LOCATE))))
    assert tasks == {cq((i, j), ("S", (v(i), v(j))))}


def test_inner_products_are_dominated_by_gustavson() -> None:
    body, agg = matmul(Relabel(B, (i, k)), Relabel(C, (k, j)), (i, j), k)
    model = QueryModel(body, infos(B=CSR, C=CSR2), agg)
    inner = schedule_cost(model, (i, j, k), ((STEP, STEP), (STEP, STEP)))
    # CSR B and C: C's rows are located, not coiterated with B's row
    gustavson = schedule_cost(model, (i, k, j), ((LOCATE, STEP), (LOCATE, STEP)))
    outer = schedule_cost(model, (k, i, j), ((STEP, STEP), (STEP, STEP)))
    assert strictly_contained(gustavson, inner)
    # with reading the inputs sunk and the inputs nonempty, Gustavson equals outer products
    assert union_contained(gustavson, outer) and union_contained(outer, gustavson)
    # DCSR C: Gustavson's k loop merges B's row with every nonempty row of C
    merging = schedule_cost(model, (i, k, j), ((LOCATE, STEP), (STEP, STEP)))
    assert strictly_contained(outer, merging)


def test_a_field_missing_from_the_order_has_extent_one() -> None:
    body = MapJoin(MUL, (Relabel(A, (i, m)), Relabel(X, (i,))))
    col = Tensor.from_numpy(sparse(30, 1, 0.3, 0).to_numpy(), "csr")
    model = QueryModel(body, infos(A=col, X=VEC), None)
    # no loop over m: stepping i visits A's stored entries, locating i every i
    tasks = {minimize(c) for c in task_set(model, (i,), ((STEP, STEP), (LOCATE,)))}
    assert tasks == {cq((i,), ("A", (v(i), v(m, 1))))}
    assert set(task_set(model, (i,), ((LOCATE, STEP), (LOCATE,)))) == {cq((i,))}


# --- the paper's universes (Figure 6) -----------------------------------------------------

def test_spmv_universe_has_8_schedules_and_4_undominated() -> None:
    body = MapJoin(MUL, (Relabel(B, (i, j)), Relabel(X, (j,))))
    facts = infos(B=CSR, X=VEC)
    agg = Aggregate(ADD, ZERO, Reorder(body, (i, j)), (j,))
    universe = paper_universe(body, facts, (i, j))
    keep = undominated(body, agg, facts, tuple(universe))
    assert len(universe) == 8 and len(keep) == 4
    dominated = {(names(universe[n][0]), universe[n][1][0])
                 for n in range(len(universe)) if n not in keep}
    # a located inner mode iterates a whole row (column) per nonempty one; all-locate is dense
    assert dominated == {("ij", (STEP, LOCATE)), ("ij", (LOCATE, LOCATE)),
                         ("ji", (LOCATE, STEP)), ("ji", (LOCATE, LOCATE))}


def test_spgemm_universe_has_96_schedules_and_12_undominated() -> None:
    body, agg = matmul(Relabel(B, (i, k)), Relabel(C, (k, j)), (i, j), k)
    facts = infos(B=CSR, C=CSR2)
    universe = paper_universe(body, facts, (i, j, k))
    keep = undominated(body, agg, facts, tuple(universe))
    assert len(universe) == 96 and len(keep) == 12
    survivors = [universe[n] for n in keep]
    # Gustavson (ikj, jki) and outer products (kij, kji); inner products never survive
    assert {names(o) for o, _ in survivors} == {"ikj", "jki", "kij", "kji"}
    # the innermost loop always steps through the operand it indexes
    for order, (pb, pc) in survivors:
        inner = pc[1] if order[-1] == j else pb[0]
        assert inner == STEP


# --- choose_loop_orders ---------------------------------------------------------------------

def _inputs(**tensors: Tensor) -> tuple[Query, ...]:
    return tuple(Query(Alias(n), Table(Immediate(t), (i, j)[: t.ndim]))
                 for n, t in tensors.items())


def test_transposed_product_prunes_inner_products() -> None:
    # C = A.T @ B.T, produced: no concordant order; ijk (inner products) merges k per (i, j).
    # Sparse enough that the result is sparse: looping out of its axis order would sort
    # every product (loop_order._Pricer), so the axis-ordered candidates stay
    _, agg = matmul(Relabel(A, (k, i)), Relabel(B, (j, k)), (i, j), k)
    plan = Plan((*_inputs(A=sparse(400, 400, 0.005, 0), B=sparse(400, 400, 0.005, 1)),
                 Query(C, agg), Produces((C,))))
    report = loop_order_reports(plan)[C]
    assert report.candidates == 3 and report.modeled
    assert {names(o) for o in report.survivors} == {"ikj", "kij"}
    assert choose_loop_orders(plan).bodies[2].rhs.arg.idxs == report.chosen
    assert "3 candidates, 2 undominated" in report.describe()


def test_small_dense_transposed_product_loops_out_of_axis_order() -> None:
    # 30 x 30 at density 0.1: a dense result takes scattered writes in place, so B @ A's
    # Gustavson order j, k, i writing C = (B @ A).T needs no copy and wins (RESULT reorder)
    _, agg = matmul(Relabel(A, (k, i)), Relabel(B, (j, k)), (i, j), k)
    plan = Plan((*_inputs(A=CSR, B=CSR2), Query(C, agg), Produces((C,))))
    report = loop_order_reports(plan)[C]
    assert report.candidates == 6 and report.chosen == (j, k, i)
    rhs = choose_loop_orders(plan).bodies[2].rhs
    assert isinstance(rhs, Reformat) and rhs.tns.val.level_kinds == ("dense", "dense")
    assert rhs.arg.idxs == (i, j) and rhs.arg.arg.arg.idxs == (j, k, i)


def test_sddmm_has_one_concordant_candidate() -> None:
    body = MapJoin(MUL, (Relabel(S, (i, j)), MapJoin(MUL, (Relabel(X, (i, k)),
                                                          Relabel(Y, (j, k))))))
    m1, m2 = dense(np.ones((30, 4))), dense(np.ones((30, 4)))
    plan = Plan((*_inputs(S=CSR, X=m1, Y=m2),
                 Query(D, Aggregate(ADD, ZERO, Reorder(body, (i, j, k)), (k,))),
                 Produces((D,))))
    report = loop_order_reports(plan)[D]
    assert report.candidates == 1 and not report.modeled and report.chosen == (i, j, k)


def test_more_candidates_than_the_bound_use_the_estimate_alone() -> None:
    # A(i, j) * B(j, i), both CSR, times dense vectors on k, l, m, all summed: no concordant
    # order, 5! candidates
    body: LogicNode = Relabel(A, (i, j))
    for acc in (Relabel(B, (j, i)), Relabel(X, (k,)), Relabel(Y, (l,)), Relabel(Z, (m,))):
        body = MapJoin(MUL, (body, acc))
    vec = Tensor.from_numpy(np.ones(30), "dense")
    plan = Plan((*_inputs(A=CSR, B=CSR2), Query(X, Table(Immediate(vec), (i,))),
                 Query(Y, Table(Immediate(vec), (i,))), Query(Z, Table(Immediate(vec), (i,))),
                 Query(D, Aggregate(ADD, ZERO, Reorder(body, (i, j, k, l, m)), (i, j, k, l, m))),
                 Produces((D,))))
    report = loop_order_reports(plan)[D]
    assert report.candidates == 120 > MAX_MODEL_CANDIDATES
    assert not report.modeled and len(report.survivors) == 120
    assert f"over the model's bound {MAX_MODEL_CANDIDATES}" in report.describe()


# --- explain ------------------------------------------------------------------------------

def test_explain_shows_candidates_survivors_and_the_winner() -> None:
    a = sps.random(60, 60, density=0.05, format="csr", random_state=0)
    b = sps.random(60, 60, density=0.05, format="csr", random_state=1)
    la, lb = xp.asarray(a), xp.asarray(b)
    e = xp.explain(la.T @ lb.T)
    last = e.kernels[-1]
    assert last.schedule is not None
    assert "schedules: 3 candidates, 2 undominated" in last.schedule
    assert f"chosen {','.join(last.loop_order)}" in last.schedule
    assert last.schedule in str(e)
    np.testing.assert_allclose(np.asarray(la.T @ lb.T), (a.T @ b.T).toarray())


def test_explain_sddmm_broadcast_form_one_candidate_with_s_driving() -> None:
    n, r = 80, 4
    s = sps.random(n, n, density=0.05, format="csr", random_state=0)
    u, w = np.random.default_rng(0).random((n, r)), np.random.default_rng(1).random((n, r))
    ls, lu, lw = xp.asarray(s), xp.asarray(u), xp.asarray(w)
    expr = xp.sum(ls[:, :, None] * lu[:, None, :] * lw[None, :, :], axis=2)
    e = xp.explain(expr)
    assert len(e.kernels) == 1
    kern = e.kernels[0]
    assert kern.schedule is not None and kern.schedule.startswith("schedules: 1 candidate;")
    assert kern.output_format.name == "csr"
    want = s.toarray() * (u @ w.T)
    np.testing.assert_allclose(np.asarray(expr), want)


def test_dominated_concordant_orders_give_way_to_a_transposed_copy() -> None:
    """CSR ``A @ B.T``: the only concordant orders are inner products (every (i, j) pair
    merges two rows), dominated by Gustavson over a transposed copy of B."""
    A = sps.random_array((60, 50), density=0.05, format="csr", rng=7)
    B = sps.random_array((40, 50), density=0.05, format="csr", rng=8)
    a, b = xp.asarray(A), xp.asarray(B)
    for expr in (a @ b.T, xp.matmul(a, xp.matrix_transpose(b)),
                 xp.tensordot(a, b, axes=([1], [1]))):
        kernels = xp.explain(expr).kernels
        assert len(kernels) == 2 and "relayout" in (kernels[0].schedule or "")
        assert "undominated" in (kernels[1].schedule or "")
        r = xp.compute(expr)
        assert r.format == "csr"
        np.testing.assert_allclose(xp.to_numpy(r), (A @ B.T).toarray())
    # concordant orders that are not dominated stay: CSR A @ CSR B is one kernel
    assert len(xp.explain(a @ xp.asarray(B.T.tocsr())).kernels) == 1


def test_a_model_over_its_step_budget_keeps_every_schedule(monkeypatch) -> None:  # noqa: ANN001
    """The cost model is a bounded planning step: past its budget it returns every
    schedule (the estimate alone then decides) instead of searching on."""
    body, agg = matmul(Relabel(B, (i, k)), Relabel(C, (k, j)), (i, j), k)
    facts = infos(B=CSR, C=CSR2)
    universe = tuple(paper_universe(body, facts, (i, j, k)))
    asymptotic._undominated_cached.cache_clear()
    conjunctive.cq_contained.cache_clear()
    conjunctive.minimize.cache_clear()
    monkeypatch.setattr(conjunctive, "MODEL_STEP_BUDGET", 50)
    assert undominated(body, agg, facts, universe) == tuple(range(len(universe)))
    monkeypatch.undo()
    asymptotic._undominated_cached.cache_clear()
    assert len(undominated(body, agg, facts, universe)) == 12


def test_the_step_budget_is_per_block_and_nests() -> None:
    with conjunctive.step_budget(3):
        conjunctive.spend(2)
        with conjunctive.step_budget(100):  # shares the outer budget
            with pytest.raises(conjunctive.ModelBudgetExceeded):
                conjunctive.spend(2)
    conjunctive.spend(10**9)  # outside a block nothing is counted
