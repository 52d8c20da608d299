"""A held value a compute keeps keeps its implicit region (docs/api.md, "The fill rule";
``api.array.held_regions``): ``P = A @ B`` held, computed by ``xp.compute(P @ D0)``,
then read by ``P @ D`` with ``D`` holding inf or NaN is 0 where ``P`` is unreached, as the
lazy ``(A @ B) @ D`` is (and scipy's product): never the NaN a dense store of ``P`` gives.
Checked in the compiled, eager and reference tiers against NumPy on the dense equivalent
(the product's unreached entries masked), for matmul, a transposed product, tensordot and
an elementwise product of sparse operands, in every sparse operand format."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

import lazysparse as xp
from lazysparse.engine import plan_cache

TIERS = ("compiled", "eager", "reference")
FORMATS = ("csr", "csc", "coo")
SPECIALS = (np.inf, -np.inf, np.nan)


@contextmanager
def tier(name: str) -> Iterator[None]:
    """Run with the tier ``name``: compiled (``LAZYSPARSE_COMPILE=sync``), eager
    (``LAZYSPARSE_COMPILE=eager``) or the reference interpreter."""
    env = {"compiled": {"LAZYSPARSE_COMPILE": "sync"},
           "eager": {"LAZYSPARSE_COMPILE": "eager"},
           "reference": {"LAZYSPARSE_EXECUTOR": "reference"}}[name]
    old = {k: os.environ.get(k) for k in ("LAZYSPARSE_COMPILE", "LAZYSPARSE_EXECUTOR")}
    os.environ.pop("LAZYSPARSE_EXECUTOR", None)
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# A: 5 x 4 with an empty row (row 4); B: 4 x 5 with an empty column (column 3): A @ B is
# unreached on row 4 and column 3 (and wherever no k pairs up); positive: no sum cancels
A = np.array([[1.0, 0.0, 2.0, 0.0], [0.0, 3.0, 0.0, 0.0], [0.5, 0.0, 0.0, 1.0],
              [0.0, 0.0, 4.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
B = np.array([[1.0, 0.0, 0.0, 0.0, 2.0], [0.0, 1.0, 0.0, 0.0, 0.0],
              [0.0, 0.0, 3.0, 0.0, 1.0], [1.0, 1.0, 0.0, 0.0, 0.0]])
S = np.array([[1.0, 0.0, 2.0, 1.0, 0.0], [0.0, 3.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0, 2.0],
              [0.0, 2.0, 4.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0]])


def _hit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Where some stored product reaches ``x @ y``."""
    return ((x != 0).astype(np.int64) @ (y != 0).astype(np.int64)) > 0


# name -> (build P from the operand format, P's value in NumPy, where P is reached)
HELD: dict[str, tuple[Callable[[str], Any], np.ndarray, np.ndarray]] = {
    "matmul": (lambda f: xp.asarray(A, format=f) @ xp.asarray(B, format=f), A @ B, _hit(A, B)),
    "transposed": (lambda f: xp.asarray(A.T.copy(), format=f).T @ xp.asarray(B, format=f),
                   A @ B, _hit(A, B)),
    "tensordot": (lambda f: xp.tensordot(xp.asarray(A, format=f), xp.asarray(B, format=f),
                                         axes=1), A @ B, _hit(A, B)),
    "elementwise": (lambda f: xp.asarray(S, format=f) * xp.asarray(S.T.copy(), format=f),
                    S * S.T, (S != 0) & (S.T != 0)),
}


