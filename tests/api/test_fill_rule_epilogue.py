"""A map over a reduction's result next to a dense operand (docs/api.md, "The fill rule"):
the entries no product reached are the product's implicit fill, so a map that fill
annihilates (``(A @ B) / D``, ``D * (A @ B)``) leaves them the result fill even where ``D``
holds 0, NaN or inf, while one it does not (``(A @ B) + D``) is the map of the init there.
Reached entries that cancel to 0 are data and follow IEEE. A reduction to a vector
(``sum(S * S2, axis=1)``) is dense as in NumPy, so its map divides every entry. The
compiled tier (fused into one kernel or not; dense, sparse, row and hash workspace outputs)
agrees with the reference interpreter and with NumPy on the dense equivalent."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lazysparse as xp
import lazysparse.kernels.compile.planning.hash_workspace as hw
from tests.conftest import examples

from .test_random_expressions import _executor

EXAMPLES = examples(120)
# -1.0: sums that cancel to 0 at reached entries (data: 0 / 0 is NaN there, a product
# stored before its map keeps them: ``FormatSpec.keeps_fills``)
SPARSE_VALUES = (0.0, 0.0, 0.0, 1.0, 0.5, 2.0, -1.0)
DENSE_VALUES = (0.0, 0.0, 1.0, -2.0, np.inf, -np.inf, np.nan)
# op name -> (NumPy map of (reduced, dense), whether the reduction's fill 0 annihilates it)
MAPS: dict[str, tuple[Callable[[Any, Any], Any], bool]] = {
    "divide": (lambda r, d: r / d, True),
    "multiply": (lambda r, d: r * d, True),
    "rmultiply": (lambda r, d: d * r, True),
    "add": (lambda r, d: r + d, False),
    "rsubtract": (lambda r, d: d - r, False),
}
FORMATS = (None, "dense", "csr")  # the optimizer's choice, or a requested output layout
OPERAND_FORMATS = ("csr", "csr", "csc", "coo", "dense")


@dataclass(frozen=True)
class Case:
    """``map(reduce(...), D)``: a product ``A @ B`` or a row/column sum of ``S * S2``."""

    kind: str  # "matmul", "sum1", "sum0"
    left: np.ndarray
    right: np.ndarray
    fmt: str
    dense: np.ndarray
    op: str
    out: str | None

    def reduced(self) -> tuple[np.ndarray, np.ndarray]:
        """The reduction on NumPy and where some stored product reached it."""
        lp, rp = (self.left != 0).astype(np.int64), (self.right != 0).astype(np.int64)
        if self.kind == "matmul":
            return self.left @ self.right, (lp @ rp) > 0
        axis = 1 if self.kind == "sum1" else 0
        return (self.left * self.right).sum(axis=axis), (lp * rp).sum(axis=axis) > 0

    def expected(self) -> np.ndarray:
        """NumPy's map, with the fill rule's annihilator where no product reached (a sum
        to a vector is dense: NumPy's map everywhere)."""
        f, annihilated = MAPS[self.op]
        red, reached = self.reduced()
        with np.errstate(all="ignore"):
            v = np.asarray(f(red, self.dense))
        if not annihilated or self.kind != "matmul" or self.fmt == "dense":
            return v  # a product of dense operands has no implicit region
        return np.where(np.broadcast_to(reached, v.shape), v, 0.0)

    def build(self) -> Any:
        a = xp.asarray(self.left, format=self.fmt)
        b = xp.asarray(self.right, format=self.fmt)
        d = xp.asarray(self.dense)
        r = a @ b if self.kind == "matmul" else xp.sum(a * b, axis=1 if self.kind == "sum1"
                                                         else 0)
        e = {"divide": lambda: r / d, "multiply": lambda: r * d, "rmultiply": lambda: d * r,
             "add": lambda: r + d, "rsubtract": lambda: d - r}[self.op]()
        return e if self.out is None else xp.asformat(e, self.out)


def _sparse(draw: st.DrawFn, shape: tuple[int, int]) -> np.ndarray:
    vals = draw(st.lists(st.sampled_from(SPARSE_VALUES), min_size=shape[0] * shape[1],
                         max_size=shape[0] * shape[1]))
    out = np.array(vals, dtype=np.float64).reshape(shape)
    empty = draw(st.integers(0, shape[0] - 1))
    out[empty] = 0.0  # an empty row: a whole result row is unreached
    return out


@st.composite
def cases(draw: st.DrawFn) -> Case:
    kind = draw(st.sampled_from(("matmul", "matmul", "sum1", "sum0")))
    # a sum over an axis of length 1 is a map (no aggregate): at least 2 there
    low = 1 if kind == "matmul" else 2
    m, k, n = (draw(st.integers(low, 4)) for _ in range(3))
    left = _sparse(draw, (m, k))
    right = _sparse(draw, (k, n)) if kind == "matmul" else _sparse(draw, (m, k))
    shape = {"matmul": (m, n), "sum1": (m,), "sum0": (k,)}[kind]
    size = int(np.prod(shape))
    dense = np.array(draw(st.lists(st.sampled_from(DENSE_VALUES), min_size=size,
                                   max_size=size)), dtype=np.float64).reshape(shape)
    out = draw(st.sampled_from(FORMATS)) if kind == "matmul" else draw(
        st.sampled_from((None, "dense")))
    # coo/csc operands are relaid out first (a relayout keeps the implicit region); dense
    # ones give a product without one (NumPy's map everywhere)
    return Case(kind, left, right, draw(st.sampled_from(OPERAND_FORMATS)), dense,
                draw(st.sampled_from(tuple(MAPS))), out)


def _values(case: Case, executor: str | None) -> np.ndarray:
    with _executor(executor), np.errstate(all="ignore"):
        return np.asarray(xp.compute(case.build()))


def _check(case: Case) -> None:
    want = case.expected()
    for executor in (None, "reference"):
        np.testing.assert_allclose(_values(case, executor), want, rtol=1e-12, equal_nan=True,
                                   err_msg=f"{executor or 'compiled'}: {case!r}")


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=cases())
@pytest.mark.slow
def test_map_of_a_reduction_keeps_unreached_entries_at_the_fill(case: Case) -> None:
    _check(case)


