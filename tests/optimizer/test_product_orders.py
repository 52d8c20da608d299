"""Loop orders of transposed sparse products (issue 23 item 3): ``B.T @ B`` of a CSR ``B``
has one concordant order, the outer product ``k, i, j`` that scatters every product into a
sort buffer; the cost model (``loop_order._sort_buffer_cost``) lets orders reading a
transposed copy compete, and Gustavson over ``B.T``'s rows (``i, k, j``, a dense row
workspace) wins. Plans in, plans out (golden), and the same structure from ``xp.explain``
for every dtype and spelling."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
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
from lazysparse.optimizer.loop_order import (
    choose_axis_ordered_loops,
    choose_loop_orders,
    concordize,
    loop_order_reports,
)
from lazysparse.optimizer.pipeline import optimize
from tests.optimizer.plans import sparse

ADD, MUL = Immediate(get_operator("add")), Immediate(get_operator("multiply"))
ZERO = Immediate(0.0)
A, B, C = Alias("A"), Alias("B"), Alias("C")
i, j, k = Field("i"), Field("j"), Field("k")


def _gram_plan(tensor: Any) -> Plan:
    """``C[i, j] = sum_k A[k, i] * A[k, j]`` (``A.T @ A``), produced."""
    body = MapJoin(MUL, (Relabel(A, (k, i)), Relabel(A, (k, j))))
    return Plan((Query(A, Table(Immediate(tensor), (i, j))),
                 Query(C, Aggregate(ADD, ZERO, Reorder(body, (i, j, k)), (k,))),
                 Produces((C,))))


def test_sparse_gram_reads_a_transposed_copy_gustavson() -> None:
    # 400 x 300 with ~3 entries per row: the outer product k,i,j would sort every product
    plan = _gram_plan(sparse(400, 300, 0.01, 3))
    out = choose_loop_orders(plan)
    assert out.bodies[1] == Query(C, Aggregate(ADD, ZERO, Reorder(
        MapJoin(MUL, (Relabel(A, (k, i)), Relabel(A, (k, j)))), (i, k, j)), (k,)))
    report = loop_order_reports(plan)[C]
    assert report.candidates == 3 and report.chosen == (i, k, j)
    copied = concordize(out)
    copies = [q for q in copied.bodies if isinstance(q, Query) and q.lhs.name.startswith("T")]
    assert len(copies) == 1 and isinstance(copies[0].rhs, Reformat)
    assert copies[0].rhs.arg.arg.arg == A  # one transposed copy of A, read by the k loop


def test_dense_gram_keeps_the_concordant_outer_product() -> None:
    # a result estimated dense takes scattered writes in place: no sort, no copy
    plan = _gram_plan(sparse(40, 30, 0.5, 4))
    out = choose_loop_orders(plan)
    assert out.bodies[1].rhs.arg.idxs == (k, i, j)
    assert loop_order_reports(plan)[C].candidates == 1


def test_transposed_matvec_still_scatters_into_its_vector() -> None:
    x = Alias("X")
    body = MapJoin(MUL, (Relabel(A, (k, j)), Relabel(x, (k,))))
    plan = Plan((Query(A, Table(Immediate(sparse(400, 300, 0.01, 5)), (i, j))),
                 Query(x, Table(Immediate(xp.asarray(np.ones(400)).tensor()), (k,))),
                 Query(C, Aggregate(ADD, ZERO, Reorder(body, (j, k)), (k,))), Produces((C,))))
    assert choose_loop_orders(plan).bodies[2].rhs.arg.idxs == (k, j)


def _cross_plan(left: Any, right: Any) -> Plan:
    """``C[i, j] = sum_k L[i, k] * R[j, k]`` (``L @ R.T``), produced."""
    body = MapJoin(MUL, (Relabel(A, (i, k)), Relabel(B, (j, k))))
    return Plan((Query(A, Table(Immediate(left), (i, k))),
                 Query(B, Table(Immediate(right), (j, k))),
                 Query(C, Aggregate(ADD, ZERO, Reorder(body, (i, j, k)), (k,))),
                 Produces((C,))))


def test_few_rows_times_a_transpose_loop_over_the_large_operand() -> None:
    # X[:6] @ X.T: copying all of X would cost more than reading X once in its own order
    # and sorting the few products into the result (a RESULT reorder keeps axes i, j)
    big = sparse(2000, 800, 0.005, 6)
    few = sparse(6, 800, 0.005, 7)
    out = choose_loop_orders(_cross_plan(few, big))
    rhs = out.bodies[2].rhs
    assert isinstance(rhs, Reformat) and rhs.tns.val.level_kinds == ("dense", "compressed")
    assert rhs.tns.val.mode_order == (0, 1)
    assert rhs.arg == Reorder(Aggregate(ADD, ZERO, Reorder(
        MapJoin(MUL, (Relabel(A, (i, k)), Relabel(B, (j, k)))), (j, k, i)), (k,)), (i, j))
    report = loop_order_reports(_cross_plan(few, big))[C]
    assert report.candidates == 6 and report.chosen == (j, k, i)
    copies = [q for q in concordize(out).bodies
              if isinstance(q, Query) and q.lhs.name.startswith("T")]
    assert [q.rhs.arg.arg.arg for q in copies] == [A]  # the small operand is copied


def test_cuda_pipeline_keeps_reductions_in_axis_order() -> None:
    # the CUDA kernels write results in loop order: no RESULT reorder there
    big, few = sparse(2000, 800, 0.005, 6), sparse(6, 800, 0.005, 7)
    out = choose_axis_ordered_loops(_cross_plan(few, big))
    assert out.bodies[2].rhs.arg.idxs == (i, k, j)
    gpu = optimize(_cross_plan(few, big), device="cuda")
    assert not any(isinstance(q, Query) and isinstance(q.rhs, Reformat)
                   and isinstance(q.rhs.arg, Reorder) and isinstance(q.rhs.arg.arg, Aggregate)
                   for q in gpu.bodies)


def test_many_rows_times_a_transpose_keep_gustavson() -> None:
    big = sparse(2000, 800, 0.005, 6)
    out = choose_loop_orders(_cross_plan(big, big))
    assert out.bodies[2].rhs.arg.idxs == (i, k, j)  # no RESULT reorder
    copies = [q for q in concordize(out).bodies
              if isinstance(q, Query) and q.lhs.name.startswith("T")]
    assert [q.rhs.arg.arg.arg for q in copies] == [B]


def _loop_kinds(src: str) -> list[str]:
    body = src.split("def ", 2)[1] if src.count("def ") > 1 else src
    return re.findall(r"# loop \w+: (range|driver|merge)", body)


def _structure(expr: Any) -> tuple[int, bool, tuple[str, ...], tuple[str, ...], tuple[int, ...]]:
    """(kernel count, a relayout among them, the product's loop kinds, its result's level
    kinds and mode order) from ``xp.explain``."""
    ex = xp.explain(expr)
    main = ex.kernels[-1]
    relayout = any(k.output_format.mode_order == (1, 0) for k in ex.kernels[:-1])
    return (len(ex.kernels), relayout, tuple(_loop_kinds(main.source)),
            main.output_format.level_kinds, main.output_format.mode_order)


def _counts(n: int, m: int, per_row: int, seed: int) -> sp.csr_array:
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(n), per_row)
    cols = rng.integers(0, m, rows.size)
    return sp.csr_array((rng.integers(1, 5, rows.size).astype(np.float64), (rows, cols)),
                        shape=(n, m))


COUNTS = _counts(3000, 2000, 3, 7)
GUSTAVSON = (("range", "driver", "driver"), ("dense", "compressed-unordered"), (0, 1))


def test_sliced_rows_times_transpose_structure() -> None:
    x = xp.asarray(COUNTS)
    ex = xp.explain(x[:6] @ x.T)
    assert len(ex.kernels) == 2  # the small operand's copy (a relayout) and the product
    main = ex.kernels[-1]
    assert main.output_format.level_kinds == ("dense", "compressed")
    assert tuple(_loop_kinds(main.source)) == ("range", "driver", "driver")
    assert "output csr via ism" in main.source  # sorted into the result's axis order


@pytest.mark.parametrize("spelling", [
    "astype int64", "astype bool", "float64", "float32", "complex128", "matmul", "einsum",
    "tensordot"])
def test_every_dtype_and_spelling_takes_the_gustavson_path(spelling: str) -> None:
    x = xp.asarray(COUNTS)
    b = {
        "astype int64": lambda: xp.astype(x > 0, xp.int64),
        "astype bool": lambda: x > 0,
        "float32": lambda: xp.astype(x, xp.float32),
        "complex128": lambda: xp.astype(x, xp.complex128),
    }.get(spelling, lambda: x)()
    expr = {
        "matmul": lambda: xp.matmul(xp.matrix_transpose(b), b),
        "einsum": lambda: xp.einsum("ki,kj->ij", b, b),
        "tensordot": lambda: xp.tensordot(b, b, axes=([0], [0])),
    }.get(spelling, lambda: b.T @ b)()
    n, relayout, loops, kinds, mode = _structure(expr)
    assert relayout and (loops, kinds, mode) == GUSTAVSON