def fold(p: np.ndarray, hit: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``p @ x`` where only ``p``'s reached entries (``hit``) take part (NumPy, IEEE)."""
    with np.errstate(all="ignore"):
        return np.where(hit[:, :, None], p[:, :, None] * x[None, :, :], 0.0).sum(axis=1)


def bad_operand(hit: np.ndarray, special: float) -> np.ndarray:
    """A dense ``5 x 3`` operand holding ``special`` in the rows only unreached columns of
    ``P`` meet (column 1: finite there) and in row 0 (column 2: non-finite where row 0
    of ``P`` is reached, 0 in ``P``'s empty rows)."""
    d = np.random.default_rng(3).random((5, 3)) + 0.5
    d[np.flatnonzero(~hit.any(axis=0)), 1] = special
    d[0, 2] = special
    return d


def held_then(tier_name: str, held: str, fmt: str, reads: list[np.ndarray],
              keep: Callable[[Any, Any], Any]) -> list[np.ndarray]:
    """In ``tier_name``: hold ``P``, let ``keep(P, D0)`` compute it as a kept value, then
    ``P @ D`` for each ``D`` of ``reads``."""
    build, _, _ = HELD[held]
    with tier(tier_name), np.errstate(all="ignore"):
        p = build(fmt)
        xp.compute(keep(p, xp.asarray(np.ones((5, 3)))))
        assert p.result is not None, "P was not kept"
        return [np.asarray(xp.compute(p @ xp.asarray(d))) for d in reads]


def _keep_product(p: Any, d0: Any) -> Any:
    return p @ d0


def _keep_read_twice(p: Any, d0: Any) -> Any:
    return p @ d0 + p @ (d0 * 2.0)


KEEPERS = {"matmul": _keep_product, "transposed": _keep_product, "tensordot": _keep_product,
           "elementwise": _keep_read_twice}


@pytest.mark.parametrize("tier_name", TIERS)
@pytest.mark.parametrize("held", list(HELD))
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("special", SPECIALS)
def test_held_product_read_with_non_finite_data(tier_name: str, held: str, fmt: str,
                                                special: float) -> None:
    """``P`` kept by a finite compute, then ``P @ D`` with ``D`` holding ``special`` only
    where ``P`` is unreached: finite, as the lazy ``P @ D`` and scipy give."""
    _, value, hit = HELD[held]
    d = bad_operand(hit, special)
    want = fold(value, hit, d)
    with np.errstate(all="ignore"):
        dense = value @ d  # what a dense P gives: NaN where the right answer is finite
    assert (np.isfinite(want) & np.isnan(dense)).any()
    (got,) = held_then(tier_name, held, fmt, [d], KEEPERS[held])
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True,
                               err_msg=f"{tier_name} {held} {fmt}")


@pytest.mark.parametrize("tier_name", TIERS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_held_product_divided_where_unreached(tier_name: str, fmt: str) -> None:
    """``P / D`` with ``D`` 0 where ``P`` is unreached: 0 there (the implicit 0 annihilates
    the numerator), as the lazy ``(A @ B) / D`` is."""
    build, value, hit = HELD["matmul"]
    d = np.where(hit, 2.0, 0.0)
    want = np.where(hit, value / 2.0, 0.0)
    with tier(tier_name), np.errstate(all="ignore"):
        p = build(fmt)
        xp.compute(p @ xp.asarray(np.ones((5, 3))))
        assert p.result is not None
        got = np.asarray(xp.compute(p / xp.asarray(d)))
    np.testing.assert_array_equal(got, want, err_msg=f"{tier_name} {fmt}")


@pytest.mark.parametrize("order", ["finite first", "non-finite first"])
def test_held_product_through_the_plan_cache(order: str) -> None:
    """The same shapes again with the finite and the non-finite read swapped, twice: each
    call is right whatever plan the cache holds for the other."""
    _, value, hit = HELD["matmul"]
    finite, bad = np.ones((5, 3)), bad_operand(hit, np.inf)
    reads = [finite, bad] if order == "finite first" else [bad, finite]
    plan_cache.clear_plan_cache()
    for _ in range(2):
        got = held_then("compiled", "matmul", "csr", reads, _keep_product)
        for g, d in zip(got, reads, strict=True):
            np.testing.assert_allclose(g, fold(value, hit, d), rtol=1e-12, equal_nan=True,
                                       err_msg=order)


@pytest.mark.parametrize("tier_name", TIERS)
def test_held_vector_product(tier_name: str) -> None:
    """``y = A @ x`` held (a reduction), kept by ``vecdot(y, x)``, then ``y / d`` with ``d``
    0 on ``A``'s empty row: 0 there, as the lazy ``(A @ x) / d`` is."""
    x, d = np.arange(1.0, 5.0), np.array([1.0, 2.0, 4.0, 8.0, 0.0])
    want = np.where(A.any(axis=1), (A @ x) / np.where(d == 0, 1.0, d), 0.0)
    with tier(tier_name), np.errstate(all="ignore"):
        y = xp.asarray(A, format="csr") @ xp.asarray(x)
        float(xp.vecdot(y, xp.asarray(np.ones(5))))
        assert y.result is not None
        got = np.asarray(xp.compute(y / xp.asarray(d)))
    np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=tier_name)


