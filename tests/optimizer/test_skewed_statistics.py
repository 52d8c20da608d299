"""Degree statistics of stored tensors (``formats.statistics``, issue 36): degree vectors
per axis against NumPy counts for each layout, cached once per tensor, the heaviest
coordinates, dispersion telling skewed from uniform data, and the degree estimates
(``optimizer.degrees``) against exact counts."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from lazysparse.formats import Tensor
from lazysparse.formats.statistics import statistics
from lazysparse.logic.nodes import Field
from lazysparse.optimizer import degrees
from lazysparse.optimizer.degrees import SKEW_DISPERSION, StatsView, intersection_probability
from tests.optimizer.skewed_data import chung_lu, zipf_terms

DENSE = np.where(np.random.default_rng(3).random((40, 30)) < 0.15,
                 np.random.default_rng(4).random((40, 30)) + 0.5, 0.0)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "dcsr"])
def test_degrees_count_stored_entries_per_coordinate(fmt: str) -> None:
    t = Tensor.from_numpy(DENSE, format=fmt)
    stats = statistics(t)
    assert stats.nnz == np.count_nonzero(DENSE) and stats.shape == DENSE.shape
    np.testing.assert_array_equal(stats.degrees(0), np.count_nonzero(DENSE, axis=1))
    np.testing.assert_array_equal(stats.degrees(1), np.count_nonzero(DENSE, axis=0))
    assert stats.max_degree(0) == np.count_nonzero(DENSE, axis=1).max()
    assert stats.mean_degree(1) == pytest.approx(np.count_nonzero(DENSE) / 30)
    assert sum(stats.level_entries[-1:]) == np.count_nonzero(DENSE) or fmt == "coo"


def test_statistics_are_computed_once_per_tensor() -> None:
    t = Tensor.from_numpy(DENSE, format="csr")
    assert statistics(t) is statistics(t)
    assert statistics(t).degrees(1) is statistics(t).degrees(1)
    assert statistics(Tensor.from_numpy(DENSE, format="csr")) is not statistics(t)


def test_heaviest_coordinates_come_first() -> None:
    cols = np.count_nonzero(DENSE, axis=0)
    t = Tensor.from_numpy(DENSE, format="csr")
    heavy = statistics(t).heaviest(1, 3)
    assert [d for _, d in heavy] == sorted(cols, reverse=True)[:3]
    assert all(cols[c] == d for c, d in heavy)


def test_a_hypersparse_axis_keeps_no_degree_vector() -> None:
    m = sp.csr_array((np.ones(2), ([0, 1], [5, 10**9 - 1])), shape=(2, 10**9))
    t = Tensor.from_scipy(m)
    stats = statistics(t)
    assert stats.degrees(1) is None and stats.max_degree(1) is None
    np.testing.assert_array_equal(stats.degrees(0), [1, 1])
    with pytest.raises(IndexError, match="axis 2"):
        stats.degrees(2)


def test_dispersion_separates_skewed_from_uniform_data() -> None:
    tz = Tensor.from_scipy(zipf_terms(2000, 3000, 40_000))
    tu = Tensor.from_scipy(sp.random_array((2000, 3000), density=0.0067, rng=0, format="csr"))
    zipf, uniform = statistics(tz), statistics(tu)
    assert zipf.dispersion(1) > 100 * SKEW_DISPERSION  # terms: zipf
    assert zipf.dispersion(0) < SKEW_DISPERSION  # documents: uniform
    assert uniform.dispersion(0) < SKEW_DISPERSION and uniform.dispersion(1) < SKEW_DISPERSION


_KEEP: list[Tensor] = []  # the statistics read their tensors weakly


def _view(m: sp.csr_array) -> StatsView:
    _KEEP.append(Tensor.from_scipy(m))
    return StatsView(statistics(_KEEP[-1]), (0, 1))


def test_a_dropped_tensor_leaves_its_degrees_unknown() -> None:
    stats = statistics(Tensor.from_numpy(DENSE, format="csr"))
    assert stats.nnz == np.count_nonzero(DENSE) and stats.degrees(0) is None


def test_contraction_work_is_exact_from_degrees() -> None:
    # sum_t A[i,t] B[t,j]: every (i, t, j) with both entries stored, sum_t colA(t) rowB(t)
    a, g = zipf_terms(300, 500, 6000, seed=1), chung_lu(500, 8, seed=2)
    i, t, j = Field("i"), Field("t"), Field("j")
    sizes = {i: 300, t: 500, j: 500}
    exact = float((np.diff(a.tocsc().indptr) * np.diff(g.indptr)).sum())
    p = intersection_probability([((i, t), _view(a)), ((t, j), _view(g))], {i, t, j}, sizes)
    assert p is not None and p * 300 * 500 * 500 == pytest.approx(exact)
    # bound (i, t): entries of A whose column meets a stored row of B
    da, dg = (a.toarray() != 0), (g.toarray() != 0)
    p_it = intersection_probability([((i, t), _view(a)), ((t, j), _view(g))], {i, t}, sizes)
    assert p_it * 300 * 500 == pytest.approx((da & dg.any(axis=1)[None, :]).sum())
    # bound (i, j): the output's entries, estimated within a factor 1.5
    p_ij = intersection_probability([((i, t), _view(a)), ((t, j), _view(g))], {i, j}, sizes)
    actual = np.count_nonzero(da.astype(float) @ dg.astype(float))
    assert actual / 1.5 < p_ij * 300 * 500 < actual * 1.5


def test_a_non_star_or_uniform_intersection_is_left_to_the_uniform_model() -> None:
    a = zipf_terms(300, 500, 6000, seed=1)
    i, t = Field("i"), Field("t")
    sizes = {i: 300, t: 500}
    # elementwise A * A shares both fields: not a star
    assert intersection_probability([((i, t), _view(a)), ((i, t), _view(a))], {i, t},
                                    sizes) is None
    u = sp.random_array((300, 500), density=0.04, rng=0, format="csr")
    j = Field("j")
    assert intersection_probability([((i, t), _view(u)), ((j, t), _view(u))], {i, t, j},
                                    {**sizes, j: 300}) is None


def test_a_hypersparse_coo_axis_is_skipped_when_its_other_axes_are_counted() -> None:
    coords = (np.array([0, 1, 1]), np.array([3, 10**9 - 1, 7]), np.array([0, 0, 1]))
    t = Tensor.from_coords(coords, np.ones(3), (2, 10**9, 2), format="coo")
    stats = statistics(t)
    np.testing.assert_array_equal(stats.degrees(2), [2, 1])
    np.testing.assert_array_equal(stats.degrees(0), [1, 2])
    assert stats.degrees(1) is None


def test_co_occurrence_entries_follow_the_skewed_leaves() -> None:
    # X.T @ X: documents (the center) uniform, terms (the leaves) zipf; independent leaves
    # counted heavy pairs many times over (2.5x too many entries at 20k x 30k)
    x = zipf_terms(2000, 3000, 40_000, seed=12)
    i, t, j = Field("i"), Field("t"), Field("j")
    sizes = {i: 3000, t: 2000, j: 3000}
    accs = [((t, i), _view(x)), ((t, j), _view(x))]
    actual = (x.T @ x).nnz
    assert actual == np.count_nonzero(x.toarray().T @ x.toarray())
    p = intersection_probability(accs, {i, j}, sizes)
    assert p is not None and actual / 1.2 < p * 3000 * 3000 < actual * 1.2
    work = float((np.diff(x.indptr).astype(np.float64) ** 2).sum())
    p_all = intersection_probability(accs, {i, t, j}, sizes)
    assert p_all is not None and p_all * 3000 * 2000 * 3000 == pytest.approx(work)


def test_triangle_work_of_a_power_law_graph_is_within_a_few_times_the_count() -> None:
    g = chung_lu(3000, 8, seed=13)
    d = g.toarray()
    i, j, k = Field("i"), Field("j"), Field("k")
    sizes = {i: 3000, j: 3000, k: 3000}
    accs = [((i, j), _view(g)), ((i, k), _view(g)), ((k, j), _view(g))]
    triples = float((d * (d @ d)).sum())  # (i, j, k) with all three stored: 6 x triangles
    p = intersection_probability(accs, {i, j, k}, sizes)
    assert p is not None and triples / 5 < p * 3000**3 < triples * 5
    # a uniform graph's triangle is left to the uniform model
    u = sp.random_array((3000, 3000), density=8 / 3000, rng=0, format="csr")
    assert intersection_probability([((i, j), _view(u)), ((i, k), _view(u)),
                                     ((k, j), _view(u))], {i, j, k}, sizes) is None


def test_the_rank_one_estimate_of_a_star_is_computed_once_per_statistics() -> None:
    # one optimization asks the same star for every loop-order candidate: the grouping of
    # the degrees (O(extent)) runs once, the answer is the same
    x = zipf_terms(2000, 3000, 40_000, seed=14)
    view = _view(x)
    first = None
    for name in ("a", "b"):  # renamed fields: the same star
        i, t, j = Field(f"i{name}"), Field(f"t{name}"), Field(f"j{name}")
        p = intersection_probability([((t, i), view), ((t, j), view)], {i, j},
                                     {i: 3000, t: 2000, j: 3000})
        first = p if first is None else first
        assert p == first
    assert len(degrees._RANK_ONE[view.stats]) == 1
