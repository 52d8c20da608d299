"""A product read by another product (docs/api.md, "The fill rule"): the inner product's
unreached entries are implicit, so they annihilate what the outer product multiplies them
by (``(A @ B) @ (S * D)`` is 0 there even where ``D`` holds inf) and a map over them folded
into the outer product's argument (``(a @ X) * ((B @ C) / D)``) is the map's fill there.
Reached entries, a sum that cancels to 0 included, are data (0 * inf is NaN). The compiled
tier agrees with the reference interpreter and with NumPy on the dense equivalent; a plan
the plan cache reuses with other data stays right (the finiteness of the tables a format
depends on is part of the cache key: ``unreached.finiteness_verdicts``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lazysparse as xp
from lazysparse.engine import plan_cache
from tests.conftest import examples

from .test_random_expressions import _executor

EXAMPLES = examples(100)
SPARSE_VALUES = (0.0, 0.0, 0.0, 1.0, 2.0, -1.0)  # -1: sums that cancel to 0 (data)
DENSE_VALUES = (0.0, 1.0, -2.0, 0.5, np.inf, -np.inf, np.nan)
FORMATS = ("csr", "csc", "coo", "dense")


def reached(a: np.ndarray, b: np.ndarray, fmt: str) -> np.ndarray:
    """Where some stored product reaches ``a @ b`` (everywhere for dense operands)."""
    if fmt == "dense":
        return np.ones((a.shape[0], b.shape[1]), dtype=bool)
    return ((a != 0).astype(np.int64) @ (b != 0).astype(np.int64)) > 0


def fold(p: np.ndarray, hit: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``p @ x`` where only ``p``'s reached entries (``hit``) take part (NumPy, IEEE)."""
    with np.errstate(all="ignore"):
        return np.where(hit[:, :, None], p[:, :, None] * x[None, :, :], 0.0).sum(axis=1)


def both(build: Callable[[], Any]) -> list[np.ndarray]:
    """``build()`` computed compiled and by the reference interpreter."""
    out = []
    for executor in (None, "reference"):
        with _executor(executor), np.errstate(all="ignore"):
            out.append(np.asarray(xp.compute(build())))
    return out


def check(build: Callable[[], Any], want: np.ndarray, what: str) -> None:
    for got, tier in zip(both(build), ("compiled", "reference"), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True,
                                   err_msg=f"{tier}: {what}")


@dataclass(frozen=True)
class Chain:
    """``(A @ B) @ X`` with ``X`` dense (``D``) or a sparse ``S`` times ``D``."""

    a: np.ndarray
    b: np.ndarray
    s: np.ndarray
    d: np.ndarray
    fmt: str
    masked: bool

    def build(self) -> Any:
        p = xp.asarray(self.a, format=self.fmt) @ xp.asarray(self.b, format=self.fmt)
        x = xp.asarray(self.d)
        return p @ (xp.asarray(self.s, format="csr") * x if self.masked else x)

    def expected(self) -> np.ndarray:
        with np.errstate(all="ignore"):
            x = np.where(self.s != 0, self.s * self.d, 0.0) if self.masked else self.d
        return fold(self.a @ self.b, reached(self.a, self.b, self.fmt), x)


def _matrix(draw: st.DrawFn, shape: tuple[int, int], values: tuple[float, ...]) -> np.ndarray:
    vals = draw(st.lists(st.sampled_from(values), min_size=shape[0] * shape[1],
                         max_size=shape[0] * shape[1]))
    return np.array(vals, dtype=np.float64).reshape(shape)


@st.composite
def chains(draw: st.DrawFn) -> Chain:
    m, k, n, q = (draw(st.integers(1, 4)) for _ in range(4))
    a = _matrix(draw, (m, k), SPARSE_VALUES)
    a[draw(st.integers(0, m - 1))] = 0.0  # an empty row: a row of A @ B is unreached
    return Chain(a, _matrix(draw, (k, n), SPARSE_VALUES), _matrix(draw, (n, q), SPARSE_VALUES),
                 _matrix(draw, (n, q), DENSE_VALUES), draw(st.sampled_from(FORMATS)),
                 draw(st.booleans()))


@pytest.mark.slow  # random chains: the full suite; the fast tier keeps the cases below
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=chains())
def test_product_of_a_product_annihilates_where_unreached(case: Chain) -> None:
    check(case.build, case.expected(), repr(case))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("where", ["stored", "unreached"])