def test_product_reaching_every_entry_keeps_the_optimizers_format() -> None:
    """A held ``A @ p`` whose matrix has no empty row reaches every entry: it has no region
    to keep, so it is stored as the optimizer chooses (dense), as solver loops need; one
    with an empty row is stored sparse, and a held product that reached every entry is
    stored dense after its compute."""
    full_a = A[:4] + np.eye(4)
    y = xp.asarray(full_a, format="csr") @ xp.asarray(np.ones(4))
    float(xp.vecdot(y, xp.asarray(np.ones(4))))
    assert y.format == "dense"
    z = xp.asarray(A, format="csr") @ xp.asarray(np.ones(4))
    float(xp.vecdot(z, xp.asarray(np.ones(5))))
    assert z.format != "dense"
    np.testing.assert_allclose(np.asarray(z), A @ np.ones(4))
    q = xp.asarray(np.ones((3, 2)), format="csr") @ xp.asarray(np.ones((2, 3)), format="csr")
    xp.compute(q @ xp.asarray(np.ones((3, 2))))
    assert q.format == "dense"
    np.testing.assert_allclose(np.asarray(q), np.full((3, 3), 2.0))


D_BAD = np.ones((5, 3))
D_BAD[3, 1] = np.inf  # meets column 3 of A @ B, never reached
D_BAD[0, 2] = np.nan  # meets row 0 of A @ B where reached
P_HIT = _hit(A, B)


def _p() -> Any:
    return xp.asarray(A, format="csr") @ xp.asarray(B, format="csr")


def _keep(p: Any) -> None:
    xp.compute(p @ xp.asarray(np.ones((5, 3))))


def _setitem_before_keep() -> Any:
    p = _p()
    p[4, 3] = 2.0
    _keep(p)
    return p @ xp.asarray(D_BAD)


def _setitem_after_keep() -> Any:
    p = _p()
    _keep(p)
    p[4, 3] = 2.0
    return p @ xp.asarray(D_BAD)


def _view_of_kept() -> Any:
    p = _p()
    _keep(p)
    return p[1:5] @ xp.asarray(D_BAD)


def _view_built_before() -> Any:
    p = _p()
    v = p[1:5]
    _keep(p)
    return v @ xp.asarray(D_BAD)


def _kept_view() -> Any:
    v = _p()[1:5]
    xp.compute(v @ xp.asarray(np.ones((5, 3))))
    return v @ xp.asarray(D_BAD)


def _concat_of_held() -> Any:
    p = _p()
    q = xp.concat([p, p], axis=0)
    return q @ xp.asarray(D_BAD)


def _reshape_of_held() -> Any:
    d = np.ones(25)
    d[24] = np.inf  # entry (4, 4) of A @ B: never reached
    return xp.reshape(_p(), (25,)) * xp.asarray(d)


def _deep_held() -> Any:
    p = (_p() * 2.0) @ xp.asarray(np.eye(5))  # row 4 unreached; column 3 reached (sums of 0)
    _keep(p)
    return p @ xp.asarray(D_BAD)


def _where_held() -> Any:
    p = _p()
    q = xp.where(p > 1.0, p, 0.0)  # p's region; a stored p <= 1 is a stored 0
    ones = xp.asarray(np.ones((5, 3)))
    xp.compute(q @ ones + q @ ones)
    return q @ xp.asarray(D_BAD)


