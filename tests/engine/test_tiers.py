"""Tiered execution (``engine.tiers``, ``engine.background``): a small plan shape seen first
runs eager while its kernels compile in a worker process; later calls run the compiled
kernels the worker left on disk; a worker that fails, dies or hangs makes the caller compile
in process. Values, dtypes and result formats are the compiled tier's (checked against
NumPy on the dense equivalent and against ``sync`` mode)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.api.array.materialize import build_plan
from lazysparse.engine import background, compile_worker, plan_store, tiers
from lazysparse.engine.background import JobState
from lazysparse.engine.plan_cache import clear_plan_cache, lookup
from lazysparse.engine.tiers import CompileMode, Tier, compile_mode
from lazysparse.kernels.backends.numba import cache
from tests.conftest import rotation

RNG = np.random.default_rng(7)
S_NP = sp.random_array((12, 9), density=0.3, format="csr", rng=3).toarray()
D_NP = RNG.standard_normal((12, 9))
V_NP = RNG.standard_normal(9)


@pytest.fixture
def mode(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """Set ``LAZYSPARSE_COMPILE`` for one test; plans and the worker start afresh (no plan
    read from disk either: a plan there ran compiled in an earlier test, so it would run
    compiled at once, engine/plan_store.py). No operand counts as tiny, so the worker tests'
    small shapes go to the worker at first sight (the tiny rule has tests of its own)."""
    clear_plan_cache()
    monkeypatch.setattr(plan_store, "load", lambda key: None)
    monkeypatch.setattr(tiers, "TINY_ELEMENTS", 0)

    def set_mode(name: str) -> None:
        monkeypatch.setenv("LAZYSPARSE_COMPILE", name)

    yield set_mode
    background.shutdown()
    clear_plan_cache()


def _sparse(fmt: str, fill: float = 0.0) -> Any:
    values = np.where(S_NP != 0, S_NP, fill)
    return xp.asarray(values, format=fmt, fill_value=fill)


# (name, expression over lazysparse or NumPy operands, builder of the operands)
CASES: list[tuple[str, Callable[..., Any]]] = [
    ("S*D+S", lambda s, d, v: s * d + s),
    ("S@v", lambda s, d, v: s @ v),
    ("S.T@S", lambda s, d, v: s.T @ s),
    ("sum0", lambda s, d, v: s.sum(axis=0) if isinstance(s, np.ndarray) else xp.sum(s, axis=0)),
    ("max1", lambda s, d, v: s.max(axis=1) if isinstance(s, np.ndarray) else xp.max(s, axis=1)),
    ("S/D", lambda s, d, v: s / d),
    ("exp(S)-1", lambda s, d, v: (np if isinstance(s, np.ndarray) else xp).exp(s) - 1.0),
    ("D*v+1", lambda s, d, v: d * v + 1.0),
    ("scalar", lambda s, d, v: (np if isinstance(s, np.ndarray) else xp).sum(s * 2.0)),
]


def _operands(fmt: str, fill: float) -> tuple[Any, Any, Any]:
    return _sparse(fmt, fill), xp.asarray(D_NP), xp.asarray(V_NP)


def _numpy_operands(fill: float) -> tuple[Any, Any, Any]:
    return np.where(S_NP != 0, S_NP, fill), D_NP, V_NP


def _result(e: Any) -> tuple[np.ndarray, str, Any]:
    r = xp.compute(e)
    t = r.tensor()
    return np.asarray(r), t.spec.name, t.fill_value


def _state(e: Any) -> tiers.TierState:
    """The tier record of ``e``'s plan shape (read before ``e`` is computed)."""
    entry, _, _ = lookup(build_plan((e,)))
    return tiers.state_of(entry)


def _same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True, err_msg=what)


def test_mode_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAZYSPARSE_COMPILE", raising=False)
    assert compile_mode() is CompileMode.BACKGROUND
    for m in CompileMode:
        monkeypatch.setenv("LAZYSPARSE_COMPILE", f" {m.value.upper()} ")
        assert compile_mode() is m
    monkeypatch.setenv("LAZYSPARSE_COMPILE", "later")
    with pytest.raises(ValueError, match="LAZYSPARSE_COMPILE='later'.*background"):
        compile_mode()


