"""Strategy choice from row-length statistics, and which kernels each strategy applies to."""

from __future__ import annotations

import numpy as np

from lazysparse.kernels.backends.cuda import strategies
from lazysparse.kernels.backends.cuda.runtime import choose_strategy
from lazysparse.logic.operators import get_operator
from tests.kernels.backends.cuda.cases import CASES, build

ALL = {"thread", "warp", "nzsplit"}


def test_choose_by_row_statistics() -> None:
    assert strategies.choose(ALL, mean_row=3.0, max_row=8) == "thread"
    assert strategies.choose(ALL, mean_row=64.0, max_row=90) == "warp"
    assert strategies.choose(ALL, mean_row=4.0, max_row=5000) == "nzsplit"
    assert strategies.choose({"thread", "warp"}, mean_row=4.0, max_row=5000) == "thread"
    assert strategies.choose({"thread"}, mean_row=64.0, max_row=90) == "thread"


def test_row_stats() -> None:
    ptr = np.array([0, 2, 2, 10], dtype=np.int32)
    mean, mx = strategies.row_stats(ptr)
    assert mean == 10 / 3 and mx == 8
    assert strategies.row_stats(np.array([0])) == (0.0, 0)


def test_warp_capable_needs_identity_and_regrouping() -> None:
    assert strategies.warp_capable(get_operator("add"), "float64")
    assert not strategies.warp_capable(get_operator("subtract"), "float64")
    assert not strategies.warp_capable(None, None)


def test_eligibility_per_kernel() -> None:
    def elig(name: str) -> frozenset[str]:
        return build(next(c for c in CASES if c.name == name), "thread").gpu.eligible

    assert elig("spmv_f64") == ALL
    assert "nzsplit" not in elig("spgemm_f64") and "warp" not in elig("spgemm_f64")
    assert elig("add_f64") == {"thread"}


def test_runtime_choice_uses_the_driving_pointer() -> None:
    """``choose_strategy`` reads the row statistics of the operand that drives loop 1."""
    import lazysparse.kernels.backends.cuda.runtime as rt

    skew = build(next(c for c in CASES if c.name == "spmv_skew"), "thread")
    params = skew.gpu.kernel.lowered.params
    saved = rt._cupy
    rt._cupy = lambda: np  # type: ignore[assignment]
    try:
        assert choose_strategy(skew.gpu, skew.args, params) == "nzsplit"
        flat = build(next(c for c in CASES if c.name == "spmv_f64"), "thread")
        assert choose_strategy(flat.gpu, flat.args, params) == "thread"  # mean row 7.5
        longrows = build(next(c for c in CASES if c.name == "spmv_long_rows"), "thread")
        assert choose_strategy(longrows.gpu, longrows.args, params) == "warp"
    finally:
        rt._cupy = saved  # type: ignore[assignment]


def test_spgemm_row_bound_and_capacity() -> None:
    from lazysparse.kernels.backends.cuda.workspaces import hash_capacity, spgemm_row_bound

    a_ptr = np.array([0, 2, 2, 3], dtype=np.int32)  # rows: {0, 2}, {}, {1}
    a_idx = np.array([0, 2, 1], dtype=np.int32)
    b_ptr = np.array([0, 3, 4, 9], dtype=np.int64)  # row lengths 3, 1, 5
    assert spgemm_row_bound(a_ptr, a_idx, b_ptr, np) == 8
    assert spgemm_row_bound(np.array([0, 0]), np.array([], np.int32), b_ptr, np) == 0
    assert hash_capacity(8, 10_000) == 16
    assert hash_capacity(8, 5) == 16  # 2 * width 5 -> 10 -> 16
    assert hash_capacity(0, 100) == 2


def test_workspace_choice() -> None:
    import lazysparse.kernels.backends.cuda.runtime as rt

    narrow = build(next(c for c in CASES if c.name == "spgemm_f64"), "thread")
    assert rt.choose_workspace(narrow.gpu, narrow.args, np) == ("dense", 0)
    wide = build(next(c for c in CASES if c.name == "spgemm_wide"), "thread")
    ws, cap = rt.choose_workspace(wide.gpu, wide.args, np)
    # 3000 columns: 4096 dense workspaces would need 3000 * 18 * 4096 bytes < 512 MiB
    assert ws == "dense"
    saved = rt.MIN_DENSE_WORKERS
    rt.MIN_DENSE_WORKERS = 1 << 20
    try:
        ws, cap = rt.choose_workspace(wide.gpu, wide.args, np)
        assert ws == "hash" and cap < 3000 and cap & (cap - 1) == 0
    finally:
        rt.MIN_DENSE_WORKERS = saved
    spmv = build(next(c for c in CASES if c.name == "spmv_f64"), "thread")
    assert spmv.gpu.hash_operands is None
    assert rt.choose_workspace(spmv.gpu, spmv.args, np) == ("dense", 0)
