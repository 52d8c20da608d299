"""Exact counts of products of two different stored tensors (issue 36): where degree
statistics sized a product, its estimate is unsure and the count is cheap next to it, a
symbolic row-by-row count decides its format; checked against scipy's stored entries and
density (dense above 50 %) and against NumPy's values on the dense equivalents."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.engine.plan_cache import clear_plan_cache
from lazysparse.formats import Tensor
from lazysparse.formats.pattern_counts import native_axis
from lazysparse.kernels.compile.planning.output_plan import OutputMode
from lazysparse.optimizer import exact_counts
from lazysparse.optimizer.exact_counts import COUNT_WORK_RATIO, CountKind
from lazysparse.optimizer.pattern_memo import clear_pattern_counts
from tests.conftest import slow_except
from tests.optimizer.skewed_data import chung_lu, community_terms, row_normalized, zipf_terms

# three communities: the heavy terms of one never meet another's documents (33 % dense
# against all, an estimate assuming independence says 61 %)
COMMUNITY = community_terms(2000, 3000, 30_000, 3, seed=1)
# one vocabulary, flatter zipf: the same plan key as COMMUNITY (shape, density bucket and
# skew signature of both operands), its block against all 58 % dense
SHARED = community_terms(2000, 3000, 25_000, 1, seed=1, exponent=0.85)
G, H = chung_lu(3000, 8, seed=6), chung_lu(3000, 8, seed=7)


def _last_kernel(e: Any) -> Any:
    return xp.explain(e).kernels[-1]


def _check(got: Any, want: sp.sparray, case: str) -> None:
    """Stored dense iff scipy's result is over half dense; a sparse result stores scipy's
    nonzeros; the values are NumPy's on the dense operands."""
    r = xp.compute(got)
    want = sp.csr_array(want)
    density = want.count_nonzero() / np.prod(want.shape)
    assert (r.format == "dense") == (density > 0.5), (case, r.format, density)
    if r.format != "dense":
        assert r.nnz == want.count_nonzero(), (case, r.nnz)
    np.testing.assert_allclose(xp.to_numpy(r), want.toarray(), atol=1e-12, err_msg=case)


def test_a_block_of_community_documents_is_counted_sparse() -> None:
    x = xp.asarray(COMMUNITY)
    est = _last_kernel(x[:300] @ x.T).estimate
    want = COMMUNITY[:300] @ COMMUNITY.T
    assert est.density > 0.5  # the degree estimate alone would store it dense
    assert est.exact is not None and est.exact.kind is CountKind.PAIR
    assert est.exact.entries == want.count_nonzero() and not est.exact.dense
    _check(x[:300] @ x.T, want, "community block")


def test_a_block_counted_sparse_loops_over_its_rows_through_a_row_workspace() -> None:
    # the loop orders are priced with the count's verdict: the estimate's dense result
    # would take the documents outermost and scatter every product into a sort buffer
    x = xp.asarray(COMMUNITY)
    k = _last_kernel(x[:300] @ x.T)
    assert k.output_format.name == "csr"
    assert k.decisions.layout_plan().output.mode is OutputMode.ROWWS


def _cases() -> list[tuple[str, Any, sp.sparray]]:
    tn = row_normalized(zipf_terms(2000, 3000, 40_000, seed=5))
    d = zipf_terms(2000, 3000, 40_000, seed=15)
    t, x, c, s = (xp.asarray(m) for m in (tn, d, COMMUNITY, SHARED))
    a, b = xp.asarray(G), xp.asarray(H)
    return [
        ("cosine block Tn[:200] @ Tn.T", t[:200] @ t.T, tn[:200] @ tn.T),
        ("D @ D.T", x[:300] @ x[:300].T, d[:300] @ d[:300].T),
        ("zipf X[:300] @ Y.T", s[:300] @ c.T, SHARED[:300] @ COMMUNITY.T),
        ("zipf shared block", s[:300] @ s.T, SHARED[:300] @ SHARED.T),
        ("graph A[:100] @ A", a[:100] @ a, G[:100] @ G),
        ("graph A[:100] @ B", a[:100] @ b, G[:100] @ H),
        ("graph A[:400] @ B", a[:400] @ b, G[:400] @ H),
        ("graph A @ B", a @ b, G @ H),
    ]