@pytest.mark.parametrize("fmt, fill", [("csr", 0.0), ("coo", 0.0), ("csc", 0.0),
                                       ("csr", float("nan")), ("csr", 1.0)])
@pytest.mark.parametrize("name, fn", CASES, ids=[c[0] for c in CASES])
def test_eager_tier_matches_compiled_and_numpy(mode: Callable[[str], None], fmt: str,
                                               fill: float, name: str,
                                               fn: Callable[..., Any]) -> None:
    """Values, dtype, result format and fill value of the eager tier are the compiled
    tier's; both agree with NumPy where the fill rule agrees with NumPy (fill 0)."""
    mode("sync")
    want, want_fmt, want_fill = _result(fn(*_operands(fmt, fill)))
    mode("eager")
    before = tiers.STATS["eager"]
    got, got_fmt, got_fill = _result(fn(*_operands(fmt, fill)))
    assert tiers.STATS["eager"] == before + 1, "the eager tier did not run"
    _same(got, want, f"eager vs compiled: {name} {fmt} fill={fill}")
    assert got_fmt == want_fmt
    np.testing.assert_equal(np.asarray(got_fill), np.asarray(want_fill))
    if fill == 0.0:
        with np.errstate(all="ignore"):
            ref = np.asarray(fn(*_numpy_operands(fill)))
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12, equal_nan=True)


