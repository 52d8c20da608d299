"""The optimizer never densifies a large sparse result behind the user's back.

Golden rules (small arrays under a small ``set_densify_limit``, so results are checked against
the oracle): past the limit a result that is exactly sparse on its sparse operands' union
(``A + 1``, ``exp(A)``, ``A * D + 1``) is stored sparse with fill ``op(fills)``; a result as
large as a dense operand stays dense; anything else raises ``DensifyError`` before allocating.
Then ``xp.zeros((10**5, 10**5)) + 1`` end to end.
"""

from __future__ import annotations

import resource

import numpy as np
import pytest

import lazysparse as xp
from lazysparse.formats import DensifyError, Tensor, set_densify_limit
from lazysparse.kernels.backends import execute_plan
from lazysparse.logic.nodes import Plan, Query, Table
from lazysparse.optimizer import optimize
from tests.conftest import slow_except
from tests.optimizer.plans import Lz, dense, ew, leaf, oracle, plan_of, reduce, sparse

RNG = np.random.default_rng(7)
SMALL_LIMIT = 1000  # bytes: a 50 x 50 float64 result (20 kB) is past it


def _result_spec(plan: Plan) -> object:
    """The format spec of the plan's (last, produced) compute query."""
    qs = [q for q in plan.bodies if isinstance(q, Query) and not isinstance(q.rhs, Table)]
    return qs[-1].rhs.tns.val


def _run(out: Lz, limit: int | None = SMALL_LIMIT) -> tuple[object, Tensor, np.ndarray]:
    """(chosen spec, compiled result, oracle) of a one-result plan under ``limit``."""
    plan = plan_of(out)
    with set_densify_limit(limit):
        opt = optimize(plan)
        (got,) = execute_plan(opt)
    (want,) = oracle(plan)
    g = got.to_numpy()
    assert g.dtype == want.dtype
    np.testing.assert_allclose(g, want)
    return _result_spec(opt), got, want


def test_small_a_plus_one_stays_dense() -> None:
    spec, got, _ = _run(ew("add", leaf(sparse(50, 50, 0.05, 1)), 1.0), limit=None)
    assert spec.name == "dense"
    spec, _, _ = _run(ew("add", leaf(sparse(50, 50, 0.05, 1)), 1.0), limit=10**6)
    assert spec.name == "dense"


@pytest.mark.parametrize("fmt", ["csr", "coo", "csc"])
def test_large_a_plus_one_is_sparse_with_fill_one(fmt: str) -> None:
    a = sparse(50, 50, 0.05, 2, fmt)
    spec, got, want = _run(ew("add", leaf(a), 1.0))
    assert spec.level_kinds != ("dense", "dense")
    assert got.fill_value == 1.0 and got.nnz <= a.nnz
    assert want[0].size == 50


@pytest.mark.parametrize("dtype", slow_except(["float32", "int16", "uint8", "complex128"],
                                               ["float32"]))
def test_large_exactly_sparse_results_keep_the_union_pattern(dtype: str) -> None:
    a = Tensor.from_numpy((sparse(40, 60, 0.05, 3).to_numpy() * 7).astype(dtype), "csr")
    b = Tensor.from_numpy((sparse(40, 60, 0.05, 4).to_numpy() * 5).astype(dtype), "csr")
    d = dense((RNG.random((40, 60)) * 3).astype(dtype))
    A, B, D = leaf(a), leaf(b), leaf(d)
    one = np.asarray(1, dtype=dtype)[()]
    for out in (ew("add", ew("add", A, B), one),      # union of two patterns, fill 1
                ew("add", ew("multiply", A, D), one),  # A masks the dense operand
                ew("subtract", one, A)):
        spec, got, _ = _run(out)
        assert "compressed" in spec.level_kinds
        assert got.nnz <= a.nnz + b.nnz


def test_large_exp_of_sparse_is_sparse_with_fill_one() -> None:
    spec, got, _ = _run(ew("exp", leaf(sparse(50, 50, 0.05, 5))))
    assert "compressed" in spec.level_kinds and got.fill_value == 1.0


def test_nan_fill_union_is_sparse() -> None:
    a = sparse(50, 50, 0.05, 6).to_numpy()
    t = Tensor.from_numpy(np.where(a == 0, np.nan, a), "csr", fill_value=np.nan)
    spec, got, _ = _run(ew("add", leaf(t), 2.0))
    assert "compressed" in spec.level_kinds and np.isnan(got.fill_value)


def test_dense_operand_as_large_as_the_result_stays_dense() -> None:
    d = dense(RNG.random((50, 50)))
    spec, _, _ = _run(ew("add", leaf(d), 1.0))
    assert spec.name == "dense"
    spec, _, _ = _run(ew("add", leaf(sparse(50, 50, 0.05, 7)), leaf(d)))
    assert spec.name == "dense"


def test_densifying_a_sparse_input_raises_before_allocating() -> None:
    a = leaf(sparse(50, 50, 0.05, 8))
    x = leaf(dense(RNG.random(50)))  # a small dense vector broadcast over a's rows
    for out in (ew("add", a, x), ew("multiply", ew("add", ew("cos", a), x), 2.0)):
        with set_densify_limit(SMALL_LIMIT), pytest.raises(DensifyError) as info:
            optimize(plan_of(out))
        msg = str(info.value)
        assert "mapjoin(" in msg and "set_densify_limit" in msg and "(50, 50)" in msg
    with set_densify_limit(SMALL_LIMIT + 20_000):  # raised limit: allowed
        _run(ew("add", a, x), limit=SMALL_LIMIT + 20_000)


def test_small_reductions_of_large_inputs_stay_dense() -> None:
    # a max from -inf over fill 0 cannot skip entries; its 50-entry result is under the limit
    spec, _, _ = _run(reduce("maximum", leaf(sparse(50, 50, 0.05, 9)), (0,)))
    assert spec.name == "dense"


def test_zeros_plus_one_end_to_end_stays_sparse() -> None:
    n = 10**5
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    y = xp.zeros((n, n)) + 1
    r = xp.compute(y)
    assert r.format != "dense" and r.fill_value == 1.0 and r.nnz == 0
    for i, j in ((0, 0), (5, 7), (n - 1, 0), (n - 1, n - 1)):
        assert float(y[i, j]) == 1.0
    assert float(xp.sum(y[:3, :4])) == 12.0
    # a dense result would need 80 GB; allow generous interpreter/compile overhead
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    assert grown < 1 << 30


def test_large_sparse_plus_one_end_to_end_probes_values() -> None:
    n = 10**5
    rows = np.array([0, 3, 3, 70_000, n - 1])
    cols = np.array([5, 0, 99_999, 12, n - 1])
    vals = np.array([2.0, -1.0, 4.5, 0.25, 8.0])
    t = Tensor.from_coords((rows, cols), vals, (n, n), format="csr")
    y = xp.asarray(t) * 2 + 1
    r = xp.compute(y)
    assert r.format != "dense" and r.fill_value == 1.0 and r.nnz == len(vals)
    for i, j, v in zip(rows, cols, vals, strict=True):
        assert float(y[int(i), int(j)]) == 2 * v + 1
    assert float(y[1, 1]) == 1.0 and float(y[3, 1]) == 1.0
    with pytest.raises(DensifyError, match="set_densify_limit"):
        xp.compute(xp.asarray(t) + xp.asarray(np.arange(n, dtype=np.float64)))
