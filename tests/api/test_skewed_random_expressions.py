"""Random expressions over skewed sparse inputs (issue 36): zipf term counts and Chung–Lu
power-law graphs, where the optimizer sizes products and intersections by degree
statistics (``optimizer.degrees``) instead of one density.

Each example draws square ``n x n`` leaves (``n`` from 100 to 160, so that the degrees are
skewed enough to take the degree path: index of dispersion past ``SKEW_DISPERSION``) in
csr, csc or coo, dense vectors, and a tree of products, transposes, elementwise maps,
row scalings and reductions over them (float64, positive stored values: no cancellation,
so every stored entry of a result is a nonzero). The value is checked against NumPy on the
dense equivalent, and a 2-D result's storage against the rule of the issue: stored sparse,
it keeps exactly the nonzeros (scipy's stored entries); stored dense, it is no sparser
than a quarter (``DENSE_THRESHOLD``, the break-even of the uniform model).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lazysparse as xp
from lazysparse.formats.statistics import SKEW_DISPERSION, statistics
from lazysparse.optimizer.analysis import DENSE_THRESHOLD
from tests.conftest import examples
from tests.optimizer.skewed_data import chung_lu, zipf_terms

EXAMPLES = int(os.environ.get("LAZYSPARSE_RANDOM_EXAMPLES", examples(40)))
FORMATS = ("csr", "csc", "coo")


def skewed_matrix(kind: str, n: int, seed: int) -> sp.csr_array:
    """An ``n x n`` skewed matrix: a Chung–Lu graph (weights in [0.5, 1.5)) or zipf term
    counts (``6 n`` draws)."""
    if kind == "graph":
        g = chung_lu(n, 8, seed=seed)
        g.data = 0.5 + np.random.default_rng(seed).random(g.nnz)
        return g
    return zipf_terms(n, n, 6 * n, seed=seed)


@dataclass(frozen=True)
class Node:
    """``fn(ns, *args)`` over evaluated children, the same for NumPy and lazysparse."""

    name: str
    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    leaf: Any = None  # a leaf's (dense values, format)

    def build(self, ns: Any) -> Any:
        if self.leaf is not None:
            values, fmt = self.leaf
            if ns is np or fmt == "dense":
                return values if ns is np else xp.asarray(values)
            return xp.asarray(values, format=fmt)
        return self.fn(ns, *(a.build(ns) for a in self.args))

    def __repr__(self) -> str:
        return self.name if self.leaf is not None else \
            f"{self.name}({', '.join(map(repr, self.args))})"


@st.composite
def matrices(draw: st.DrawFn, n: int) -> Node:
    kind = draw(st.sampled_from(("graph", "text")))
    seed = draw(st.integers(0, 10_000))
    fmt = draw(st.sampled_from(FORMATS))
    m = skewed_matrix(kind, n, seed)
    return Node(f"{kind}[{seed}]:{fmt}", None, leaf=(m.toarray(), fmt))


def _vector(n: int, seed: int) -> Node:
    v = np.random.default_rng(seed).random(n) + 0.5
    return Node(f"v[{seed}]", None, leaf=(v, "dense"))


@st.composite
def expressions(draw: st.DrawFn, n: int, depth: int) -> Node:
    """An ``n x n`` expression over skewed matrices."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(matrices(n))
    kind = draw(st.sampled_from(("matmul", "matmul", "transpose", "multiply", "add",
                                 "maximum", "scale", "row_scale", "normalize")))
    a = draw(expressions(n, depth - 1))
    if kind in ("matmul", "multiply", "add", "maximum"):
        b = draw(expressions(n, depth - 1))
        return Node(kind, lambda ns, x, y, k=kind: getattr(ns, k)(x, y), (a, b))
    if kind == "transpose":
        return Node("T", lambda ns, x: x.T, (a,))
    if kind == "scale":
        return Node("x * 2", lambda ns, x: x * 2.0, (a,))
    if kind == "row_scale":
        v = _vector(n, draw(st.integers(0, 100)))
        return Node("x * v[:, None]", lambda ns, x, w: x * w[:, None], (a, v))
    # row normalization D / (|D|_1 + 1), the norm a reduction of the same operand
    return Node("x / (sum(x, 1) + 1)[:, None]",
                lambda ns, x: x / (ns.sum(x, axis=1) + 1.0)[:, None], (a,))


@st.composite
def programs(draw: st.DrawFn) -> Node:
    n = draw(st.integers(100, 160))
    e = draw(expressions(n, 3))
    tail = draw(st.sampled_from(("none", "none", "matvec", "rmatvec", "sum0", "sum")))
    if tail == "matvec":
        return Node("x @ v", lambda ns, x, w: x @ w, (e, _vector(n, 7)))
    if tail == "rmatvec":
        return Node("x.T @ v", lambda ns, x, w: x.T @ w, (e, _vector(n, 8)))
    if tail == "sum0":
        return Node("sum(x, 0)", lambda ns, x: ns.sum(x, axis=0), (e,))
    if tail == "sum":
        return Node("sum(x)", lambda ns, x: ns.sum(x), (e,))
    return e


def test_the_leaves_are_skewed() -> None:
    # the point of this file: its inputs take the degree path of the optimizer
    for kind in ("graph", "text"):
        for n in (100, 160):
            for seed in range(5):
                t = xp.asarray(skewed_matrix(kind, n, seed)).tensor()
                disp = statistics(t).dispersion(1)
                assert disp is not None and disp > SKEW_DISPERSION, (kind, n, seed, disp)


@pytest.mark.slow  # skewed data at size; the full suite draws its examples
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(expr=programs())
def test_skewed_expression_matches_numpy_and_stores_what_scipy_stores(expr: Node) -> None:
    want = np.asarray(expr.build(np))
    res = xp.compute(expr.build(xp))
    got = np.asarray(res)
    assert got.shape == want.shape and got.dtype == want.dtype, (expr, got.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=repr(expr))
    if want.ndim != 2:
        return
    nonzeros = np.count_nonzero(want)
    if res.format == "dense":
        assert nonzeros > DENSE_THRESHOLD * want.size, (
            f"{expr!r}: stored dense at density {nonzeros / want.size:.3f}")
    else:
        assert res.fill_value == 0
        assert res.nnz == nonzeros, f"{expr!r}: {res.nnz} stored, {nonzeros} nonzeros"