@pytest.mark.parametrize("special", [np.inf, -np.inf, np.nan])
def test_non_finite_next_to_a_product(fmt: str, where: str, special: float) -> None:
    """``(A @ B) @ D``: a non-finite ``D[k]`` meets a reached row of ``A @ B`` (IEEE: inf
    or NaN in the result) or only its unreached row (0), in every operand format."""
    a = np.array([[1.0, 1.0], [0.0, 0.0], [1.0, -1.0]])
    b = np.array([[1.0, 0.0, 1.0], [1.0, 0.0, 1.0]])  # A @ B: rows 0, 2 of columns 0, 2
    d = np.ones((3, 2))
    d[2 if where == "stored" else 1, 0] = special  # column 1 of A @ B is never reached
    case = Chain(a, b, np.ones((3, 2)), d, fmt, False)
    want = case.expected()
    assert np.isfinite(want).all() == (where == "unreached" and fmt != "dense")
    check(case.build, want, f"{fmt} {where} {special}")


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("op", ["divide", "multiply"])
def test_map_of_a_product_folded_into_another(fmt: str, op: str) -> None:
    """``(a @ X) * ((B @ C) / D)`` and ``(a @ X) * ((B @ C) * E)``: the map over the
    inner product is folded into the outer product's argument; where ``B @ C`` is unreached
    it is the map's fill 0 (even 0 / 0 and 0 * inf), a cancelled sum is data (NaN)."""
    av, x = np.array([[1.0, 2.0]]), np.array([[1.0, -1.0, 2.0], [0.0, 1.0, 1.0]])
    b = np.array([[1.0, 1.0]])
    c = np.array([[1.0, 0.0, 2.0], [-1.0, 0.0, 1.0]])  # B @ C: cancelled, unreached, 3
    d = np.array([[0.0, 0.0, 2.0]]) if op == "divide" else np.array([[np.inf, np.inf, np.nan]])
    with np.errstate(all="ignore"):
        mapped = (b @ c) / d if op == "divide" else (b @ c) * d
        want = (av @ x) * np.where(reached(b, c, fmt), mapped, 0.0)

    def build() -> Any:
        p = xp.asarray(b, format=fmt) @ xp.asarray(c, format=fmt)
        m = p / xp.asarray(d) if op == "divide" else p * xp.asarray(d)
        return (xp.asarray(av, format="coo") @ xp.asarray(x)) * m

    check(build, want, f"{fmt} {op}")


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_sum_of_a_map_of_a_product(fmt: str) -> None:
    """``sum((A @ B) * D, axis=1)`` and ``sum((A @ B) / D0, axis=0)``: the map is folded into
    the sum's argument; unreached entries of the product add nothing (not 0 * inf, 0 / 0)."""
    a = np.array([[1.0, 0.0], [0.0, 0.0]])
    b = np.array([[1.0, 1.0], [1.0, 1.0]])
    d = np.array([[2.0, 3.0], [np.inf, np.nan]])
    d0 = np.array([[2.0, 0.0], [0.0, 0.0]])
    hit = reached(a, b, fmt)
    with np.errstate(all="ignore"):
        want1 = np.where(hit, (a @ b) * d, 0.0).sum(axis=1)
        want0 = np.where(hit, (a @ b) / d0, 0.0).sum(axis=0)
    p = lambda: xp.asarray(a, format=fmt) @ xp.asarray(b, format=fmt)  # noqa: E731
    check(lambda: xp.sum(p() * xp.asarray(d), axis=1), want1, f"{fmt} sum * D")
    check(lambda: xp.sum(p() / xp.asarray(d0), axis=0), want0, f"{fmt} sum / D0")


def _chain_formats(d: np.ndarray) -> list[str]:
    """The kernels' output formats of ``(A @ B) @ D`` (A, B csr)."""
    a = xp.asarray(np.array([[1.0, 1.0], [0.0, 0.0]]), format="csr")
    b = xp.asarray(np.ones((2, 2)), format="csr")
    return [k.output_format.name for k in xp.explain((a @ b) @ xp.asarray(d)).kernels]


def test_finite_chain_keeps_its_dense_product() -> None:
    """With finite data ``(A @ B) @ X`` folds the same with the inner product stored dense
    (0 * x is 0): the optimizer keeps that choice; only a non-finite ``X`` keeps the
    inner product's region (sparse)."""
    assert _chain_formats(np.ones((2, 2))) == ["dense", "dense"]
    assert _chain_formats(np.array([[np.inf, 1.0], [1.0, 1.0]]))[0] != "dense"


@pytest.mark.parametrize("order", ["finite first", "inf first"])
def test_cached_plan_reused_with_other_data(order: str) -> None:
    """One shape, finite data then data with inf (and the reverse), then the first again:
    each call gets the plan its data needs from the plan cache (one optimization per
    finiteness), never the other's."""
    a = np.array([[1.0, 1.0], [0.0, 0.0]])
    b = np.ones((2, 2))
    finite, inf = np.ones((2, 2)), np.array([[np.inf, 1.0], [1.0, 1.0]])
    datas = [finite, inf] if order == "finite first" else [inf, finite]
    plan_cache.clear_plan_cache()
    optimized = []
    for d in [*datas, *datas]:
        want = fold(a @ b, reached(a, b, "csr"), d)
        check(lambda d=d: (xp.asarray(a, format="csr") @ xp.asarray(b, format="csr"))
              @ xp.asarray(d), want, f"{order}: {d.tolist()}")
        optimized.append(plan_cache.STATS["optimized"])
    assert optimized[3] - optimized[0] == 1  # the second data's plan, then hits only


def test_leaf_written_after_a_compute() -> None:
    """The same leaf computed with finite data, then written in place (the caller's NumPy
    array it shares, and ``x[i] = inf`` on a computed array): the next compute reads the
    finiteness again and gets the reference's 0 where the product is unreached."""
    a = np.array([[1.0, 1.0], [0.0, 0.0]])
    b = np.ones((2, 2))
    hit = reached(a, b, "csr")
    d = np.ones((2, 2))
    leaf = xp.asarray(d)
    p = lambda: xp.asarray(a, format="csr") @ xp.asarray(b, format="csr")  # noqa: E731
    np.testing.assert_array_equal(np.asarray(xp.compute(p() @ leaf)), fold(a @ b, hit, d))
    d[0, 0] = np.inf
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(np.asarray(xp.compute(p() @ leaf)), fold(a @ b, hit, d))
    x = xp.compute(xp.asarray(np.ones((2, 2))) * 2.0)
    e = np.full((2, 2), 2.0)
    np.testing.assert_array_equal(np.asarray(xp.compute(p() @ x)), fold(a @ b, hit, e))
    x[1, 1] = np.nan
    e[1, 1] = np.nan
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(np.asarray(xp.compute(p() @ x)), fold(a @ b, hit, e))
