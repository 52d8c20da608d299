"""COO chains merged with another operand: a middle singleton repeats its coordinate across
the deeper level inside its parent's range, so it must be iterated as non-unique
(analysis.iteration_properties); checked against NumPy through the compiled path."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazysparse as xp
from lazysparse.formats import Tensor
from lazysparse.kernels.compile.planning.analysis import iteration_properties
from tests.conftest import examples


@pytest.fixture(autouse=True)
def compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAZYSPARSE_EXECUTOR", raising=False)


def test_iteration_properties_of_coo_chain() -> None:
    a = np.arange(24.0).reshape(2, 3, 4) % 3
    t = Tensor.from_numpy(a, "coo", 0.0)
    assert [p.unique for p in iteration_properties(t)] == [False, False, True]
    m = Tensor.from_numpy(a[0], "coo", 0.0)
    assert [p.unique for p in iteration_properties(m)] == [False, True]


@settings(max_examples=examples(25), deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(("coo", "csf", "dense")),
       st.sampled_from((([1, 2], [0, 1]), ([2, 1], [1, 0]), ([1], [0]), ([2], [1]))))
def test_tensordot_of_coo_chains(seed: int, other: str, axes: tuple) -> None:
    rng = np.random.default_rng(seed)
    a = np.where(rng.random((3, 4, 5)) < 0.5, rng.integers(1, 4, (3, 4, 5)), 0).astype(float)
    b = np.where(rng.random((4, 5, 2)) < 0.5, rng.integers(1, 4, (4, 5, 2)), 0).astype(float)
    x = xp.asarray(a, format="coo", fill_value=0.0)
    y = xp.asarray(b) if other == "dense" else xp.asarray(b, format=other, fill_value=0.0)
    np.testing.assert_allclose(np.asarray(xp.tensordot(x, y, axes=axes)),
                               np.tensordot(a, b, axes=axes))
    np.testing.assert_allclose(np.asarray(x * xp.asarray(a, format="coo", fill_value=0.0)),
                               a * a)