@pytest.mark.slow  # hash workspaces at size: the full suite
@settings(max_examples=max(1, EXAMPLES // 3), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_map_of_a_product_through_a_hash_workspace(case: Case,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """As above with every eligible scattered row written through a hash workspace."""
    monkeypatch.setattr(hw, "HASH_MIN_BYTES", 0)
    monkeypatch.setattr(hw, "HASH_RATIO", 0)
    _check(case)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("out", [None, "csr", "dense"])
def test_cancelling_product_over_a_zero_divisor(out: str | None, fmt: str) -> None:
    """The issue's case: a sum reached and cancelling to 0 is 0 / 0 = NaN; the entries no
    product reached stay 0 (compiled as the reference says; with a dense result asked for,
    the product is stored first and keeps its cancelled entry: ``keeps_fills``)."""
    case = Case("matmul", np.array([[1.0, 1.0], [0.0, 0.0]]),
                np.array([[1.0, 0.0], [-1.0, 0.0]]), fmt, np.zeros((2, 2)), "divide", out)
    np.testing.assert_array_equal(case.expected(), [[np.nan, 0.0], [0.0, 0.0]])
    _check(case)


@pytest.mark.parametrize("fmt", ["coo", "csc"])
def test_relaid_out_operands_keep_the_region(fmt: str) -> None:
    """Found by the hypothesis family above: a coo/csc operand is relaid out first (and the
    product read through a transposed copy), and an empty row of the left operand still
    gives 0 (annihilated), as the reference gives."""
    case = Case("matmul", np.array([[0.0, 0.0, 0.0], [0.0, 1.0, 1.0]]),
                np.array([[0.0], [0.0], [1.0]]), fmt, np.zeros((2, 1)), "divide", None)
    np.testing.assert_array_equal(case.expected(), [[0.0], [np.inf]])
    _check(case)


def test_row_sums_are_dense_under_a_zero_divisor() -> None:
    """``sum(S * S2, axis=1) / d``: the row sums are a dense vector (NumPy's), so an empty
    row's 0 is divided too (0 / 0 = NaN), fused into one kernel or not."""
    s = np.array([[1.0, -1.0], [0.0, 0.0], [2.0, 0.0]])
    case = Case("sum1", s, s, "csr", np.array([0.0, 0.0, np.nan]), "divide", None)
    np.testing.assert_array_equal(case.expected(), [np.inf, np.nan, np.nan])
    _check(case)


def test_product_read_twice_keeps_its_implicit_region() -> None:
    """``(A @ B) / D`` next to another reader of the product (not fused): the product is
    stored sparse, so its unreached entries still annihilate the division."""
    a = np.array([[1.0, 0.0], [0.0, 0.0]])
    b = np.array([[2.0, 0.0], [0.0, 0.0]])
    p = xp.asarray(a, format="csr") @ xp.asarray(b, format="csr")
    got, twice = xp.compute(p / xp.asarray(np.zeros((2, 2))), p * 2)
    np.testing.assert_array_equal(np.asarray(got), [[np.inf, 0.0], [0.0, 0.0]])
    np.testing.assert_array_equal(np.asarray(twice), (a @ b) * 2)


def test_product_read_twice_keeps_its_cancelled_entries() -> None:
    """As above with a sum that cancels: the stored product keeps its reached 0 (not
    dropped as scipy's SpGEMM would), so the division gives 0 / 0 = NaN there, as the
    reference does, while the product's other reader sees the same values."""
    a = np.array([[1.0, 1.0], [0.0, 0.0]])
    b = np.array([[1.0, 0.0], [-1.0, 0.0]])
    for executor in (None, "reference"):
        with _executor(executor), np.errstate(all="ignore"):
            p = xp.asarray(a, format="csr") @ xp.asarray(b, format="csr")
            got, twice = xp.compute(p / xp.asarray(np.zeros((2, 2))), p * 2)
            np.testing.assert_array_equal(np.asarray(got), [[np.nan, 0.0], [0.0, 0.0]])
            np.testing.assert_array_equal(np.asarray(twice), (a @ b) * 2)


def test_product_of_dense_operands_divides_every_entry() -> None:
    """A product of dense operands has no implicit region: ``(A @ B) / D`` is NumPy's."""
    a = np.array([[1.0, 1.0], [0.0, 0.0]])
    b = np.array([[1.0, 0.0], [-1.0, 0.0]])
    d = np.array([[0.0, 1.0], [0.0, np.inf]])
    for executor in (None, "reference"):
        with _executor(executor), np.errstate(all="ignore"):
            got = np.asarray(xp.compute((xp.asarray(a) @ xp.asarray(b)) / xp.asarray(d)))
            np.testing.assert_array_equal(got, (a @ b) / d)


def _both(build: Callable[[], Any]) -> list[np.ndarray]:
    """``build()`` computed compiled and by the reference interpreter."""
    out = []
    for executor in (None, "reference"):
        with _executor(executor), np.errstate(all="ignore"):
            out.append(np.asarray(xp.compute(build())))
    return out


def test_full_map_with_an_annihilated_part() -> None:
    """``maximum(A @ B, D) + (x @ y) / D0``: the map is full (dense), but its division is 0
    where no product reached (found by a random hunt; that product was fused into a dense
    kernel that divided its init there: 0 / NaN = NaN)."""
    a = np.array([[1.0, 1.0, 1.0, 0.0], [-1.0, 1.0, 1.0, 0.0]])
    b = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 1.0, 1.0], [0.0, 0.0, 1.0]])
    d = np.array([[np.inf, -np.inf, 1.0], [1.0, 0.0, np.nan]])
    x, y = np.array([[1.0], [0.0]]), np.array([[0.0, 0.0, 1.0]])
    d0 = np.array([[np.nan, 0.0, 0.0], [0.0, 1.0, -2.0]])
    reached = np.broadcast_to(y != 0, d0.shape)  # x is dense: every row reaches y's entries
    with np.errstate(all="ignore"):
        want = np.maximum(a @ b, d) + np.where(reached, (x @ y) / d0, 0.0)
    for got in _both(lambda: xp.maximum(xp.asarray(a, format="csr") @ xp.asarray(b, format="coo"),
                                        xp.asarray(d)) + (xp.asarray(x) @ xp.asarray(
                                            y, format="csc")) / xp.asarray(d0)):
        np.testing.assert_array_equal(got, want)


