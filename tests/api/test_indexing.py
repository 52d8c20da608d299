"""api.indexing: boolean masks stored sparse select from the stored entries of the mask and
of the array, never densifying either (NumPy's ``x[mask]`` order and values)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import lazysparse as xp
from lazysparse.formats import set_densify_limit
from tests.conftest import examples


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(("csr", "coo", "csc", "dense", "csf")),
       st.sampled_from(((4, 5), (6,), (2, 3, 4), (0, 3))), st.sampled_from((0.0, 1.0, "nan")))
def test_sparse_mask_matches_numpy(seed: int, fmt: str, shape: tuple[int, ...],
                                   fill: object) -> None:
    rng = np.random.default_rng(seed)
    fv = np.nan if fill == "nan" else fill
    a = np.where(rng.random(shape) < 0.5, rng.integers(-3, 4, shape), fv).astype(float)
    fmt = fmt if len(shape) == 2 or fmt in ("dense", "coo", "csf") else "coo"
    x = xp.asarray(a) if fmt == "dense" else xp.asarray(a, format=fmt, fill_value=fv)
    m = rng.random(shape) < 0.4
    for mask in (xp.asarray(m, format="coo", fill_value=False), x > 0.5):
        want = a[np.asarray(mask)]
        np.testing.assert_array_equal(np.asarray(x[mask]), want)


def test_sparse_mask_of_a_huge_matrix_never_densifies() -> None:
    n = 200_000
    rng = np.random.default_rng(0)
    a = sp.csr_array((rng.random(5 * n), (np.repeat(np.arange(n), 5),
                                          rng.integers(0, n, 5 * n))), shape=(n, n))
    a.sum_duplicates()
    x = xp.asarray(a)
    with set_densify_limit(1 << 24):
        got = np.asarray(x[x > 0.5])
    np.testing.assert_array_equal(got, a.data[a.data > 0.5])  # CSR: row-major order


def test_mask_shape_mismatch_is_an_index_error() -> None:
    x = xp.asarray(np.ones((3, 4)), format="csr")
    with pytest.raises(IndexError, match="does not match"):
        x[xp.asarray(np.ones((4, 3), bool), format="coo", fill_value=False)]
