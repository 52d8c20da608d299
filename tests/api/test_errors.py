"""Bad input raises the exception the Array API standard names, with a clear message."""

from __future__ import annotations

import numpy as np
import pytest

import lazysparse as xp


@pytest.fixture
def a() -> xp.LazyArray:
    return xp.asarray(np.arange(6.0).reshape(2, 3))


def test_wrong_dtypes(a: xp.LazyArray) -> None:
    with pytest.raises(TypeError, match="bitwise_and"):
        xp.bitwise_and(a, a)
    with pytest.raises(TypeError, match="unsupported data type"):
        xp.asarray(np.array(["x"]))
    with pytest.raises(TypeError):
        xp.asarray([1.0], dtype=np.float16)
    with pytest.raises(TypeError, match="unsupported operand"):
        xp.add(a, "1")
    with pytest.raises(TypeError, match="integer data type"):
        xp.iinfo(xp.float64)
    with pytest.raises(TypeError, match="floating-point"):
        xp.finfo(xp.int32)
    with pytest.raises(TypeError, match="boolean dtype"):
        xp.where(a, a, a)
    with pytest.raises(IndexError, match="integer or boolean"):
        a[xp.asarray([0.5])]
    with pytest.raises(TypeError):
        float(xp.asarray(1j))
    with pytest.raises(TypeError, match="integer arrays"):
        [1, 2][xp.asarray(1.0)]


def test_shape_mismatch(a: xp.LazyArray) -> None:
    with pytest.raises(ValueError, match="broadcast"):
        a + xp.ones(4)
    with pytest.raises(ValueError, match="cannot broadcast"):
        xp.broadcast_to(a, (3, 3))
    with pytest.raises(ValueError, match="cannot reshape"):
        xp.reshape(a, (4, 2))
    with pytest.raises(ValueError, match="do not match"):
        xp.concat([a, xp.ones((3, 2))], axis=0)
    with pytest.raises(ValueError, match="one shape"):
        xp.stack([a, xp.ones((3, 2))])
    with pytest.raises(ValueError, match="not 1"):
        xp.squeeze(a, axis=0)
    with pytest.raises(ValueError, match="in-place"):
        b = xp.ones(3)
        b += xp.ones((2, 3))
    with pytest.raises(TypeError, match="0-d"):
        bool(a)
    with pytest.raises(ValueError, match="broadcast"):
        a[0, :] = xp.ones(4)


def test_out_of_range_index(a: xp.LazyArray) -> None:
    with pytest.raises(IndexError, match="out of bounds"):
        a[2]
    with pytest.raises(IndexError, match="out of bounds"):
        a[0, -4]
    with pytest.raises(IndexError, match="too many indices"):
        a[0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        a[..., ...]
    with pytest.raises(IndexError, match="out of bounds"):
        xp.take(a, xp.asarray([0, 3]), axis=1)
    with pytest.raises(IndexError, match="out of bounds"):
        a[0, 5] = 1.0
    with pytest.raises(IndexError, match="does not match"):
        a[xp.asarray([True, False, True])]


def test_axis_out_of_range(a: xp.LazyArray) -> None:
    for call in (lambda: xp.expand_dims(a, axis=3), lambda: xp.squeeze(a, axis=2),
                 lambda: xp.flip(a, axis=-3), lambda: xp.concat([a, a], axis=2),
                 lambda: xp.take(a, xp.asarray([0]), axis=2),
                 lambda: xp.permute_dims(a, (0, 2)), lambda: xp.roll(a, 1, axis=5),
                 lambda: xp.moveaxis(a, 0, 4), lambda: xp.unstack(a, axis=2)):
        with pytest.raises(IndexError, match="out of bounds"):
            call()
    with pytest.raises(ValueError, match="repeated axis"):
        xp.permute_dims(a, (0, 0))


def test_bad_creation_arguments() -> None:
    with pytest.raises(ValueError, match="negative dimension"):
        xp.zeros((2, -1))
    with pytest.raises(ValueError, match="step"):
        xp.arange(0, 5, 0)
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray([1, 2], copy=False)
    with pytest.raises(ValueError, match="device"):
        xp.ones(3, device="tpu")
    with pytest.raises(ValueError, match="indexing"):
        xp.meshgrid(xp.ones(2), indexing="xx")
    with pytest.raises(ValueError, match="format"):
        xp.asformat(xp.ones((2, 2, 2)), "csr")