def test_product_of_a_product_keeps_the_region() -> None:
    """``(A @ (B @ C)) / D``: the inner product's unreached entries are not stored, so the
    outer one reaches nothing past them and its division stays 0 there (found by a random
    hunt: the inner product was stored dense)."""
    a = np.array([[0.0, 1.0], [1.0, 0.0]])
    b = np.array([[0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])
    c = np.array([[-1.0, -1.0, 1.0], [1.0, 0.0, -1.0], [1.0, 0.0, 1.0]])
    d = np.array([[-np.inf, np.nan, -np.inf], [np.inf, np.nan, -2.0]])
    inner = ((b != 0) * 1 @ (c != 0) * 1) > 0
    reached = ((a != 0) * 1 @ inner * 1) > 0
    with np.errstate(all="ignore"):
        want = np.where(reached, (a @ (b @ c)) / d, 0.0)
    for got in _both(lambda: (xp.asarray(a, format="coo") @ (
            xp.asarray(b, format="csr") @ xp.asarray(c, format="csr"))) / xp.asarray(d)):
        np.testing.assert_array_equal(got, want)


def test_product_of_a_product_next_to_an_infinity() -> None:
    """Found by a random hunt over csr/csc/coo operands: ``(A @ B) @ (S * D)`` with ``D``
    holding inf; row 1 of ``A`` stores nothing, so row 1 of ``A @ B`` is implicit."""
    a = np.array([[1.0, 1.0], [0.0, 0.0]])
    b = np.ones((2, 2))
    s = np.ones((2, 2))
    d = np.array([[np.inf, 1.0], [1.0, 1.0]])
    got = []
    for executor in (None, "reference"):
        with _executor(executor), np.errstate(all="ignore"):
            e = (xp.asarray(a, format="csr") @ xp.asarray(b, format="csr")) @ (
                xp.asarray(s, format="csr") * xp.asarray(d))
            got.append(np.asarray(xp.compute(e)))
    np.testing.assert_array_equal(got[1], [[np.inf, 4.0], [0.0, 0.0]])
    np.testing.assert_array_equal(got[0], got[1])


def test_map_of_a_product_inside_another_product() -> None:
    """Found by a random hunt: ``(a @ X) * ((B @ c.T).T / D0 / D0)``; entry 0 of the
    transposed product is unreached (the reference: 0, so the result there is 0 * 0)."""
    a, x = np.array([[1.0, 0.0, 0.0]]), np.array([[0.0, -1.0], [0.0, -1.0], [0.0, 0.0]])
    b, c = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 0.0]]), np.array([[1.0, -1.0, 0.0]])
    d0 = np.zeros((1, 2))
    got = _both(lambda: (xp.asarray(a, format="coo") @ xp.asarray(x)) * (
        (xp.asarray(b, format="csc") @ xp.asarray(c, format="csc").T).T /
        xp.asarray(d0) / xp.asarray(d0)))
    np.testing.assert_array_equal(got[1], [[0.0, np.nan]])  # (b @ c.T).T = [[0 (unreached), 0]]
    np.testing.assert_array_equal(got[0], got[1])
