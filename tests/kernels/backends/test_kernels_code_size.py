"""Merges above the innermost loop use one guarded loop, so generated code grows linearly
with the depth of a union (the merge lattice's per-point loops each copy the loops below:
3^depth copies). Checked by structure: the source's length, and the values against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import lazysparse as xp
from tests.conftest import slow_except


@pytest.fixture(autouse=True)
def compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAZYSPARSE_EXECUTOR", raising=False)


@pytest.mark.parametrize("op", slow_except(["add", "multiply", "maximum"], ["add"]))
def test_deep_csf_merge_code_is_linear_in_depth(op: str) -> None:
    rng = np.random.default_rng(0)
    sizes = []
    for nd in (2, 3, 4):
        shape = (3, 4, 5, 6)[:nd]
        a = np.where(rng.random(shape) < 0.3, rng.integers(1, 4, shape), 0).astype(float)
        b = np.where(rng.random(shape) < 0.3, rng.integers(1, 4, shape), 0).astype(float)
        x = xp.asarray(a, format="csf", fill_value=0.0)
        y = xp.asarray(b, format="csf", fill_value=0.0)
        r = getattr(xp, op)(x, y)
        (k,) = xp.explain(r).kernels
        sizes.append(len(k.source.splitlines()))
        np.testing.assert_array_equal(np.asarray(r), getattr(np, op)(a, b))
    # each extra level adds one loop's worth of code, not a multiple of the whole
    assert sizes[2] - sizes[1] < 2 * (sizes[1] - sizes[0]) + 40, sizes
    assert sizes[2] < 300, sizes