def _written(value: np.ndarray, hit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``value`` and ``hit`` with ``[4, 3] = 2`` written."""
    value, hit = value.copy(), hit.copy()
    value[4, 3], hit[4, 3] = 2.0, True
    return value, hit


_ROWS = np.broadcast_to(P_HIT.any(axis=1)[:, None], (5, 5))
# name -> (the sequence, what NumPy on the dense equivalent says)
SEQUENCES: dict[str, tuple[Callable[[], Any], Callable[[], np.ndarray]]] = {
    "setitem before keep": (_setitem_before_keep,
                            lambda: fold(*_written(A @ B, P_HIT), D_BAD)),
    "setitem after keep": (_setitem_after_keep, lambda: fold(*_written(A @ B, P_HIT), D_BAD)),
    "view of a kept value": (_view_of_kept, lambda: fold((A @ B)[1:5], P_HIT[1:5], D_BAD)),
    "view built before": (_view_built_before, lambda: fold((A @ B)[1:5], P_HIT[1:5], D_BAD)),
    "kept view": (_kept_view, lambda: fold((A @ B)[1:5], P_HIT[1:5], D_BAD)),
    "concat": (_concat_of_held, lambda: fold(np.vstack([A @ B] * 2), np.vstack([P_HIT] * 2),
                                             D_BAD)),
    "reshape": (_reshape_of_held, lambda: np.where(P_HIT.ravel(), (A @ B).ravel(), 0.0)),
    "deep": (_deep_held, lambda: fold(2.0 * (A @ B), _ROWS, D_BAD)),
    "where": (_where_held, lambda: fold(np.where(A @ B > 1.0, A @ B, 0.0), P_HIT, D_BAD)),
}


@pytest.mark.parametrize("tier_name", TIERS)
@pytest.mark.parametrize("name", list(SEQUENCES))
def test_held_value_variants(tier_name: str, name: str) -> None:
    """Writes, views, joins and deeper histories of a held product, each materialized by
    the library (a kept value, a write, an eager function's operand), then read with
    inf and NaN: the product's region survives every one."""
    run, expected = SEQUENCES[name]
    with np.errstate(all="ignore"):
        want = expected()
        with tier(tier_name):
            got = np.asarray(xp.compute(run()))
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True,
                               err_msg=f"{tier_name} {name}")


@pytest.mark.parametrize("tier_name", TIERS)
def test_kept_product_keeps_a_cancelled_sum(tier_name: str) -> None:
    """A reached sum that cancels to 0 is data in the kept value as in the lazy one
    (``0 * inf`` is NaN), an unreached entry is not (0)."""
    a = np.array([[1.0, -1.0], [0.0, 0.0]])
    b = np.array([[1.0, 0.0], [1.0, 0.0]])  # a @ b: [0, 0] cancels; row 1, column 1 unreached
    d = np.array([[np.inf, 1.0], [np.inf, 1.0]])
    want = fold(a @ b, _hit(a, b), d)
    assert np.isnan(want[0, 0]) and want[1, 0] == 0.0
    with tier(tier_name), np.errstate(all="ignore"):
        p = xp.asarray(a, format="csr") @ xp.asarray(b, format="csr")
        xp.compute(p @ xp.asarray(np.ones((2, 2))))
        assert p.result is not None
        got = np.asarray(xp.compute(p @ xp.asarray(d)))
    np.testing.assert_allclose(got, want, equal_nan=True, err_msg=tier_name)


@pytest.mark.parametrize("tier_name", TIERS)
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("how", ["requested", "shared by a held value"])
def test_stored_map_read_by_a_product_with_non_finite_data(tier_name: str, fmt: str,
                                                           how: str) -> None:
    """``q = S * S`` stored first in the plan that reads it by ``q @ D`` with ``D``
    holding inf (asked for too, or read by a held product the compute keeps): the map's
    implicit region annihilates ``D``'s inf, as the lazy ``q @ D`` does, whatever format
    the map's density would get (``optimizer.unreached._map_region_uses``)."""
    s = np.array([[1.0, 2.0, 1.0, 1.0, 0.0], [1.0, 1.0, 3.0, 0.0, 1.0],
                  [2.0, 1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 1.0, 1.0, 0.0], [0.0] * 5])  # 60 %
    d = np.ones((5, 3))
    d[4, 0] = np.inf  # column 4 of S: stored in row 1 only
    d[3, 2] = np.nan  # column 3: rows 0, 2, 3
    want = fold(s * s, s != 0, d)
    with tier(tier_name), np.errstate(all="ignore"):
        q = xp.asarray(s, format=fmt) * xp.asarray(s, format=fmt)
        if how == "requested":
            got, _ = xp.compute(q @ xp.asarray(d), q)
        else:
            held = q @ xp.asarray(np.ones((5, 5)), format="csr")
            held[0, 0] = 3.0  # a lazy write: the compute below keeps it (shared history)
            got = xp.compute(q @ xp.asarray(d))
            assert held.result is not None
            # the kept write layer over q @ ones: unreached on q's empty row 4
            value = (s * s) @ np.ones((5, 5))
            value[0, 0] = 3.0
            hit = np.broadcast_to((s != 0).any(axis=1)[:, None], (5, 5))
            np.testing.assert_allclose(np.asarray(xp.compute(held @ xp.asarray(d))),
                                       fold(value, hit, d), rtol=1e-12, equal_nan=True,
                                       err_msg=f"{tier_name} {fmt} the kept value")
        got = np.asarray(got)
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True,
                               err_msg=f"{tier_name} {fmt} {how}")


