"""lazysparse.formats.random: shape, density, format, dtype, fill value, seed."""

from __future__ import annotations

import numpy as np
import pytest

from lazysparse.formats import random

from .helpers import DTYPES


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_random_every_dtype(dtype: np.dtype) -> None:
    t = random((20, 30), 0.1, format="csc", dtype=dtype, seed=1)
    assert (t.format, t.shape, t.dtype, t.nnz) == ("csc", (20, 30), dtype, 60)
    d = t.to_numpy()
    assert np.count_nonzero(d) == 60


def test_random_seed_fill_and_nd() -> None:
    a = random((5, 6, 7), 0.2, format="csf", fill_value=np.nan, seed=3, mode_order=(2, 1, 0))
    b = random((5, 6, 7), 0.2, format="coo", fill_value=np.nan, seed=3, mode_order=(2, 1, 0))
    np.testing.assert_array_equal(a.to_numpy(), b.to_numpy())
    assert np.isnan(a.fill_value) and int((~np.isnan(a.to_numpy())).sum()) == 42
    assert random((), 1.0).nnz == 1 and random((0, 3), 0.5).nnz == 0


def test_random_bad_density() -> None:
    with pytest.raises(ValueError, match="density must be a number in"):
        random((3, 3), 1.5)
