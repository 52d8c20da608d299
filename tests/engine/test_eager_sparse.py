"""The eager tier over stored entries (``engine.eager_sparse``): a plan with an operand over
``EAGER_MAX_ELEMENTS`` runs at once on scipy.sparse and NumPy. Each case runs on both tiers
(``sync``: the compiled kernels; ``eager`` with the dense interpreter's bound lowered, so
small data takes the stored-entry path) and is checked against the compiled tier (values,
dtype, result format, fill value, stored entries) and against NumPy on the dense
equivalent; no kernel compiles for the eager run."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.api.array.materialize import build_plan
from lazysparse.engine import background, eager_sparse, plan_store, tiers
from lazysparse.engine.plan_cache import clear_plan_cache, lookup
from lazysparse.formats import DensifyError, set_densify_limit
from lazysparse.kernels.backends.numba import cache
from lazysparse.logic.nodes import Field
from tests.conftest import rotation

RNG = np.random.default_rng(11)
ROWS, COLS = 40, 30


def _uniform(seed: int) -> np.ndarray:
    """A sparse matrix with a few empty rows and an explicitly stored zero."""
    a = sp.random_array((ROWS, COLS), density=0.06, format="csr", rng=seed).toarray()
    a[[3, 17, 29]] = 0.0  # empty rows
    return a


def _zipf(seed: int) -> np.ndarray:
    """Skewed data: columns zipf-distributed (a few columns hold most entries)."""
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, ROWS, 90)
    cols = np.minimum(rng.zipf(1.3, 90) - 1, COLS - 1)
    m = sp.coo_array((rng.integers(1, 5, 90).astype(np.float64), (rows, cols)),
                     shape=(ROWS, COLS)).toarray()
    m[5] = 0.0
    return m


DATA = {"uniform": (_uniform(1), _uniform(2)), "zipf": (_zipf(3), _zipf(4))}
D_NP = RNG.standard_normal((ROWS, COLS))
V_NP = RNG.standard_normal(COLS)
U_NP = RNG.standard_normal(ROWS)


def _ns(a: Any) -> Any:
    return np if isinstance(a, np.ndarray) else xp


# (name, expression over (S, T, D, v, u): lazysparse or NumPy operands)
CASES: list[tuple[str, Callable[..., Any]]] = [
    ("S*2", lambda s, t, d, v, u: s * 2.0),
    ("S+T", lambda s, t, d, v, u: s + t),
    ("S-T", lambda s, t, d, v, u: s - t),
    ("S*T", lambda s, t, d, v, u: s * t),
    ("max(S,T)", lambda s, t, d, v, u: _ns(s).maximum(s, t)),
    ("min(S,-T)", lambda s, t, d, v, u: _ns(s).minimum(s, -t)),
    ("abs(S-T)*S", lambda s, t, d, v, u: _ns(s).abs(s - t) * s),
    ("sqrt(S)", lambda s, t, d, v, u: _ns(s).sqrt(s)),
    ("S>1.5", lambda s, t, d, v, u: _ns(s).astype(s > 1.5, _ns(s).float64)),
    ("S<=1.5", lambda s, t, d, v, u: s <= 1.5),
    ("S*D", lambda s, t, d, v, u: s * d),
    ("S/D", lambda s, t, d, v, u: s / d),
    ("S+D", lambda s, t, d, v, u: s + d),
    ("S*v rows", lambda s, t, d, v, u: s * v[None, :]),
    ("u*S cols", lambda s, t, d, v, u: u[:, None] * s),
    ("sum0", lambda s, t, d, v, u: _ns(s).sum(s, axis=0)),
    ("sum1", lambda s, t, d, v, u: _ns(s).sum(s, axis=1)),
    ("sum", lambda s, t, d, v, u: _ns(s).sum(s * 3.0)),
    ("max0", lambda s, t, d, v, u: _ns(s).max(s, axis=0)),
    ("min1", lambda s, t, d, v, u: _ns(s).min(s - t, axis=1)),
    ("mean0", lambda s, t, d, v, u: _ns(s).mean(s, axis=0)),
    ("prod1", lambda s, t, d, v, u: _ns(s).prod(s + 1.0, axis=1)),
    ("S@v", lambda s, t, d, v, u: s @ v),
    ("(3S)@v", lambda s, t, d, v, u: (s * 3.0) @ v),
    ("S.T@u", lambda s, t, d, v, u: s.T @ u),
    ("S@T.T", lambda s, t, d, v, u: s @ t.T),
    ("S.T@T", lambda s, t, d, v, u: s.T @ t),
    ("(S-T)@(S-T).T", lambda s, t, d, v, u: (s - t) @ (s - t).T),
    ("S@D.T", lambda s, t, d, v, u: s @ d.T),
    ("S.T", lambda s, t, d, v, u: s.T * 1.0),
    ("S.T+T.T", lambda s, t, d, v, u: s.T + t.T),
    ("sigmoid(S@v)", lambda s, t, d, v, u: 1 / (1 + _ns(s).exp(-(s @ v)))),
    ("(S@v)*u", lambda s, t, d, v, u: (s @ v) * u),
    ("L2 rows", lambda s, t, d, v, u: s / _ns(s).where(
        _ns(s).sum(s * s, axis=1) == 0, 1.0, _ns(s).sqrt(_ns(s).sum(s * s, axis=1)))[:, None]),
    ("S[:10]@T.T", lambda s, t, d, v, u: s[:10] @ t.T),
    ("concat", lambda s, t, d, v, u: _ns(s).concat([s[:5], t[-5:]]) * 2.0
     if _ns(s) is xp else np.concatenate([s[:5], t[-5:]]) * 2.0),
]


@pytest.fixture
def stored_tier(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """Every operand counts as large (the stored-entry evaluator runs); plans start
    afresh (none read from disk: one there ran compiled and would run compiled at once);
    the returned function sets ``LAZYSPARSE_COMPILE``."""
    monkeypatch.setattr(tiers, "EAGER_MAX_ELEMENTS", 0)
    monkeypatch.setattr(plan_store, "load", lambda key: None)
    clear_plan_cache()

    def set_mode(name: str) -> None:
        monkeypatch.setenv("LAZYSPARSE_COMPILE", name)

    yield set_mode
    background.shutdown()
    clear_plan_cache()


def _operands(fmt: str, kind: str, fill: float = 0.0) -> tuple[Any, ...]:
    s_np, t_np = DATA[kind]
    s = xp.asarray(np.where(s_np != 0, s_np, fill), format=fmt, fill_value=fill)
    t = xp.asarray(np.where(t_np != 0, t_np, fill), format=fmt, fill_value=fill)
    return s, t, xp.asarray(D_NP), xp.asarray(V_NP), xp.asarray(U_NP)


def _compute_counted(e: Callable[[], Any]) -> tuple[Any, int, int, int]:
    """``compute`` of ``e()`` with the eager runs, refusals and kernel compiles it caused."""
    eager, refused = tiers.STATS["eager"], tiers.STATS["eager_refused"]
    compiled = cache.STATS["compiled"]
    r = xp.compute(e())
    return (r, tiers.STATS["eager"] - eager, tiers.STATS["eager_refused"] - refused,
            cache.STATS["compiled"] - compiled)


def _check_same(got: Any, want: Any, what: str) -> None:
    """Values, dtype, format, fill and stored entries of the eager result are the compiled
    tier's, and no fill value is stored."""
    g, w = got.tensor(), want.tensor()
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-12,
                               equal_nan=True, err_msg=what)
    assert g.spec.name == w.spec.name, (what, g.spec.name, w.spec.name)
    np.testing.assert_equal(np.asarray(g.fill_value), np.asarray(w.fill_value))
    if not g.full:
        assert g.nnz == w.nnz, (what, g.nnz, w.nnz)
        vals = g.to_scipy("coo").data if g.ndim == 2 and g.fill_value == 0 else None
        assert vals is None or not (vals == 0).any(), f"{what}: a stored fill"


