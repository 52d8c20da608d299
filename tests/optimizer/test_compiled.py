"""Random plans run end to end: ``execute_plan(optimize(plan))`` equals the oracle."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, assume, given, settings

from lazysparse.kernels.backends import execute_plan
from lazysparse.logic.nodes import Plan, Query, Reformat, Table
from lazysparse.optimizer import optimize
from lazysparse.optimizer.analysis import query_parts
from lazysparse.optimizer.rewrite import accesses
from tests.conftest import examples
from tests.optimizer.plans import Lz, ew, leaf, matmul, oracle, plan_of, reduce, sparse
from tests.optimizer.test_oracle import programs


def _unindexed_loop_field(plan: Plan) -> bool:
    """Some loop field no access indexes (extent 1 by the contract; covered separately by
    ``test_keepdims_result_runs_compiled``)."""
    for q in plan.bodies:
        if isinstance(q, Query) and isinstance(q.rhs, Reformat):
            _, _, loop = query_parts(q.rhs)  # under an epilogue and an aggregate
            indexed = {f for a in accesses(loop) for f in a.idxs}
            if any(f not in indexed for f in loop.idxs):
                return True
    return False


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_compiled_plan_matches_oracle(outs: tuple[Lz, ...]) -> None:
    plan = plan_of(*outs)
    opt = optimize(plan)
    assume(not _unindexed_loop_field(opt))
    want = oracle(plan)
    got = execute_plan(opt)
    for w, g in zip(want, got, strict=True):
        g = np.asarray(g.to_numpy())
        assert w.shape == g.shape and w.dtype == g.dtype
        if _annihilated_non_finite(opt, w, g):
            assume(False)  # documented: fills annihilate as in scipy (0 * NaN is 0)
        np.testing.assert_allclose(g, w)


def _annihilated_non_finite(plan: Plan, want: np.ndarray, got: np.ndarray) -> bool:
    """Do results differ only where the dense oracle is NaN and some input holds a NaN/inf?

    Kernels skip a fill that annihilates the op even against non-finite values
    (docs/kernels.md: ``0 * inf`` is 0, as in scipy), where dense NumPy gives NaN.
    """
    if want.dtype.kind not in "fc":
        return False
    bad = ~np.isclose(got, want, equal_nan=True)
    if not bad.any() or not np.isnan(want[bad]).all():
        return False
    tensors = [q.rhs.tns.val for q in plan.bodies  # an optimized plan: inputs are queries
               if isinstance(q, Query) and isinstance(q.rhs, Table)]
    return any(t.dtype.kind in "fc" and not np.isfinite(t.to_numpy()).all() for t in tensors)


def test_keepdims_result_runs_compiled() -> None:
    # a loop field no access indexes (a keepdims axis) has extent 1 (docs/architecture.md)
    a = leaf(sparse(20, 30, 0.2, 0))
    out = reduce("add", a, (1,), init=0.0, keepdims=True)
    plan = plan_of(out)
    (got,) = execute_plan(optimize(plan))
    np.testing.assert_allclose(got.to_numpy(), oracle(plan)[0])


def test_masked_matmul_and_triangles_run_compiled() -> None:
    a = leaf(sparse(60, 60, 0.1, 1))
    tri = reduce("add", ew("multiply", a, matmul(a, a)), (0, 1), init=0.0)
    masked = ew("multiply", a, matmul(a, a))
    plan = plan_of(tri, masked)
    got = execute_plan(optimize(plan))
    for w, g in zip(oracle(plan), got, strict=True):
        np.testing.assert_allclose(g.to_numpy(), w)
