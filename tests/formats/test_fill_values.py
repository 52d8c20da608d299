"""The two fill-value identities every stage uses (``formats.dtypes``): ``fill_key`` (dtype
and value: tensor signatures, kernel keys) and ``same_value`` (the number, any dtypes)."""

from __future__ import annotations

import numpy as np

from lazysparse.formats.dtypes import fill_key, same_value


def test_fill_key_is_dtype_and_value() -> None:
    assert fill_key(np.float64("nan")) == fill_key(np.float64(-np.nan))
    assert fill_key(np.float64(1.0)) != fill_key(np.float32(1.0))
    assert fill_key(np.float64(-0.0)) != fill_key(np.float64(0.0))
    assert fill_key(0.0) == fill_key(np.float64(0.0))  # Python scalars too
    big = np.iinfo(np.uint64).max
    assert fill_key(np.uint64(big)) != fill_key(np.uint64(big - 1))  # no float rounding
    assert fill_key(np.complex128(complex(np.nan, 1))) == fill_key(np.complex128(
        complex(np.nan, 1)))
    assert fill_key(np.bool_(True)) != fill_key(np.int8(1))
    hash(fill_key(np.complex64(1j)))


def test_same_value_is_the_number() -> None:
    assert same_value(1, np.float32(1.0)) and same_value(np.int8(0), -0.0)
    assert same_value(np.nan, np.float32("nan"))
    assert same_value(complex(np.nan, 0), complex(1, np.nan))  # a NaN part is NaN
    assert not same_value(np.nan, 0.0) and not same_value(1, 2)
    assert not same_value(None, None) and not same_value(None, 0)
    assert not same_value("a", "a")  # not a number
