"""Random held values (docs/api.md, "The fill rule"; ``api.array.held_regions``): a
product, a transposed product, an elementwise product, a scaled product or a selection of
one, held and kept by a compute, then read with non-finite or zero data by a product, a
division or a multiplication. Every read is NumPy's on the dense equivalent with the held
value's unreached entries implicit (they annihilate), a sum that cancels to 0 included as
data, in the compiled tier and in the reference interpreter."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lazysparse as xp
from tests.conftest import examples

from .test_fill_rule_held_values import fold, tier

EXAMPLES = examples(60)
SPARSE_VALUES = (0.0, 0.0, 0.0, 1.0, 2.0, -1.0)  # -1: sums that cancel to 0 (data)
DENSE_VALUES = (0.0, 1.0, -2.0, 0.5, np.inf, -np.inf, np.nan)
HELD = ("matmul", "transposed", "elementwise", "scaled", "selection")
READERS = ("matmul", "divide", "multiply")


def _hit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return ((x != 0).astype(np.int64) @ (y != 0).astype(np.int64)) > 0


@dataclass(frozen=True)
class Case:
    """Hold ``kind`` of ``a``, ``b`` (format ``fmt``), keep it, read it by ``reader`` with
    ``d``."""

    kind: str
    fmt: str
    a: np.ndarray
    b: np.ndarray
    d: np.ndarray
    reader: str
    keep_twice: bool

    def held(self) -> Any:
        xa, xb = xp.asarray(self.a, format=self.fmt), xp.asarray(self.b, format=self.fmt)
        if self.kind == "elementwise":
            return xa * xp.asarray(self.b.T.copy(), format=self.fmt)
        if self.kind == "transposed":
            return xp.asarray(self.a.T.copy(), format=self.fmt).T @ xb
        p = xa @ xb
        if self.kind == "scaled":
            return p * 3.0
        if self.kind == "selection":
            return xp.where(p > 1.0, p, 0.0)
        return p

    def value(self) -> tuple[np.ndarray, np.ndarray]:
        """The held value in NumPy and where it is reached."""
        if self.kind == "elementwise":
            return self.a * self.b.T, (self.a != 0) & (self.b.T != 0)
        p, hit = self.a @ self.b, _hit(self.a, self.b)
        if self.kind == "scaled":
            return p * 3.0, hit
        if self.kind == "selection":
            return np.where(p > 1.0, p, 0.0), hit
        return p, hit

    def read(self, p: Any) -> Any:
        d = xp.asarray(self.d if self.reader == "matmul" else self.d[:, :p.shape[1]])
        return p @ d if self.reader == "matmul" else p / d if self.reader == "divide" else p * d

    def expected(self) -> np.ndarray:
        p, hit = self.value()
        with np.errstate(all="ignore"):
            if self.reader == "matmul":
                return fold(p, hit, self.d)
            d = self.d[:, :p.shape[1]]
            return np.where(hit, p / d if self.reader == "divide" else p * d, 0.0)

    def run(self) -> np.ndarray:
        with np.errstate(all="ignore"):
            p = self.held()
            ones = xp.asarray(np.ones((p.shape[1], 2)))
            xp.compute(p @ ones + p @ ones if self.keep_twice else p @ ones)
            return np.asarray(xp.compute(self.read(p)))


def _matrix(draw: st.DrawFn, shape: tuple[int, int], values: tuple[float, ...]) -> np.ndarray:
    vals = draw(st.lists(st.sampled_from(values), min_size=shape[0] * shape[1],
                         max_size=shape[0] * shape[1]))
    return np.array(vals, dtype=np.float64).reshape(shape)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    kind = draw(st.sampled_from(HELD))
    m, k = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    n = m if kind == "elementwise" else draw(st.integers(1, 4))
    a = _matrix(draw, (m, k if kind != "elementwise" else m), SPARSE_VALUES)
    b = _matrix(draw, (k if kind != "elementwise" else m, n), SPARSE_VALUES)
    rows = a.shape[1] if kind == "elementwise" else n
    d = _matrix(draw, (max(rows, m), draw(st.integers(1, 3)) + n), DENSE_VALUES)
    reader = draw(st.sampled_from(READERS))
    if reader != "matmul":
        d = d[:m]
    else:
        d = d[:rows]
    return Case(kind, draw(st.sampled_from(("csr", "csc", "coo"))), a, b, d, reader,
                draw(st.booleans()) or kind == "elementwise")


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=cases())
def test_random_held_value_read_with_special_data(case: Case) -> None:
    want = case.expected()
    for name in ("compiled", "reference"):
        with tier(name):
            got = case.run()
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True,
                                   err_msg=f"{name}: {case!r}")
