"""api.einsum against numpy.einsum: one MapJoin(multiply) + one Aggregate(add)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazysparse.api.chapters.einsum import einsum
from lazysparse.logic.nodes import Aggregate, MapJoin, Reorder
from tests.api.compute_helpers import (
    ALL_NUMERIC,
    FORMATS,
    assert_same,
    fills_for,
    lazy,
    reference_executor,  # noqa: F401 - autouse fixture
    sample,
)
from tests.conftest import examples

CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ij,jk->ki", [(3, 4), (4, 5)]),
    ("ij,ij->i", [(3, 4), (3, 4)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("iij->j", [(3, 3, 2)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ik,kj,ij->ij", [(3, 4), (4, 5), (3, 5)]),
    ("ijk,jl,kl->il", [(2, 3, 4), (3, 5), (4, 5)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("b...i,bi->b...", [(2, 3, 4), (2, 4)]),
    ("...i,...i", [(2, 1, 4), (3, 4)]),
    ("i,i", [(0,), (0,)]),
    ("", [()]),
    (",ij->ij", [(), (2, 3)]),
]


@pytest.mark.parametrize(("subs", "shapes"), CASES)
def test_einsum_cases(subs: str, shapes: list[tuple[int, ...]]) -> None:
    rng = np.random.default_rng(0)
    arrs = [sample(s, "float64", rng) for s in shapes]
    for fmt in FORMATS:
        assert_same(einsum(subs, *(lazy(a, fmt) for a in arrs)), np.einsum(subs, *arrs))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", ALL_NUMERIC)
def test_einsum_dtypes_fills(fmt: str, dtype: str) -> None:
    rng = np.random.default_rng(1)
    for fill in fills_for(dtype):
        a, b = sample((3, 4), dtype, rng, fill=fill), sample((4, 2), dtype, rng, fill=fill)
        exp = np.einsum("ij,jk->ki", a, b)
        assert_same(einsum("ij,jk->ki", lazy(a, fmt, fill), lazy(b, fmt, fill)),
                    exp.astype(np.result_type(a, b)))


def test_einsum_plan_is_one_aggregate_over_one_mapjoin() -> None:
    out = einsum("ij,jk->ki", lazy(np.ones((2, 3)), "csr"), lazy(np.ones((3, 4))))
    body = out.expr.arg
    assert isinstance(body, Reorder)
    agg = body.arg
    assert isinstance(agg, Aggregate) and isinstance(agg.arg, MapJoin)
    assert not any(isinstance(a, Aggregate) for a in agg.arg.args)


def test_einsum_errors() -> None:
    x = lazy(np.ones((2, 3)))
    with pytest.raises(ValueError, match="operands"):
        einsum("ij,jk", x)
    with pytest.raises(ValueError, match="sizes"):
        einsum("ij,ij", x, lazy(np.ones((3, 2))))
    with pytest.raises(ValueError, match="does not match"):
        einsum("ijk", x)
    with pytest.raises(ValueError, match="output letter"):
        einsum("ij->k", x)
    with pytest.raises(ValueError, match="invalid character"):
        einsum("i1", x)
    with pytest.raises(ValueError, match="repeated output"):
        einsum("ij->ii", x)
    with pytest.raises(TypeError, match="string"):
        einsum(3, x)
    m = np.array([[True, False], [True, True]])  # bools are numbers 0/1, as in NumPy
    for got, want in ((einsum("ij->", lazy(m)), np.einsum("ij->", m)),
                      (einsum("ij,jk", lazy(m), lazy(np.ones((2, 2), np.float32))),
                       np.einsum("ij,jk", m, np.ones((2, 2), np.float32)))):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), want)


@settings(max_examples=examples(25), deadline=None)
@given(n=st.integers(1, 4), k=st.integers(0, 4), m=st.integers(1, 4),
       fmt=st.sampled_from(FORMATS), seed=st.integers(0, 2**16),
       out=st.sampled_from(("ik", "ki", "i", "k", "")))
def test_hypothesis_einsum(n: int, k: int, m: int, fmt: str, seed: int, out: str) -> None:
    rng = np.random.default_rng(seed)
    a, b = sample((n, k), "float64", rng, 0.4), sample((k, m), "float64", rng, 0.4)
    subs = f"ij,jk->{out}"
    assert_same(einsum(subs, lazy(a, fmt), lazy(b, fmt)), np.einsum(subs, a, b))
