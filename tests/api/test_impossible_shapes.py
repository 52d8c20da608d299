"""Shapes that cannot be represented are refused where they are made, with NumPy's
exception types (issue 32 item 4), shapes that can are reduced to the right values, and a
requested format is returned or refused, never swapped (docs/formats.md, "Shapes that can
be represented")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import lazysparse as xp
from lazysparse import formats
from lazysparse.formats import DensifyError

HUGE = 2**63  # one past int64: no coordinate can index it
BIG = 2**40  # (BIG, BIG) has 2**80 elements: fits per axis, not linearized


def numpy_error(make: Callable[[], Any]) -> type[BaseException]:
    """The exception type NumPy raises for ``make()``."""
    with pytest.raises(Exception) as info:  # noqa: PT011 - whatever NumPy raises
        make()
    return type(info.value)


@pytest.mark.parametrize(("name", "ours", "theirs"), [
    ("zeros", lambda: xp.zeros(HUGE), lambda: np.zeros(HUGE)),
    ("zeros 2-D", lambda: xp.zeros((HUGE, 2)), lambda: np.zeros((HUGE, 2))),
    ("ones", lambda: xp.ones((2, HUGE)), lambda: np.ones((2, HUGE))),
    ("full", lambda: xp.full(HUGE, 3.0), lambda: np.full(HUGE, 3.0)),
    ("empty", lambda: xp.empty((HUGE,), dtype=xp.int8), lambda: np.empty(HUGE, np.int8)),
    ("eye", lambda: xp.eye(HUGE), lambda: np.eye(HUGE)),
    ("eye cols", lambda: xp.eye(3, HUGE), lambda: np.eye(3, HUGE)),
    ("zeros coo 2**64", lambda: xp.zeros(2**64, format="coo"), lambda: np.zeros(2**64)),
    ("broadcast_to", lambda: xp.broadcast_to(xp.asarray(1.0), (HUGE,)),
     lambda: np.broadcast_to(1.0, (HUGE,))),
    ("random", lambda: xp.random((HUGE, 3)), lambda: np.zeros((HUGE, 3))),
    ("reshape", lambda: xp.reshape(xp.zeros((BIG, BIG)), (BIG * BIG,)),
     lambda: np.reshape(np.zeros(0), (BIG * BIG, 0))),
])
def test_an_extent_past_int64_is_refused_as_numpy_refuses_it(
        name: str, ours: Callable[[], Any], theirs: Callable[[], Any]) -> None:
    with pytest.raises(numpy_error(theirs), match="Maximum allowed dimension"):
        ours()


def test_every_way_of_making_a_shape_checks_its_extents() -> None:
    want = numpy_error(lambda: np.zeros(HUGE))
    half = xp.zeros(2**62)
    with pytest.raises(want, match="Maximum allowed dimension"):
        xp.concat([half, half, half])  # 3 * 2**62 rows
    with pytest.raises(want, match="Maximum allowed dimension"):
        xp.arange(HUGE)
    with pytest.raises(want, match="Maximum allowed dimension"):
        xp.linspace(0.0, 1.0, HUGE)
    with pytest.raises(want, match="Maximum allowed dimension"):
        formats.Tensor.from_coords([np.zeros(0, np.int64)] * 2, np.zeros(0), (HUGE, 2),
                                   format="coo")
    with pytest.raises(want, match="Maximum allowed dimension"):
        xp.asarray(formats.random((HUGE, 2), 0.0))
    assert xp.stack([half] * 3).shape == (3, 2**62)  # every extent fits


def test_sparse_shapes_whose_size_passes_int64_are_fine() -> None:
    """Coordinates are per axis: only each extent must fit int64, not the size."""
    x = xp.zeros((10**9, 10**9, 10**9), format="coo")
    assert x.format == "coo" and x.size == 10**27 and x.shape == (10**9,) * 3
    assert float(xp.sum(x)) == float(np.sum(np.zeros(3)))
    y = xp.zeros((2**62, 2**62))
    assert xp.zeros_like(y).shape == (2**62, 2**62)
    assert float(xp.max(xp.ones((2**62, 2**62)))) == 1.0
    # ... but a dense array of that size is NumPy's "array is too big"
    with pytest.raises(numpy_error(lambda: np.zeros((2**62, 2**62)))):
        xp.zeros((2**62, 2**62), format="dense")


def test_linearizing_a_size_past_int64_is_refused() -> None:
    x = xp.zeros((2**62, 2**62))
    with pytest.raises(ValueError, match="too large|larger than the maximum"):
        xp.reshape(x, (2**31, 2**31, 2**62))
    with pytest.raises(ValueError, match="too many to index|larger than the maximum"):
        xp.random((BIG, BIG), density=1e-20)


@pytest.mark.slow
def test_sums_over_more_than_int64_points_are_the_float_answer() -> None:
    n = np.float64(BIG) * np.float64(BIG)  # NumPy's float count: 2**80
    assert float(xp.sum(xp.zeros((BIG, BIG)) + 1)) == n
    assert float(xp.sum(xp.full((BIG, BIG), 2.5))) == np.float64(2.5) * n
    assert float(xp.sum(xp.ones((BIG, BIG), dtype=xp.float32))) == np.float32(n)
    assert complex(xp.sum(xp.full((BIG, BIG), 1 + 1j))) == np.complex128(1 + 1j) * n
    assert float(xp.mean(xp.full((BIG, BIG), 2.5))) == 2.5
    assert float(xp.var(xp.full((BIG, BIG), 2.5))) == 0.0
    with np.errstate(over="ignore"):
        assert float(xp.prod(xp.full((BIG, BIG), 2.0))) == np.power(2.0, n)  # inf
    assert float(xp.prod(xp.full((BIG, BIG), 0.5))) == np.power(0.5, n)  # 0.0
    assert float(xp.prod(xp.ones((BIG, BIG)))) == 1.0
    row_sums = xp.sum(xp.ones((BIG, BIG)), axis=1)  # each result fits: per-row counts
    assert float(row_sums[7]) == np.float64(BIG)
    y = xp.zeros((BIG, BIG))
    y[0, 0] = 5.0
    y[1, 2] = 1.0
    assert float(xp.sum(y)) == 6.0 and float(xp.max(y)) == 5.0
    assert float(xp.sum(y + 1)) == np.float64(n - 2) + 6.0 + 2.0


def test_integer_results_past_int64_raise_rather_than_wrap() -> None:
    ones = xp.ones((BIG, BIG))
    with pytest.raises(OverflowError, match="does not fit int64"):
        int(xp.count_nonzero(ones))
    with pytest.raises(OverflowError, match="does not fit int64"):
        int(xp.sum(xp.ones((BIG, BIG), dtype=xp.int64)))
    with pytest.raises(OverflowError, match="does not fit int64"):
        int(xp.prod(xp.full((BIG, BIG), 2, dtype=xp.int64)))
    assert int(xp.count_nonzero(xp.zeros((BIG, BIG)))) == 0
    assert int(xp.sum(xp.zeros((BIG, BIG), dtype=xp.int64))) == 0
    assert int(xp.prod(xp.ones((BIG, BIG), dtype=xp.int64))) == 1
    assert int(xp.prod(xp.full((BIG, BIG), -1, dtype=xp.int64))) == (-1) ** (BIG * BIG)
    fits = xp.zeros((BIG, 2**20), dtype=xp.int64) + 1  # 2**60 points: an exact count
    assert int(xp.count_nonzero(fits)) == int(np.int64(2) ** 60)
    assert int(xp.sum(fits)) == int(np.int64(2) ** 60)


def test_a_requested_format_is_returned_or_refused_never_swapped() -> None:
    with pytest.raises(DensifyError, match=r"format='csr'.*'coo'.*'dcsr'"):
        xp.zeros((BIG, BIG), format="csr")
    with pytest.raises(DensifyError, match="format='dense'"):
        xp.ones((BIG, BIG), format="dense")
    for fmt in ("coo", "dcsr", "csf"):
        assert xp.zeros((BIG, BIG), format=fmt).format == fmt
    assert xp.zeros((BIG, BIG)).format == "coo"  # no format asked: a hypersparse layout
    with pytest.raises(ValueError, match="'csr' is for 2-D"):
        xp.zeros((2, 3, 4), format="csr")  # was silently csf
    dense = xp.full((3, 4), 2.0, format="dense")  # was silently csr
    assert dense.format == "dense" and xp.compute(dense).format == "dense"
    np.testing.assert_array_equal(np.asarray(dense), np.full((3, 4), 2.0))
    assert xp.eye(3, format="dense").format == "dense"
    np.testing.assert_array_equal(np.asarray(xp.eye(3, format="dense")), np.eye(3))
    assert xp.full((), 1.5, format="coo").format == "coo"
    assert float(xp.full((), 1.5, format="coo")) == 1.5