def test_background_first_call_eager_then_compiled_from_disk(
        mode: Callable[[str], None], tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """First call: eager, a job submitted. After the worker answers: compiled, its kernel
    loaded from the disk cache the worker wrote, nothing compiled in this process."""
    monkeypatch.setenv("LAZYSPARSE_CACHE_DIR", str(tmp_path))
    mode("background")
    s, d, v = _operands("csr", 0.0)
    e = (s * 3.0) @ v + 2.0  # a kernel shape no other test compiles in this cache dir
    want = 3.0 * S_NP @ V_NP + 2.0
    before = tiers.STATS["eager"]
    st = _state(e)
    np.testing.assert_allclose(np.asarray(xp.compute(e)), want)
    assert tiers.STATS["eager"] == before + 1
    assert st.last is Tier.EAGER and st.job is not None
    assert background.wait(st.job, 240) is JobState.DONE, st.job.message
    compiled = cache.STATS["compiled"]
    loaded = cache.STATS["disk_loaded"]
    e2 = (s * 3.0) @ v + 2.0
    np.testing.assert_allclose(np.asarray(xp.compute(e2)), want)
    assert st.last is Tier.COMPILED
    assert cache.STATS["compiled"] == compiled, "the kernel compiled again in process"
    assert cache.STATS["disk_loaded"] > loaded
    text = str(xp.explain((s * 3.0) @ v + 2.0))
    assert "tier: next call compiled; last ran compiled" in text


def test_dead_worker_falls_back_to_an_in_process_compile(mode: Callable[[str], None]) -> None:
    mode("background")
    s, d, v = _operands("csr", 0.0)
    st = _state(s * d - 4.0)
    first = xp.compute(s * d - 4.0)
    assert st.job is not None
    worker = background._WORKER
    assert worker is not None
    worker.proc.kill()
    assert background.wait(st.job, 60) is JobState.FAILED
    assert "exited" in st.job.message
    again = xp.compute(s * d - 4.0)
    assert st.last is Tier.COMPILED
    np.testing.assert_allclose(np.asarray(again), np.asarray(first))
    np.testing.assert_allclose(np.asarray(again), np.where(S_NP != 0, S_NP * D_NP, 0) - 4.0)


def test_hung_job_times_out_and_compiles_in_process(mode: Callable[[str], None],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    mode("background")
    monkeypatch.setattr(background, "JOB_TIMEOUT_S", 0.0)
    s, d, v = _operands("coo", 0.0)
    st = _state(s + d * 5.0)
    xp.compute(s + d * 5.0)
    assert st.job is not None and st.job.current() is JobState.FAILED
    assert "no answer" in st.job.message
    got = xp.compute(s + d * 5.0)
    assert st.last is Tier.COMPILED
    np.testing.assert_allclose(np.asarray(got), S_NP + 5.0 * D_NP)


def test_unpicklable_plan_compiles_when_it_repeats(mode: Callable[[str], None],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    mode("background")
    monkeypatch.setattr(background, "submit", lambda plan: None)  # as for an unpicklable
    s, d, v = _operands("csr", 0.0)
    st = _state(s * 7.0)
    xp.compute(s * 7.0)
    assert st.last is Tier.EAGER and st.submitted and st.job is None
    np.testing.assert_allclose(np.asarray(xp.compute(s * 7.0)), 7.0 * S_NP)
    assert st.last is Tier.COMPILED


def test_large_operands_run_over_stored_entries(mode: Callable[[str], None],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``EAGER_MAX_ELEMENTS`` a sparse operand runs eager over its stored entries
    (``engine.eager_sparse``), a small plan on the dense interpreter; a large sparse
    operand whose fill is not 0 waits for the compiler."""
    mode("eager")
    monkeypatch.setattr(tiers, "EAGER_MAX_ELEMENTS", 50)
    s, d, v = _operands("csr", 0.0)  # 108 entries each
    before, stored = tiers.STATS["eager"], tiers.STATS["eager_stored"]
    np.testing.assert_allclose(np.asarray(xp.compute(s * 2.0)), 2.0 * S_NP)
    assert (tiers.STATS["eager"], tiers.STATS["eager_stored"]) == (before + 1, stored + 1)
    small = xp.asarray(V_NP)  # 9 entries
    np.testing.assert_allclose(np.asarray(xp.compute(small * 2.0)), 2.0 * V_NP)
    assert (tiers.STATS["eager"], tiers.STATS["eager_stored"]) == (before + 2, stored + 1)
    refused = tiers.STATS["eager_refused"]
    got = xp.compute(_sparse("csr", float("nan")) * 2.0)
    assert tiers.STATS["eager_refused"] == refused + 1
    np.testing.assert_array_equal(np.asarray(got), np.where(S_NP != 0, S_NP, np.nan) * 2.0)


def test_large_intermediate_is_refused_then_compiled(mode: Callable[[str], None],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Operands under the bound whose dense intermediate is over it (an outer product):
    the interpreter stops before allocating it and the compiled tier runs."""
    mode("eager")
    monkeypatch.setattr(tiers, "EAGER_MAX_ELEMENTS", 200)
    a = xp.asarray(RNG.standard_normal(40))
    b = xp.asarray(RNG.standard_normal(30))
    refused = tiers.STATS["eager_refused"]
    got = xp.compute(xp.linalg.outer(a, b))  # 1200 entries
    assert tiers.STATS["eager_refused"] == refused + 1
    np.testing.assert_allclose(np.asarray(got), np.outer(np.asarray(a), np.asarray(b)))


def test_sync_never_runs_eager(mode: Callable[[str], None]) -> None:
    mode("sync")
    before = tiers.STATS["eager"]
    s, d, v = _operands("csr", 0.0)
    xp.compute(s @ v)
    assert tiers.STATS["eager"] == before
    assert background._WORKER is None


def test_explain_names_the_tier(mode: Callable[[str], None]) -> None:
    mode("eager")
    s, d, v = _operands("csr", 0.0)
    e = s * 11.0
    assert "tier: next call eager; not run yet" in str(xp.explain(e))
    xp.compute(e)
    assert "tier: next call eager; last ran eager (1 eager run(s))" in str(xp.explain(s * 11.0))


@pytest.mark.parametrize("fmt, dtype", rotation(["csr", "csc", "coo", "dense"],
                                               ["float64", "float32", "int64", "complex128"]))
def test_eager_products_contract_without_the_full_product(
        mode: Callable[[str], None], monkeypatch: pytest.MonkeyPatch, fmt: str,
        dtype: str) -> None:
    """``A @ B``, ``A.T @ A`` and ``A @ v`` run eager by ``einsum`` even where the product
    over every field would exceed the bound; same values, dtype and format as compiled."""
    a_np = (sp.random_array((30, 20), density=0.2, format="csr", rng=5).toarray() * 4
            ).astype(dtype)
    b_np = RNG.integers(-3, 4, (20, 25)).astype(dtype)
    exprs = [lambda a, b: a @ b, lambda a, b: a.T @ a, lambda a, b: a @ b[:, 0],
             lambda a, b: xp.vecdot(a[:25], b.T[:25]) if not isinstance(a, np.ndarray)
             else np.sum(a[:25] * b.T[:25], axis=-1)]
    monkeypatch.setattr(tiers, "EAGER_MAX_ELEMENTS", 1000)  # 30*20*25 = 15000 > bound
    for k, fn in enumerate(exprs):
        a = xp.asarray(a_np, format=fmt) if fmt != "dense" else xp.asarray(a_np)
        b = xp.asarray(b_np)
        mode("sync")
        want = xp.compute(fn(a, b))
        mode("eager")
        ran = tiers.STATS["eager"]
        got = xp.compute(fn(a, b))
        assert tiers.STATS["eager"] == ran + 1, f"expression {k} did not run eager"
        assert got.dtype == want.dtype and got.tensor().spec.name == want.tensor().spec.name
        tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == "float32" else {"rtol": 1e-10}
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), **tol)
        np.testing.assert_allclose(np.asarray(got), fn(a_np, b_np), **tol)


def test_eager_product_with_a_nan_partner_keeps_the_fill_rule(mode: Callable[[str], None]
                                                               ) -> None:
    """An implicit 0 annihilates a NaN partner (the fill rule): not plain arithmetic, so
    the contraction shortcut declines and the general evaluation gives the kernels' 0."""
    s = xp.asarray(np.array([[0.0, 1.0], [0.0, 0.0]]), format="csr")
    d = xp.asarray(np.array([[np.nan, 2.0], [3.0, 4.0]]))
    mode("sync")
    want = np.asarray(xp.compute(s @ d))
    mode("eager")
    got = np.asarray(xp.compute(s @ d))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, [[3.0, 4.0], [0.0, 0.0]])


def test_a_hot_shape_stops_waiting_for_its_background_compile(
        mode: Callable[[str], None], monkeypatch: pytest.MonkeyPatch) -> None:
    """Ski rental: once a shape's eager runs cost more than the budget while its job is
    pending, it compiles in process."""
    mode("background")
    monkeypatch.setattr(background, "JOB_TIMEOUT_S", 1e9)
    monkeypatch.setattr(background, "submit", lambda plan: background.Job(-1))  # never answers
    monkeypatch.setattr(tiers, "EAGER_BUDGET_S", 0.0)
    s, d, v = _operands("csr", 0.0)
    st = _state(s * 13.0)
    xp.compute(s * 13.0)
    assert st.last is Tier.EAGER and st.job is not None
    assert st.job.current() is JobState.PENDING
    np.testing.assert_allclose(np.asarray(xp.compute(s * 13.0)), 13.0 * S_NP)
    assert st.last is Tier.COMPILED


@pytest.mark.slow  # fresh processes: the full suite
def test_a_forked_process_starts_its_own_worker(mode: Callable[[str], None],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker belongs to the process that started it: after a fork (seen as a new pid)
    the next submission starts a fresh worker instead of writing into the parent's pipes."""
    mode("background")
    s, d, v = _operands("csr", 0.0)
    xp.compute(s * 17.0)
    first = background._WORKER
    assert first is not None
    monkeypatch.setattr(first, "owner", -1)  # as if this process were a forked child
    st = _state(xp.abs(s) - 19.0)  # a new shape: a new submission
    np.testing.assert_allclose(np.asarray(xp.compute(xp.abs(s) - 19.0)), np.abs(S_NP) - 19.0)
    assert background._WORKER is not first and st.job is not None
    assert background.wait(st.job, 240) is JobState.DONE
    first.stop()


def test_a_tier_record_lives_as_long_as_its_entry(mode: Callable[[str], None]) -> None:
    """``state_of`` gives one record per plan-cache entry, the same on every call; when
    the entry dies (the cache cleared) its record goes too, so a new entry at the same id
    never reads an old shape's tier."""
    import gc

    mode("sync")
    v = xp.asarray(V_NP)
    xp.compute(v * 3.0)
    st = _state(v * 3.0)
    assert _state(v * 3.0) is st and st.last is Tier.COMPILED
    entry, _, _ = lookup(build_plan((v * 3.0,)))
    key = id(entry)
    assert key in tiers._STATES  # noqa: SLF001
    del entry
    clear_plan_cache()
    gc.collect()
    assert key not in tiers._STATES  # noqa: SLF001
    np.testing.assert_allclose(np.asarray(xp.compute(v * 3.0)), V_NP * 3.0)
    assert _state(v * 3.0).last is Tier.COMPILED


@pytest.mark.slow  # fresh processes: the full suite
@pytest.mark.skipif(not hasattr(os, "getpriority"), reason="no process priorities")
def test_the_worker_runs_at_the_lowest_priority_from_its_start(
        mode: Callable[[str], None]) -> None:
    """The parent lowers the worker's priority as it starts it, before the child's imports
    (a second of CPU that would otherwise compete with the cells running eager), and the
    worker still answers: a shape repeated while it compiles runs eager, then compiled."""
    mode("background")
    s, d, v = _operands("csr", 0.0)
    st = _state(s * 23.0 - 1.0)
    xp.compute(s * 23.0 - 1.0)
    worker = background._WORKER
    assert worker is not None and st.job is not None
    assert os.getpriority(os.PRIO_PROCESS, worker.proc.pid) >= compile_worker.WORKER_NICENESS
    assert background.wait(st.job, 240) is JobState.DONE
    np.testing.assert_allclose(np.asarray(xp.compute(s * 23.0 - 1.0)), S_NP * 23.0 - 1.0)
    assert st.last is Tier.COMPILED


def test_a_tiny_shape_goes_to_the_worker_only_once_it_repeats(
        mode: Callable[[str], None], monkeypatch: pytest.MonkeyPatch) -> None:
    """A tiny plan (every operand at most ``TINY_ELEMENTS`` entries) runs eager and is not
    sent to the compile worker at first sight: only at its ``TINY_REPEATS``-th repeat (a
    JIT compiles what repeats); a small plan over the bound is sent at first sight."""
    mode("background")
    sent: list[Any] = []

    def record(plan: Any) -> background.Job:
        sent.append(plan)
        return background.Job(-1)  # never answers: the shape stays eager, pending

    monkeypatch.setattr(background, "submit", record)
    monkeypatch.setattr(background, "JOB_TIMEOUT_S", 1e9)
    monkeypatch.setattr(tiers, "TINY_ELEMENTS", 1 << 14)
    monkeypatch.setattr(tiers, "TINY_REPEATS", 3)
    monkeypatch.setattr(tiers, "TINY_BUDGET_S", 1e9)  # counted repeats only: deterministic
    s, d, v = _operands("csr", 0.0)  # 108 entries each
    st = _state(s * 29.0 + d)
    for k in range(3):
        got = xp.compute(s * 29.0 + d)
        np.testing.assert_allclose(np.asarray(got), S_NP * 29.0 + D_NP)
        assert st.last is Tier.EAGER and not st.submitted and sent == [], k
    np.testing.assert_allclose(np.asarray(xp.compute(s * 29.0 + d)), S_NP * 29.0 + D_NP)
    assert st.submitted and len(sent) == 1 and st.eager_runs == 4
    xp.compute(s * 29.0 + d)
    assert len(sent) == 1, "a shape is submitted once"
    monkeypatch.setattr(tiers, "TINY_ELEMENTS", 100)  # now 108 entries are small, not tiny
    st2 = _state(xp.abs(s) - d)  # another shape
    np.testing.assert_allclose(np.asarray(xp.compute(xp.abs(s) - d)), np.abs(S_NP) - D_NP)
    assert st2.submitted and len(sent) == 2


def test_a_tiny_shape_run_once_leaves_the_worker_unstarted(
        mode: Callable[[str], None], monkeypatch: pytest.MonkeyPatch) -> None:
    """One-off tiny shapes (a test suite's thousands of small tests) never start the compile
    worker, and run in the eager tier with NumPy's values."""
    mode("background")
    background.shutdown()
    monkeypatch.setattr(tiers, "TINY_ELEMENTS", 1 << 14)
    v = xp.asarray(V_NP)
    for k in range(5):
        got = xp.compute(xp.exp(v * float(k + 2)) - v)  # a new constant: the same shape
        np.testing.assert_allclose(np.asarray(got), np.exp(V_NP * (k + 2)) - V_NP)
    got = xp.compute(xp.sum(xp.abs(v) * 3.0))
    np.testing.assert_allclose(float(got), np.sum(np.abs(V_NP) * 3.0))
    assert background._WORKER is None  # noqa: SLF001
