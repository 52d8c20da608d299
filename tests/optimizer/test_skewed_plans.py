"""Golden plans on skewed inputs (issue 36): zipf term counts and Chung–Lu power-law
graphs. Checked by structure (``xp.explain``: loop order, output format, workspace kind,
the work estimate) and by value against NumPy on the dense equivalents."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.engine.explain import KernelExplanation
from lazysparse.kernels.compile.planning.output_plan import OutputMode
from tests.optimizer.skewed_data import chung_lu, row_normalized, zipf_terms

TN = row_normalized(zipf_terms(2000, 3000, 40_000, seed=5))
G = chung_lu(3000, 8, seed=6)


def _product_kernel(e: object) -> KernelExplanation:
    """The last kernel of an explanation (the product; earlier ones are copies)."""
    return e.kernels[-1]  # type: ignore[attr-defined]


def _mode(k: KernelExplanation) -> OutputMode:
    assert k.decisions is not None
    return k.decisions.layout_plan().output.mode


def test_cosine_block_of_zipf_text_is_dense_and_sized_exactly() -> None:
    t = xp.asarray(TN)
    k = _product_kernel(xp.explain(t[:50] @ t.T))
    assert k.output_format.name == "dense" and _mode(k) is OutputMode.DENSE
    # the work of sum_t B[i,t] T[j,t] is sum_t colB(t) colT(t), exact from the degrees
    block = TN[:50]
    exact = (np.diff(block.tocsc().indptr) * np.diff(TN.tocsc().indptr)).sum()
    assert k.estimate is not None and k.estimate.work == pytest.approx(exact)
    ref = TN[:50].toarray() @ TN.toarray().T
    assert np.count_nonzero(ref) > 0.5 * ref.size  # the reason it is dense
    assert k.estimate.entries == pytest.approx(np.count_nonzero(ref), rel=0.1)
    np.testing.assert_allclose(xp.to_numpy(t[:50] @ t.T), ref, atol=1e-12)


def test_uniform_data_of_the_same_size_keeps_its_sparse_plan() -> None:
    u = row_normalized(sp.random_array((2000, 3000), density=40_000 / 6e6, rng=5,
                                       format="csr"))
    t = xp.asarray(u)
    k = _product_kernel(xp.explain(t[:50] @ t.T))
    assert k.output_format.name != "dense"
    ref = u[:50].toarray() @ u.toarray().T
    np.testing.assert_allclose(xp.to_numpy(t[:50] @ t.T), ref, atol=1e-12)


def test_rows_of_a_power_law_graph_times_it_stay_sparse_through_a_row_workspace() -> None:
    a = xp.asarray(G)
    e = a[:100] @ a
    k = _product_kernel(xp.explain(e))
    ref = G[:100].toarray() @ G.toarray()
    assert np.count_nonzero(ref) < 0.5 * ref.size
    assert k.output_format.name == "csr" and _mode(k) is OutputMode.ROWWS
    assert k.loop_order[0] == "i0"  # the block's rows outermost (Gustavson)
    r = xp.compute(e)
    assert r.format == "csr"
    np.testing.assert_allclose(xp.to_numpy(r), ref)


@pytest.mark.slow
def test_two_hop_and_triangles_of_a_power_law_graph() -> None:
    a, d = xp.asarray(G), G.toarray()
    two = xp.compute(a @ a)
    ref = d @ d
    assert (two.format == "dense") == (np.count_nonzero(ref) > 0.5 * ref.size)
    np.testing.assert_allclose(xp.to_numpy(two), ref)
    tri = xp.compute(xp.sum(a * (a @ a)))
    assert float(tri) == pytest.approx((d * (d @ d)).sum())


def test_dense_self_similarity_of_zipf_documents_is_stored_dense() -> None:
    d = zipf_terms(300, 3000, 6000, seed=7)
    x = xp.asarray(d)
    ref = d.toarray() @ d.toarray().T
    assert np.count_nonzero(ref) > 0.5 * ref.size
    r = xp.compute(x @ x.T)
    assert r.format == "dense"
    np.testing.assert_allclose(xp.to_numpy(r), ref)


@pytest.mark.slow
def test_co_occurrence_and_transposed_vector_products_of_zipf_text() -> None:
    d = zipf_terms(2000, 3000, 40_000, seed=8)
    x, dd = xp.asarray(d), d.toarray()
    co = xp.compute(x.T @ x)
    ref = dd.T @ dd
    assert (co.format == "dense") == (np.count_nonzero(ref) > 0.5 * ref.size)
    np.testing.assert_allclose(xp.to_numpy(co), ref)
    v = np.random.default_rng(9).random(2000)
    np.testing.assert_allclose(xp.to_numpy(x.T @ xp.asarray(v)), dd.T @ v)


def test_row_normalization_of_zipf_text_stays_sparse() -> None:
    d = zipf_terms(2000, 3000, 40_000, seed=10)
    x = xp.asarray(d)
    r = xp.compute(x / xp.sqrt(xp.sum(x * x, axis=1))[:, None])
    assert r.format != "dense" and r.nnz == d.nnz
    dd = d.toarray()
    norms = np.sqrt((dd * dd).sum(axis=1))[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        ref = np.where(dd != 0, dd / norms, 0.0)
    np.testing.assert_allclose(np.nan_to_num(xp.to_numpy(r)), ref)


def test_the_plan_cache_tells_skewed_from_uniform_inputs() -> None:
    # same shape and density: only the degrees differ, and so must the cached plans
    u = row_normalized(sp.random_array(TN.shape, density=TN.nnz / np.prod(TN.shape), rng=11,
                                       format="csr"))
    assert u.nnz == TN.nnz
    for m in (u, TN, u):
        t = xp.asarray(m)
        r = xp.compute(t[:40] @ t.T)
        ref = m[:40].toarray() @ m.toarray().T
        assert (r.format == "dense") == (m is TN)
        np.testing.assert_allclose(xp.to_numpy(r), ref, atol=1e-12)


def test_a_cosine_block_fused_with_its_normalization_is_sized_by_degrees() -> None:
    # the normalized rows are not stored: the product reads (D / |D|) of stored D
    d = zipf_terms(2000, 3000, 40_000, seed=5)
    x = xp.asarray(d)
    tn = x / xp.sqrt(xp.sum(x * x, axis=1))[:, None]
    k = _product_kernel(xp.explain(tn[:50] @ tn.T))
    assert k.output_format.name == "dense"
    exact = (np.diff(d[:50].tocsc().indptr) * np.diff(d.tocsc().indptr)).sum()
    assert k.estimate is not None and k.estimate.work == pytest.approx(exact)
    ref = row_normalized(d)
    np.testing.assert_allclose(xp.to_numpy(tn[:50] @ tn.T),
                               ref[:50].toarray() @ ref.toarray().T, atol=1e-12)


def test_explain_run_shows_the_actual_entries_next_to_the_estimate() -> None:
    a = xp.asarray(G)
    e = a[:100] @ a
    k = _product_kernel(xp.explain(e, run=True))
    ref = G[:100] @ G
    assert k.estimate is not None and k.estimate.actual_entries == ref.nnz
    assert f"actual: {ref.nnz} stored entries" in str(k)
    assert xp.explain(e).kernels[-1].estimate.actual_entries is None  # type: ignore[union-attr]
    assert e.result is None  # explaining computes nothing the array keeps


def _product_work(a: sp.csr_array, b: sp.csr_array) -> float:
    """Products of ``a @ b``: ``sum_t colnnz_a(t) * rownnz_b(t)``."""
    return float((np.diff(sp.csc_array(a).indptr) * np.diff(sp.csr_array(b).indptr)).sum())


def _estimate_cases() -> list[tuple[str, object, float, float]]:
    """(name, lazy expression, the product kernel's actual work, its actual nonzeros)."""
    d = zipf_terms(2000, 3000, 40_000, seed=15)
    x, a = xp.asarray(d), xp.asarray(G)
    b = (G != 0).astype(np.float64)
    v = np.random.default_rng(16).random(2000)
    w = np.random.default_rng(17).random(G.shape[0])
    return [
        ("cosine block", x[:100] @ x.T, _product_work(d[:100], d.T), (d[:100] @ d.T).nnz),
        ("co-occurrence", x.T @ x, _product_work(d.T, d), (d.T @ d).nnz),
        ("D @ D.T", x[:300] @ x[:300].T, _product_work(d[:300], d[:300].T),
         (d[:300] @ d[:300].T).nnz),
        ("D.T @ v", x.T @ xp.asarray(v), float(d.nnz), np.count_nonzero(d.T @ v)),
        ("A[:100] @ A", a[:100] @ a, _product_work(G[:100], G), (G[:100] @ G).nnz),
        ("A.T @ w", a.T @ xp.asarray(w), float(G.nnz), np.count_nonzero(G.T @ w)),
        ("2-hop", a @ a, _product_work(G, G), (G @ G).nnz),
        ("triangles", xp.sum(a * (a @ a)), float((b * (b @ b)).sum()), 1),
    ]


@pytest.mark.parametrize("case", range(8))
def test_every_kernel_is_estimated_within_ten_times_on_skewed_data(case: int) -> None:
    # issue 36's target: no kernel's estimated work or output entries off by more than 10x
    name, expr, work, nonzeros = _estimate_cases()[case]
    kernels = xp.explain(expr, run=True).kernels  # type: ignore[attr-defined]
    for k in kernels:
        est = k.estimate
        assert est is not None and est.actual_entries is not None
        assert est.actual_entries / 10 <= est.entries <= 10 * max(est.actual_entries, 1), (
            name, k.alias, est.entries, est.actual_entries)
    product = kernels[-1].estimate
    assert work / 10 <= product.work <= 10 * work, (name, product.work, work)
    # against the true nonzeros (scipy's) too; a sparse result stores exactly those
    assert nonzeros / 10 <= product.entries <= 10 * max(nonzeros, 1), (name, product.entries)
    if kernels[-1].output_format.name != "dense":
        assert product.actual_entries == nonzeros, (name, product.actual_entries, nonzeros)
