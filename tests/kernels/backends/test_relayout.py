"""backends.relayout: a query that only lays a sparse operand out again (a transposed copy)
runs through the formats stage's linear-time conversion, never a sorting kernel; every
result is checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.formats import Tensor
from lazysparse.kernels.backends import relayout
from lazysparse.kernels.backends.numba import cache


@pytest.fixture(autouse=True)
def compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAZYSPARSE_EXECUTOR", raising=False)


@pytest.fixture
def relayouts(monkeypatch: pytest.MonkeyPatch) -> list[Tensor]:
    """The tensors the relayout path produced."""
    out: list[Tensor] = []
    real = relayout.run_relayout

    def counting(info: object, data: object) -> Tensor:
        t = real(info, data)  # type: ignore[arg-type]
        out.append(t)
        return t

    from lazysparse.kernels.backends import execute

    monkeypatch.setattr(execute, "run_relayout", counting)  # execute.choose_runner's
    return out


def _sparse(seed: int, fmt: str, fill: float, n: int = 300) -> tuple[xp.LazyArray, np.ndarray]:
    m = sp.random_array((n, n), density=0.02, format="coo", rng=np.random.default_rng(seed))
    dense = m.toarray()
    dense[dense == 0] = fill
    t = Tensor.from_coords(np.vstack([m.row, m.col]), m.data, m.shape, fill_value=fill)
    return xp.asformat(xp.asarray(t), fmt), dense


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("fill", [0.0, 1.0])
def test_transposed_product_uses_the_conversion(fmt: str, fill: float,
                                                relayouts: list[Tensor]) -> None:
    a, ad = _sparse(1, fmt, fill)
    b, bd = _sparse(2, "csr", fill)
    built = cache.STATS["generated"]
    got = np.asarray(xp.sum(a.T * b, axis=0))
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(got, (ad.T * bd).sum(axis=0))
    # CSC read transposed is already row-major; CSR and COO are laid out again
    assert len(relayouts) == (0 if fmt == "csc" else 1)
    assert cache.STATS["generated"] - built <= 1  # the product's kernel; copies convert


@pytest.mark.slow
def test_transposed_copy_is_linear_and_right_at_scale(relayouts: list[Tensor]) -> None:
    """1M x 1M with 5M entries: the relayout path (a generated sorting kernel took ~12 s)."""
    n = 1_000_000
    s1 = sp.random_array((n, n), density=5 / n, format="csr", rng=np.random.default_rng(3))
    s2 = sp.random_array((n, n), density=5 / n, format="csr", rng=np.random.default_rng(4))
    got = float(xp.sum(xp.asarray(s1).T * xp.asarray(s2)))
    assert got == pytest.approx(float(s1.T.multiply(s2).sum()))
    assert relayouts and relayouts[0].nnz == s1.nnz


def test_three_d_permutation_is_a_relayout(relayouts: list[Tensor]) -> None:
    rng = np.random.default_rng(5)
    dense = np.where(rng.random((6, 7, 8)) < 0.2, rng.random((6, 7, 8)), 0.0)
    other = np.where(rng.random((8, 7, 6)) < 0.3, rng.random((8, 7, 6)), 0.0)
    a = xp.asformat(xp.asarray(dense), "coo")
    b = xp.asformat(xp.asarray(other), "csf")
    got = np.asarray(xp.permute_dims(a, (2, 1, 0)) * b)
    np.testing.assert_allclose(got, np.transpose(dense, (2, 1, 0)) * other)


def test_only_plain_sparse_copies_qualify() -> None:
    """A cast, a reduction or a dense operand is not a relayout (a kernel runs)."""
    a, ad = _sparse(6, "csr", 0.0, n=40)
    np.testing.assert_allclose(np.asarray(xp.astype(a.T, xp.float32) * 2),
                               (ad.T * 2).astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(xp.sum(a.T, axis=0)), ad.T.sum(axis=0))


def test_explain_says_a_transpose_runs_as_a_relayout() -> None:
    x = xp.asarray(sp.random_array((50, 40), density=0.1, format="csr", rng=2))
    (k,) = xp.explain(xp.asformat(x.T, "csr")).kernels
    assert "runs as a relayout" in k.schedule
    assert all("relayout" not in (k.schedule or "") for k in xp.explain(x * 2).kernels)