@pytest.mark.parametrize("kind", ["uniform", "zipf"])
@pytest.mark.parametrize("name, fn, fmt", rotation(CASES, ["csr", "csc", "coo"],
                                                   [c[0] for c in CASES]))
def test_stored_tier_matches_compiled_and_numpy(stored_tier: Callable[[str], None],
                                                fmt: str, kind: str, name: str,
                                                fn: Callable[..., Any]) -> None:
    stored_tier("sync")
    want = xp.compute(fn(*_operands(fmt, kind)))
    stored_tier("eager")
    got, ran, refused, compiled = _compute_counted(lambda: fn(*_operands(fmt, kind)))
    assert (ran, refused, compiled) == (1, 0, 0), f"{name}: eager {ran}, refused {refused}, " \
                                                  f"compiled {compiled}"
    _check_same(got, want, f"{name} {fmt} {kind}")
    s_np, t_np = DATA[kind]
    with np.errstate(all="ignore"):
        ref = np.asarray(fn(s_np, t_np, D_NP, V_NP, U_NP))
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-12, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("name, fn", [c for c in CASES if c[0] in
                                      ("S*2", "S+T", "sum0", "S@v", "S@T.T")],
                         ids=["S*2", "S+T", "sum0", "S@v", "S@T.T"])
def test_nan_fill_waits_for_the_compiler(stored_tier: Callable[[str], None], name: str,
                                         fn: Callable[..., Any]) -> None:
    """A sparse operand with fill NaN is not scipy's: the plan is refused and compiled
    (same values as ``sync``)."""
    stored_tier("sync")
    want = xp.compute(fn(*_operands("csr", "uniform", np.nan)))
    stored_tier("eager")
    got, ran, refused, _ = _compute_counted(lambda: fn(*_operands("csr", "uniform", np.nan)))
    assert (ran, refused) == (0, 1)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_fill_rule_against_a_nan_partner(stored_tier: Callable[[str], None]) -> None:
    """An implicit 0 annihilates a NaN or inf partner (``S * D``, ``S / D``) while a
    stored 0 does not, as the compiled tier computes; the product with a NaN partner is not
    plain arithmetic, so it waits for the compiler."""
    s = xp.asarray(sp.csr_array((np.array([0.0, 2.0]), np.array([0, 1]), np.array([0, 2, 2])),
                                shape=(2, 2)))
    d = xp.asarray(np.array([[np.nan, np.inf], [np.nan, 0.0]]))
    for fn in (lambda: s * d, lambda: s / d, lambda: (s * 1.0) * d):
        stored_tier("sync")
        want = np.asarray(xp.compute(fn()))
        stored_tier("eager")
        got, ran, _, _ = _compute_counted(fn)
        assert ran == 1
        np.testing.assert_array_equal(np.asarray(got), want)
    stored_tier("eager")
    got, ran, refused, _ = _compute_counted(lambda: s @ d)
    assert (ran, refused) == (0, 1)
    np.testing.assert_array_equal(np.asarray(got), [[np.nan, np.nan], [0.0, 0.0]])


