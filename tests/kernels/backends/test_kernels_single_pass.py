"""One-thread fast paths: SpGEMM without a count pass (multiplication bound), fill-phase
row ends with empty rows, dense outputs without a preset, combine skipped for one chunk,
and the reassociating (fastmath 'reassoc') sum-of-products kernels."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from helpers import F, acc, agg, compute, dense, mj, plan, tensor

import lazysparse.kernels.backends.execute as ex
import lazysparse.kernels.backends.numba.cpu_host as host
import lazysparse.kernels.backends.numba.kernel as nk
import lazysparse.kernels.compile.planning.kernel_plan as kplan
from lazysparse.kernels.backends import execute_plan
from lazysparse.logic.nodes import Alias, Reorder

RNG = np.random.default_rng(7)


def sprand(shape, density=0.25, dtype=np.float64):
    return np.where(RNG.random(shape) < density, RNG.random(shape), 0).astype(dtype)


@pytest.fixture(autouse=True)
def one_thread():
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    yield
    numba.set_num_threads(before)


def spgemm(A, B, fa="csr", fb="csr", ofmt="csr"):
    body = agg("add", 0, Reorder(mj("multiply", acc("A", "i", "j"), acc("B", "j", "k")),
                                 F("i", "j", "k")), "j")
    return execute_plan(plan({"A": tensor(A, fa), "B": tensor(B, fb)},
                             compute("out", ofmt, 2, body)))[0]


def spgemm_kernel(A, B):
    """The kernel (from the in-memory cache) of the csr x csr SpGEMM of A and B."""
    body = agg("add", 0, Reorder(mj("multiply", acc("A", "i", "j"), acc("B", "j", "k")),
                                 F("i", "j", "k")), "j")
    env = {Alias("A"): tensor(A, "csr"), Alias("B"): tensor(B, "csr")}
    return ex.compile_query(compute("out", "csr", 2, body), env)


@pytest.fixture
def single_passes(monkeypatch):
    """Records the kernels that ran as one bounded fill pass (no count pass)."""
    seen: list = []
    orig = host._single_pass  # noqa: SLF001

    def spy(k, *a, **kw):
        seen.append(k)
        return orig(k, *a, **kw)

    monkeypatch.setattr(host, "_single_pass", spy)
    return seen


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.complex64, np.uint8])
def test_spgemm_single_pass_skips_count(dtype, single_passes):
    A, B = sprand((40, 30), 0.2, dtype), sprand((30, 50), 0.2, dtype)
    A[3] = 0  # empty rows: their ptr entries come from the running maximum of row ends
    A[-1] = 0
    out = spgemm(A, B)
    np.testing.assert_allclose(dense(out), A @ B, rtol=1e-5)
    k = spgemm_kernel(A, B)
    assert k.lowered.ws_bound is not None
    assert single_passes == [k]  # no count pass
    ptr, idx = out.levels[1].ptr, out.levels[1].idx
    for r in range(40):
        assert np.all(np.diff(idx[ptr[r]:ptr[r + 1]]) > 0)


def test_spgemm_count_fill_when_bound_too_loose(monkeypatch, single_passes):
    monkeypatch.setattr(host, "SINGLE_PASS_SLACK", 0)
    monkeypatch.setattr(host, "SINGLE_PASS_MIN", 0)
    monkeypatch.setattr(kplan, "WS_SINGLE_PASS_BYTES", 0)
    A, B = sprand((25, 20), 0.3), sprand((20, 35), 0.3)
    np.testing.assert_allclose(dense(spgemm(A, B)), A @ B)
    assert spgemm_kernel(A, B).lowered.ws_bound is not None
    assert not single_passes


def test_spgemm_single_pass_within_byte_budget(monkeypatch, single_passes):
    """A bound past the slack rule (issue 36's co-occurrence: 5.8M multiplications for
    2.2M entries) still skips the count while its buffers fit WS_SINGLE_PASS_BYTES and the
    densify limit; past the limit the count pass runs."""
    monkeypatch.setattr(host, "SINGLE_PASS_SLACK", 0)
    monkeypatch.setattr(host, "SINGLE_PASS_MIN", 0)
    A, B = sprand((25, 20), 0.3), sprand((20, 35), 0.3)
    np.testing.assert_allclose(dense(spgemm(A, B)), A @ B)
    k = spgemm_kernel(A, B)
    assert single_passes == [k]
    single_passes.clear()
    # the host's densify limit below the bound's buffers (a few hundred entries' bytes)
    monkeypatch.setattr(host, "get_densify_limit", lambda: 1000)
    np.testing.assert_allclose(dense(spgemm(A, B)), A @ B)
    assert not single_passes


def test_workspace_single_pass_rule():
    assert kplan.workspace_single_pass(1000, 12, None)
    assert kplan.workspace_single_pass(1000, 12, 12_000)
    assert not kplan.workspace_single_pass(1000, 12, 11_999)
    assert not kplan.workspace_single_pass(kplan.WS_SINGLE_PASS_BYTES // 12 + 1, 12, None)


def test_spgemm_empty_and_dense_rows():
    A = np.zeros((6, 5))
    B = sprand((5, 40), 0.9)
    np.testing.assert_allclose(dense(spgemm(A, B)), A @ B)  # no products at all
    A = sprand((6, 5), 0.9)
    np.testing.assert_allclose(dense(spgemm(A, B)), A @ B)  # rows dense in their extent


def test_workspace_bound_only_for_gustavson_shape():
    A, B = sprand((12, 9), 0.4), sprand((9, 14), 0.4)
    A[4] = 0
    body = agg("add", 0, Reorder(mj("multiply", acc("A", "i", "j"), acc("B", "j", "k")),
                                 F("i", "j", "k")), "j")
    for fa, fb, bounded in (("csr", "dense", False), ("coo", "csr", False),
                            ("dcsr", "csr", True), ("csr", "csr", True)):
        env = {Alias("A"): tensor(A, fa), Alias("B"): tensor(B, fb)}
        q = compute("out", "csr", 2, body)
        k = ex.compile_query(q, env)
        assert (k.lowered.ws_bound is not None) is bounded, (fa, fb)
        out = execute_plan(plan({"A": env[Alias("A")], "B": env[Alias("B")]}, q))[0]
        np.testing.assert_allclose(dense(out), A @ B)


@pytest.mark.parametrize("fmt", ["csr", "coo", "dcsr"])
def test_sparse_add_rows_with_gaps(fmt):
    A, B = sprand((30, 12), 0.3), sprand((30, 12), 0.3)
    A[5:9] = 0
    B[5:9] = 0
    B[20:] = 0
    out = execute_plan(plan({"A": tensor(A, fmt), "B": tensor(B, fmt)},
                            compute("out", "csr", 2, Reorder(mj(
                                "add", acc("A", "i", "j"), acc("B", "i", "j")), F("i", "j")))))[0]
    np.testing.assert_allclose(dense(out), A + B)


@pytest.mark.parametrize("init", [0.0, -0.0, 2.5])
def test_one_chunk_partials_combine(init):
    A, y = sprand((50, 30)), RNG.random(50)
    body = agg("add", init, Reorder(mj("multiply", acc("A", "i", "j"), acc("y", "i")),
                                    F("i", "j")), "i")
    env = {Alias("A"): tensor(A, "csr"), Alias("y"): tensor(y)}
    q = compute("out", "dense", 1, body)
    out = execute_plan(plan({"A": env[Alias("A")], "y": env[Alias("y")]}, q))[0]
    assert "fastmath" not in ex.compile_query(q, env).source  # a scatter, no scalar sum
    ref = init + A.T @ y
    np.testing.assert_allclose(dense(out), ref)
    empty = dense(out)[~A.any(axis=0)]
    assert all(np.signbit(v) == np.signbit(np.float64(init) + 0.0) for v in empty)


def test_dense_output_without_preset_and_reassoc_flags():
    A, x = sprand((64, 33)), RNG.random(33)
    A[10] = 0  # a row with no entries still gets its init
    body = agg("add", 0.5, Reorder(mj("multiply", acc("A", "i", "j"), acc("x", "j")),
                                   F("i", "j")), "j")
    env = {Alias("A"): tensor(A, "csr"), Alias("x"): tensor(x)}
    q = compute("out", "dense", 1, body)
    out = execute_plan(plan({"A": env[Alias("A")], "x": env[Alias("x")]}, q))[0]
    np.testing.assert_allclose(dense(out), 0.5 + A @ x)
    k = ex.compile_query(q, env)
    assert host._writes_every_output(k.lowered)  # noqa: SLF001
    assert nk.reassoc_ok(k.info) and "fastmath={'reassoc'}" in k.source


@pytest.mark.parametrize("op,ok", [("add", False), ("maximum", False), ("multiply", True)])
def test_reassoc_only_for_sums_of_products(op, ok):
    A, B = sprand((8, 6)), sprand((8, 6))
    body = agg("add", 0.0, Reorder(mj(op, acc("A", "i", "j"), acc("B", "i", "j")),
                                   F("i", "j")), "j")
    env = {Alias("A"): tensor(A, "csr"), Alias("B"): tensor(B, "csr")}
    q = compute("out", "dense", 1, body)
    out = execute_plan(plan({"A": env[Alias("A")], "B": env[Alias("B")]}, q))[0]
    ref = {"add": A + B, "maximum": np.maximum(A, B), "multiply": A * B}[op].sum(axis=1)
    np.testing.assert_allclose(dense(out), ref)
    k = ex.compile_query(q, env)
    assert nk.reassoc_ok(k.info) is ok
    assert ("fastmath={'reassoc'}" in k.source) is ok


def test_nan_inf_propagate_under_reassoc():
    S = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])
    U = np.array([[np.inf, 1.0], [np.nan, 2.0]])
    V = np.array([[1.0, 1.0], [0.0, 1.0], [-1.0, 2.0]])
    body = agg("add", 0.0, Reorder(mj("multiply", acc("S", "i", "j"), acc("U", "i", "k"),
                                      acc("V", "j", "k")), F("i", "j", "k")), "k")
    out = execute_plan(plan({"S": tensor(S, "csr"), "U": tensor(U), "V": tensor(V)},
                            compute("out", "csr", 2, body)))[0]
    with np.errstate(invalid="ignore"):
        ref = S * (U @ V.T)
    got = dense(out)
    np.testing.assert_array_equal(np.isnan(got[S != 0]), np.isnan(ref[S != 0]))
    np.testing.assert_array_equal(got[S != 0][~np.isnan(ref[S != 0])],
                                  ref[S != 0][~np.isnan(ref[S != 0])])


def transposed_spmv(A, v, fa="csr"):
    """``A.T @ v``: rows of ``A`` scattered into a sparse vector (a workspace at loop 0)."""
    body = agg("add", 0, Reorder(mj("multiply", acc("A", "i", "j"), acc("v", "i")),
                                 F("i", "j")), "i")
    return execute_plan(plan({"A": tensor(A, fa), "v": tensor(v, "dense")},
                             compute("out", "csf", 1, body)))[0]


@pytest.mark.parametrize("cols", [0, 3, 40])
def test_scattered_vector_single_pass_skips_count(cols, single_passes):
    """A vector result written through a workspace (``A.T @ v`` with empty columns: issue
    36's zipf text) is bounded by its length: one fill pass, no count pass over the
    matrix; cancelled sums are still dropped."""
    A = sprand((50, 60), 0.1)
    A[:, cols:cols + 10] = 0.0  # empty columns: a sparse vector result
    A[7, 5], A[8, 5] = 1.0, -1.0  # column 5 cancels against v = 1 there
    v = np.ones(50)
    out = transposed_spmv(A, v)
    want = A.T @ v
    np.testing.assert_allclose(dense(out), want, atol=1e-12)
    assert out.nnz == int(np.count_nonzero(want))
    assert len(single_passes) == 1 and not single_passes[0].lowered.output.dense_prefix


def test_scattered_vector_counts_first_past_the_slack(monkeypatch, single_passes):
    """A vector much longer than the operands' stored entries is counted first (its
    buffers would be mostly unused address space)."""
    monkeypatch.setattr(host, "SINGLE_PASS_SLACK", 0)
    monkeypatch.setattr(host, "SINGLE_PASS_MIN", 0)
    A = sprand((30, 40), 0.1)
    np.testing.assert_allclose(dense(transposed_spmv(A, np.ones(30))), A.T @ np.ones(30),
                               atol=1e-12)
    assert not single_passes