def _kron_sum_parts(s: int) -> tuple[np.ndarray, np.ndarray]:
    """The identity and the 1-D Laplacian of size ``s`` (the 2-D Laplacian's factors)."""
    eye = np.eye(s)
    return eye, 2 * eye - np.eye(s, k=1) - np.eye(s, k=-1)


@pytest.mark.parametrize("tier_name", TIERS)
def test_kept_sum_of_outer_products_stores_only_what_a_term_reaches(tier_name: str) -> None:
    """``I ⊗ T + T ⊗ I`` as a broadcast product, kept for ``reshape`` (an eager function's
    operand keeps its region): the loops walk the union of ``I``'s and ``T``'s rows at
    both levels, a point no term reaches stays implicit, so the Laplacian stores scipy's
    entries and ``L @ d`` with inf in ``d`` is NaN nowhere (no stored 0 meets an inf)."""
    s = 7
    i_np, t_np = _kron_sum_parts(s)
    want_l = np.kron(i_np, t_np) + np.kron(t_np, i_np)
    d = np.zeros(s * s)
    d[::5] = np.inf
    want = fold(want_l, want_l != 0, d[:, None])[:, 0]
    with tier(tier_name), np.errstate(all="ignore"):
        eye = xp.eye(s)
        t = 2 * eye - xp.eye(s, k=1) - xp.eye(s, k=-1)
        l4 = (eye[:, None, :, None] * t[None, :, None, :]
              + t[:, None, :, None] * eye[None, :, None, :])
        lap = xp.reshape(l4, (s * s, s * s))
        got = np.asarray(xp.compute(lap @ xp.asarray(d)))
        assert lap.nnz == int(np.count_nonzero(want_l)), tier_name
    np.testing.assert_array_equal(got, want, err_msg=tier_name)


@pytest.mark.parametrize("tier_name", TIERS)
def test_kept_sum_of_products_reduced_stores_only_reached_entries(tier_name: str) -> None:
    """``sum_k A[i,k] B[k,j] + C[i,k] E[k,j]`` kept for ``reshape``: a point where only
    ``A`` and ``E`` store is reached by neither term, so an output entry no term reaches
    stays implicit even though the loops visit it."""
    a = np.array([[1.0, 0.0], [0.0, 0.0]])
    c = np.array([[0.0, 0.0], [1.0, 0.0]])
    b = np.array([[0.0, 0.0], [0.0, 0.0]])
    e = np.array([[0.0, 2.0], [0.0, 0.0]])
    # A(0,0) with E(0,1): the loops visit (i=0, k=0, j=1) through A's row and E's row
    b[0, 0] = 3.0
    want_p = a @ b + c @ e
    reached = _hit(a, b) | _hit(c, e)
    d = np.array([[np.inf], [1.0]])
    want = fold(want_p, reached, d)
    with tier(tier_name), np.errstate(all="ignore"):
        sa, sb, sc, se = (xp.asarray(m, format="csr") for m in (a, b, c, e))
        p3 = sa[:, :, None] * sb[None, :, :] + sc[:, :, None] * se[None, :, :]
        p = xp.reshape(xp.sum(p3, axis=1), (2, 2))
        got = np.asarray(xp.compute(p @ xp.asarray(d)))
        assert p.nnz == int(reached.sum()), tier_name
    np.testing.assert_array_equal(got, want, err_msg=tier_name)