def test_cancelling_product_keeps_its_structural_entries(
        stored_tier: Callable[[str], None], monkeypatch: pytest.MonkeyPatch) -> None:
    """``A @ B`` whose sum cancels to 0 at a reached entry: scipy drops it, the reference
    interpreter keeps it as data, so a 0 partner still divides it (``(A @ B) / D`` is NaN
    there, 0 where no product was reached: the implicit 0 annihilates the division). The
    eager tier follows the reference, as the compiled one does
    (``tests/api/test_fill_rule_epilogue.py``)."""
    a = xp.asarray(np.array([[1.0, 1.0], [0.0, 0.0]]), format="csr")
    b = xp.asarray(np.array([[1.0, 0.0], [-1.0, 0.0]]), format="csr")
    d = xp.asarray(np.zeros((2, 2)))
    stored_tier("eager")
    got, ran, _, compiled = _compute_counted(lambda: (a @ b) / d)
    assert ran == 1 and compiled == 0
    monkeypatch.setenv("LAZYSPARSE_EXECUTOR", "reference")
    want = np.asarray(xp.compute((a @ b) / d))
    np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(want, [[np.nan, 0.0], [0.0, 0.0]])


def test_scaled_product_runs_eager(stored_tier: Callable[[str], None]) -> None:
    """``(S @ T.T) * D``, which the optimizer writes ``sum_k S_ik T_jk D_ij``: contracted by
    scipy, then scaled; a non-finite factor waits for the compiler."""
    s, t, d, v, u = _operands("csr", "zipf")
    stored_tier("sync")
    want = xp.compute((s @ t.T) * (u[:, None] * u))
    stored_tier("eager")
    got, ran, refused, compiled = _compute_counted(lambda: (s @ t.T) * (u[:, None] * u))
    assert (ran, refused, compiled) == (1, 0, 0)
    _check_same(got, want, "(S @ T.T) * outer(u, u)")
    s_np, t_np = DATA["zipf"]
    np.testing.assert_allclose(np.asarray(got), (s_np @ t_np.T) * np.outer(U_NP, U_NP),
                               rtol=1e-12, atol=1e-12)
    w = xp.asarray(np.where(np.eye(ROWS) > 0, np.inf, 1.0))
    got, ran, refused, _ = _compute_counted(lambda: (s @ t.T) * w)
    assert (ran, refused) == (0, 1)


