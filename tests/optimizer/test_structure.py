"""The structural requirements: fusion, loop orders and formats the optimizer must pick."""

from __future__ import annotations

import numpy as np

from lazysparse.engine import explain_plan
from lazysparse.formats import Tensor
from lazysparse.logic.nodes import Aggregate, Alias, Plan, Query, Reformat, Table
from lazysparse.optimizer import optimize
from lazysparse.optimizer.analysis import query_parts
from lazysparse.optimizer.rewrite import accesses
from tests.optimizer.normal_form_check import assert_normal_form
from tests.optimizer.plans import (
    Lz,
    asformat,
    dense,
    ew,
    expand,
    leaf,
    matmul,
    oracle,
    permute,
    plan_of,
    reduce,
    sparse,
)

RNG = np.random.default_rng(0)


def kernels(plan: Plan) -> list[Query]:
    return [q for q in plan.bodies if isinstance(q, Query) and not isinstance(q.rhs, Table)]


def inputs_by_tensor(plan: Plan) -> dict[int, Alias]:
    return {id(q.rhs.tns.val): q.lhs for q in plan.bodies
            if isinstance(q, Query) and isinstance(q.rhs, Table)}


def optimized(*outs: Lz, check: bool = True) -> Plan:
    """The optimized plan (checked against the oracle when ``check``: small inputs only)."""
    plan = plan_of(*outs)
    opt = optimize(plan)
    assert_normal_form(opt)
    if check:
        for w, g in zip(oracle(plan), oracle(opt), strict=True):
            np.testing.assert_allclose(g, w)
    return opt


def _sddmm_check(opt: Plan, s: Tensor) -> None:
    (q,) = kernels(opt)
    s_alias = inputs_by_tensor(opt)[id(s)]
    _, agg, loop = query_parts(q.rhs.arg if isinstance(q.rhs, Reformat) else q.rhs)
    (s_acc,) = [a for a in accesses(loop.arg) if a.arg == s_alias]
    assert isinstance(q.rhs.arg, Aggregate)
    # the two outer loops walk S's rows then S's stored columns; k is innermost
    assert loop.idxs[:2] == s_acc.idxs and agg is not None and agg.idxs == loop.idxs[2:]
    assert q.rhs.tns.val.level_kinds == ("dense", "compressed")


def test_sddmm_broadcast_form_is_one_kernel_over_s() -> None:
    s = sparse(200, 300, 0.02, 0)
    S, U, V = leaf(s), leaf(dense(RNG.random((200, 8)))), leaf(dense(RNG.random((300, 8))))
    out = reduce("add", ew("multiply", ew("multiply", expand(S, 2), expand(U, 1)),
                           expand(V, 0)), (2,), init=0.0)
    _sddmm_check(optimized(out, check=False), s)


def test_sddmm_matmul_form_fuses_the_product_under_the_mask() -> None:
    s = sparse(200, 300, 0.02, 1)
    S, U, V = leaf(s), leaf(dense(RNG.random((200, 8)))), leaf(dense(RNG.random((300, 8))))
    _sddmm_check(optimized(ew("multiply", S, matmul(U, permute(V, (1, 0)))), check=False), s)


def test_triangle_count_has_no_matrix_intermediate() -> None:
    a = sparse(300, 300, 0.02, 2)
    A = leaf(a)
    opt = optimized(reduce("add", ew("multiply", A, matmul(A, A)), (0, 1), init=0.0),
                    check=False)
    (q,) = kernels(opt)
    assert q.rhs.tns.val.ndim == 0
    assert len(q.rhs.arg.arg.idxs) == 3  # one i,k,j loop nest


def test_sum_of_products_of_sums_is_one_sparse_kernel() -> None:
    A, B, C = (leaf(sparse(300, 300, 0.01, s)) for s in (3, 4, 5))
    opt = optimized(ew("multiply", ew("add", A, B), C))
    (q,) = kernels(opt)
    assert q.rhs.tns.val.level_kinds != ("dense", "dense")


def test_csr_matmul_is_gustavson_and_returns_csr() -> None:
    a, b = sparse(2000, 2000, 0.001, 6), sparse(2000, 2000, 0.001, 7)
    opt = optimized(matmul(leaf(a), leaf(b)), check=False)
    (q,) = kernels(opt)
    names = inputs_by_tensor(opt)
    acc = {a.arg: a.idxs for a in accesses(q.rhs.arg.arg.arg)}
    i, k = acc[names[id(a)]]
    k2, j = acc[names[id(b)]]
    assert k == k2 and q.rhs.arg.arg.idxs == (i, k, j)
    assert q.rhs.tns.val.name == "csr"


def test_adding_a_constant_gives_dense() -> None:
    opt = optimized(ew("add", leaf(sparse(50, 50, 0.05, 8)), 1.0))
    (q,) = kernels(opt)
    assert q.rhs.tns.val.name == "dense"