@pytest.mark.parametrize("case", slow_except(range(8), range(7)))  # 7: the largest
def test_products_of_two_skewed_tensors_take_scipys_format(case: int) -> None:
    name, got, want = _cases()[case]
    exact = _last_kernel(got).estimate.exact
    if exact is not None:  # a count that decided is scipy's structural count
        assert exact.entries == sp.csr_array(want).count_nonzero(), name
    _check(got, want, name)


def test_a_count_is_skipped_where_it_costs_about_the_product_or_the_format_is_certain(
) -> None:
    tn = row_normalized(zipf_terms(2000, 3000, 40_000, seed=5))
    t = xp.asarray(tn)
    work = float((np.diff(tn[:200].tocsc().indptr) * np.diff(tn.tocsc().indptr)).sum())
    assert work > COUNT_WORK_RATIO * 200 * 2000  # the count would walk as much as the product
    k = _last_kernel(t[:200] @ t.T)
    assert k.estimate.exact is None and k.output_format.name == "dense"
    a, b = xp.asarray(G), xp.asarray(H)  # work under half the result: surely sparse
    assert float((np.diff(G[:400].tocsc().indptr) * np.diff(H.indptr)).sum()) < 0.5 * 400 * 3000
    k = _last_kernel(a[:400] @ b)
    assert k.estimate.exact is None and k.output_format.name != "dense"


def test_uniform_operands_keep_the_estimate_and_its_thresholds() -> None:
    u = sp.random_array((2000, 3000), density=0.006, rng=5, format="csr")
    t = xp.asarray(u)
    assert _last_kernel(t[:50] @ t.T).estimate.exact is None
    _check(t[:50] @ t.T, u[:50] @ u.T, "uniform block")


def test_a_pair_is_counted_once_per_pair_of_tensors(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    count = exact_counts.product_pattern_entries

    def counting(*args: Any) -> int:
        calls.append(1)
        return count(*args)

    monkeypatch.setattr(exact_counts, "product_pattern_entries", counting)
    clear_pattern_counts()  # COMMUNITY's pattern may be counted by an earlier test
    c = xp.asarray(COMMUNITY)
    block = c[:300]
    xp.compute(block @ c.T)
    assert len(calls) == 1  # the loop-order candidates and the cache's verdict share it
    clear_plan_cache()
    xp.compute(block @ c.T)
    assert len(calls) == 1  # memoized with both tensors' statistics


@pytest.mark.parametrize("community_first", [True, False])
def test_the_plan_cache_keeps_each_pairs_counted_format(community_first: bool) -> None:
    # one plan key (shape, density bucket, skew of both operands), two verdicts
    clear_plan_cache()
    data = [COMMUNITY, SHARED] if community_first else [SHARED, COMMUNITY]
    for _ in range(2):
        for m in data:
            x = xp.asarray(m)
            _check(x[:300] @ x.T, m[:300] @ m.T, f"{m.nnz} entries")


def test_native_axis_is_a_csr_like_tensors_outer_axis() -> None:
    m = sp.random_array((5, 4), density=0.5, rng=1, format="csr")
    t = Tensor.from_scipy(m)
    assert native_axis(t) == 0
    assert native_axis(t.asformat("csc")) == 1
    assert native_axis(t.asformat("coo")) is None


def test_repeated_slice_counts_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A slice taken again (a new tensor, new statistics) reuses its pattern's count
    (``optimizer.pattern_memo``); another pattern of the same shape is counted anew."""
    calls: list[int] = []
    orig = exact_counts._count

    def spy(a: Any, b: Any) -> int:
        calls.append(1)
        return orig(a, b)

    monkeypatch.setattr(exact_counts, "_count", spy)
    clear_pattern_counts()
    c = community_terms(2000, 3000, 30_000, 3, seed=21)
    lc = xp.asarray(c)
    clear_plan_cache()
    for _ in range(3):
        _check(lc[:300] @ lc.T, c[:300] @ c.T, "community block")
    assert len(calls) == 1
    other = community_terms(2000, 3000, 30_000, 3, seed=22)
    lo = xp.asarray(other)
    clear_plan_cache()
    _check(lo[:300] @ lo.T, other[:300] @ other.T, "another community block")
    assert len(calls) == 2