@pytest.mark.slow  # a fresh interpreter: the full suite
def test_background_large_operands_run_eager_first(stored_tier: Callable[[str], None],
                                                   tmp_path: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """In the default mode a first call with large operands runs eager (no compile in this
    process) and sends nothing to the worker; when the shape repeats it runs eager again
    while the worker compiles its kernels; once they are on disk it runs compiled."""
    monkeypatch.setenv("LAZYSPARSE_CACHE_DIR", str(tmp_path))
    stored_tier("background")
    s, t, d, v, u = _operands("csr", "zipf")
    want = (DATA["zipf"][0] * 5.0) @ V_NP - 1.0
    e = (s * 5.0) @ v - 1.0
    st = tiers.state_of(lookup(build_plan((e,)))[0])
    got, ran, refused, compiled = _compute_counted(lambda: (s * 5.0) @ v - 1.0)
    assert (ran, refused, compiled) == (1, 0, 0) and st.job is None and not st.submitted
    np.testing.assert_allclose(np.asarray(got), want)
    got, ran, refused, compiled = _compute_counted(lambda: (s * 5.0) @ v - 1.0)
    assert (ran, refused, compiled) == (1, 0, 0) and st.job is not None
    np.testing.assert_allclose(np.asarray(got), want)
    assert background.wait(st.job, 240) is background.JobState.DONE, st.job.message
    got, ran, refused, compiled = _compute_counted(lambda: (s * 5.0) @ v - 1.0)
    assert (ran, compiled) == (0, 0) and st.last is tiers.Tier.COMPILED
    np.testing.assert_allclose(np.asarray(got), want)


def test_unstored_fill_of_a_table_is_refused() -> None:
    """The evaluator reads scipy's fill only; another fill raises NotEager (the tier then
    compiles)."""
    t = xp.asarray(np.array([[np.nan, 1.0], [2.0, np.nan]]), format="csr",
                   fill_value=np.nan).tensor()
    with pytest.raises(eager_sparse.NotEager, match="fill nan"):
        eager_sparse.stored_table(t)


def test_densify_limit_as_the_compiled_tier(stored_tier: Callable[[str], None]) -> None:
    """Under a small densify limit both tiers agree: the same result, or the same
    DensifyError (the eager tier refuses a dense result past the limit that is larger than
    every operand's stored values, as the compiled host does)."""
    limit = ROWS * 8  # bytes: one row of float64
    for name, fn in [c for c in CASES if c[0] in ("S+D", "S@T.T", "S.T@T", "sum0", "S+T")]:
        outcomes = []
        for mode in ("sync", "eager"):
            stored_tier(mode)
            try:
                with set_densify_limit(limit):
                    r = xp.compute(fn(*_operands("csr", "uniform")))
                outcomes.append((r.tensor().spec.name, np.asarray(r)))
            except DensifyError:
                outcomes.append(("DensifyError", None))
        (want_fmt, want), (got_fmt, got) = outcomes
        assert got_fmt == want_fmt, (name, got_fmt, want_fmt)
        if want is not None:
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_products_read_a_tables_row_counts_from_its_statistics(
        stored_tier: Callable[[str], None], fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``S @ v`` and ``S.T @ u`` in a loop: which rows of the product sum nothing (its
    implicit entries) comes from the table's degree statistics, computed once per tensor,
    not from a count of its entries on every call; the values, with the empty rows and
    columns of S, are NumPy's."""
    s_np = DATA["uniform"][0]
    assert (s_np != 0).any(axis=0).sum() < COLS or (s_np != 0).any(axis=1).sum() < ROWS
    s, v, u = xp.asarray(s_np, format=fmt), xp.asarray(V_NP), xp.asarray(U_NP)
    stored_tier("eager")
    counted: list[int] = []
    real = eager_sparse._row_counts
    monkeypatch.setattr(eager_sparse, "_row_counts", lambda m: counted.append(1) or real(m))
    for _ in range(3):
        got_sv = xp.compute(s @ v)
        got_tu = xp.compute(s.T @ u)
        np.testing.assert_allclose(np.asarray(got_sv), s_np @ V_NP, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.asarray(got_tu), s_np.T @ U_NP, rtol=1e-12, atol=1e-12)
    assert counted == []
    st = eager_sparse.stored_table(s.tensor())
    assert st is not None and st.stats is not None
    i, j = Field("i"), Field("j")
    st.fields = (i, j)
    for first, m in ((i, st.mat), (j, st.mat.T)):
        np.testing.assert_array_equal(st.row_counts(first, m), real(m))
        np.testing.assert_array_equal(st.transposed().row_counts(first, m), real(m))
