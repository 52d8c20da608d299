"""``xp.linspace`` with every dtype NumPy accepts (scipy.signal asks for integer ones)."""

from __future__ import annotations

import numpy as np
import pytest

import lazysparse as xp


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "int64",
                                   "bool", "float32", "float64", "complex128"])
@pytest.mark.parametrize("args", [(0, 10, 5), (-3, 7, 11), (0, 255, 4), (5, -5, 6), (0, 1, 0)])
def test_linspace_matches_numpy(dtype: str, args: tuple[int, int, int]) -> None:
    start, stop, num = args
    for endpoint in (True, False):
        want = np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype)
        got = xp.linspace(start, stop, num, endpoint=endpoint, dtype=getattr(xp, dtype))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), want)


def test_linspace_refuses_complex_values_into_a_real_dtype() -> None:
    with pytest.raises(TypeError, match="imaginary part would be lost"):
        xp.linspace(0j, 1 + 1j, 3, dtype=xp.int64)
    with pytest.raises(TypeError, match="imaginary part would be lost"):
        xp.linspace(0, 1j, 3, dtype=xp.float64)