def test_transposed_matvec_does_not_copy_a() -> None:
    a = sparse(500, 400, 0.01, 9)
    x = dense(RNG.random(500))
    opt = optimized(matmul(permute(leaf(a), (1, 0)), leaf(x)))
    (q,) = kernels(opt)  # no transposed copy of A
    names = inputs_by_tensor(opt)
    (acc,) = [x for x in accesses(q.rhs.arg.arg.arg) if x.arg == names[id(a)]]
    assert q.rhs.arg.arg.idxs == acc.idxs  # loops follow A's storage: rows (reduced) outer
    assert q.rhs.arg.idxs == (acc.idxs[0],)


def test_coo_input_used_once_is_not_converted() -> None:
    c = sparse(100, 100, 0.03, 10, "coo")
    opt = optimized(ew("multiply", leaf(c), 3.0))
    (q,) = kernels(opt)
    assert [a.arg for a in accesses(q.rhs)] == [inputs_by_tensor(opt)[id(c)]]


def test_asformat_is_kept() -> None:
    a = leaf(sparse(60, 60, 0.05, 11))
    opt = optimized(asformat(ew("multiply", a, 2.0), "csc"))
    (q,) = kernels(opt)
    assert q.rhs.tns.val.name == "csc" and q.rhs.tns.val.mode_order == (1, 0)
    dense_req = optimized(asformat(ew("multiply", a, 2.0), "dense"))
    assert kernels(dense_req)[0].rhs.tns.val.name == "dense"


def test_shared_subexpression_is_not_lifted_twice() -> None:
    a = leaf(sparse(40, 40, 0.1, 12))
    r = reduce("add", a, (1,), init=0.0)
    opt = optimized(ew("add", r, r), r)
    assert len(kernels(opt)) == 2


def test_explain_lists_kernels_with_loop_order_format_and_source() -> None:
    a, b = sparse(400, 400, 0.005, 13), sparse(400, 400, 0.005, 14)
    e = explain_plan(plan_of(matmul(leaf(a), leaf(b))))
    (k,) = e.kernels
    assert len(k.loop_order) == 3 and k.output_format.name == "csr"
    assert len(k.inputs) == 2 and "def " in k.source
    text = str(e)
    assert "optimized plan" in text and k.source.splitlines()[0] in text


def test_repeated_reuse_does_not_blow_up() -> None:
    # x = 2x + x, 14 times: inlining every shared map would unfold 2^14 copies of A
    x = leaf(sparse(30, 30, 0.1, 15))
    for _ in range(14):
        x = ew("add", ew("multiply", x, 2.0), x)
    opt = optimized(x)
    assert 1 < len(kernels(opt)) <= 14


def _reads_storage_order(opt: Plan, t: Tensor) -> tuple[Query, tuple]:
    """The plan's single kernel, which reads ``t`` with loops in ``t``'s storage order."""
    (q,) = kernels(opt)  # no transposed copy of t
    (acc,) = [a for a in accesses(q.rhs) if a.arg == inputs_by_tensor(opt)[id(t)]]
    _, _, loop = query_parts(q.rhs)
    storage = tuple(acc.idxs[m] for m in t.mode_order)
    indexed = tuple(f for f in loop.idxs if f in acc.idxs)  # (a keepdims axis has extent 1)
    assert indexed == storage  # stored entries are iterated in order, outermost level first
    return q, loop.idxs


def test_column_and_row_reductions_iterate_storage_without_copies() -> None:
    for fmt in ("csr", "csc", "coo"):
        a = sparse(300, 200, 0.02, 16, fmt)
        for axis in (0, 1):
            for out in (reduce("maximum", leaf(a), (axis,)),
                        reduce("add", ew("abs", leaf(a)), (axis,), init=0.0)):
                q, _ = _reads_storage_order(optimized(out), a)
                assert q.rhs.tns.val.name == "dense"  # scattered writes into a dense vector


def test_argmax_passes_iterate_storage_without_copies() -> None:
    import lazysparse as xp
    from lazysparse.api.chapters.compute import build_plan
    from lazysparse.api.chapters.searching import lazy_arg_extremum

    for fmt in ("csr", "csc"):
        a = sparse(200, 150, 0.03, 17, fmt)
        for axis in (0, 1):
            lazy = lazy_arg_extremum("maximum", xp.asarray(a), (axis,), False)
            opt = optimize(build_plan((lazy,)))
            assert_normal_form(opt)
            ks = kernels(opt)
            assert len(ks) == 2  # the extremum, then the first index reaching it: no copy
            for q in ks:
                (acc,) = [x for x in accesses(q.rhs) if x.arg == inputs_by_tensor(opt)[id(a)]]
                _, _, loop = query_parts(q.rhs)
                assert tuple(f for f in loop.idxs if f in acc.idxs) == tuple(
                    acc.idxs[m] for m in a.mode_order)
