"""Tiered execution: no user waits on the compiler for a small plan.

A plan shape (a plan-cache entry) seen for the first time runs at once on the **eager
tier** — the reference interpreter over its *optimized* plan, so result formats, fill rule
and dtypes are the compiled path's — while a worker process compiles its kernels into the
disk cache (``engine.background``). A later call of that shape runs the **compiled** tier,
loading those kernels from disk. Where every operand has at most
:data:`EAGER_MAX_ELEMENTS` entries the eager tier is the dense interpreter (bounded by the
same count); a plan with a larger operand runs over the stored entries of its sparse
matrices instead (``engine.eager_sparse``: scipy.sparse and NumPy, dense values at most
:data:`EAGER_DENSE_MAX_ELEMENTS`), and goes to the worker only once its shape repeats; so
does a *tiny* plan (operands of at most :data:`TINY_ELEMENTS` entries), once it repeated
:data:`TINY_REPEATS` times, its eager runs costing about what a kernel load would. A
plan neither can run compiles in process.

``LAZYSPARSE_COMPILE`` picks the mode (:class:`CompileMode`, read on each call): ``background``
(the default), ``sync`` (always the compiled tier, compiling in process: what the tests
use), or ``eager`` (the eager tier wherever it can run, never a compile for it: to test that
both tiers agree, or to run small data without a compiler). The choice is recorded per
entry (:class:`TierState`) and shown by ``xp.explain``.
"""

from __future__ import annotations

import functools
import math
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from typing import Any

from lazysparse.engine import background
from lazysparse.engine.background import Job, JobState
from lazysparse.engine.plan_cache import CachedPlan, persist, persist_eager
from lazysparse.formats.compiled.sync import Counters
from lazysparse.formats.env_settings import EnvSetting
from lazysparse.formats.tensor import Tensor
from lazysparse.logic.interpreter import interpret
from lazysparse.logic.nodes import Plan

#: the most entries every operand may have for the dense interpreter to run a plan eager
#: (also its bound on dense intermediates)
EAGER_MAX_ELEMENTS = 1 << 20

#: the most entries a dense value (an operand, a reduced or a dense result) may have in an
#: eager run over stored sparse matrices (``engine.eager_sparse``)
EAGER_DENSE_MAX_ELEMENTS = 1 << 24

#: eager seconds one shape may spend while its background compile is pending before it
#: compiles in process (ski rental: a hot loop never pays more than about twice a compile)
EAGER_BUDGET_S = 1.0

#: the most entries every operand of a *tiny* plan may have: its eager run costs about what
#: loading its compiled kernels would (a few ms), so compiling it pays only if it repeats; it
#: goes to the compile worker once it ran eager :data:`TINY_REPEATS` times or for
#: :data:`TINY_BUDGET_S` seconds in all (a JIT compiles what repeats), not at first sight —
#: a test suite's thousands of one-off small shapes never occupy the worker
TINY_ELEMENTS = 1 << 14
TINY_REPEATS = 16
TINY_BUDGET_S = 0.1

STATS = Counters("eager", "eager_stored", "compiled", "eager_refused")


class CompileMode(Enum):
    """``LAZYSPARSE_COMPILE``: when kernels compile."""

    BACKGROUND = "background"
    SYNC = "sync"
    EAGER = "eager"


class Tier(Enum):
    """What ran a plan."""

    EAGER = "eager"
    COMPILED = "compiled"


DEFAULT_MODE = CompileMode.BACKGROUND


# each mode by its exact spelling (a set variable is read on every call: one dict lookup,
# not an Enum construction)
_BY_NAME: dict[str, CompileMode] = {m.value: m for m in CompileMode}


def _parse_mode(raw: str | None) -> CompileMode:
    """The mode ``raw`` (``LAZYSPARSE_COMPILE``'s text) names; ValueError for another."""
    if raw is None:
        return DEFAULT_MODE
    found = _BY_NAME.get(raw)
    if found is not None:
        return found
    try:
        return CompileMode(raw.strip().lower() or DEFAULT_MODE.value)
    except ValueError:
        raise ValueError(f"LAZYSPARSE_COMPILE={raw!r} is not a compile mode; choose one of "
                         f"{[m.value for m in CompileMode]}") from None


# parsed once per value (``formats.env_settings``): every compute asks
_MODE = EnvSetting("LAZYSPARSE_COMPILE", _parse_mode)


def compile_mode() -> CompileMode:
    """The mode ``LAZYSPARSE_COMPILE`` names (default ``background``)."""
    return _MODE.get()


@contextmanager
def compile_mode_set(mode: CompileMode) -> Iterator[None]:
    """``LAZYSPARSE_COMPILE`` set to ``mode`` for the block, restored after (process-wide:
    ``python -m lazysparse warm`` compiles in process; tests compare tiers)."""
    old = os.environ.get("LAZYSPARSE_COMPILE")
    os.environ["LAZYSPARSE_COMPILE"] = mode.value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("LAZYSPARSE_COMPILE", None)
        else:
            os.environ["LAZYSPARSE_COMPILE"] = old


@dataclass
class TierState:
    """One plan shape's tier history: its background job and what ran it last."""

    job: Job | None = None
    submitted: bool = False  # a job was tried (it may have failed to start)
    eager_refused: bool = False  # the eager tier could not run this shape
    last: Tier | None = None
    eager_runs: int = 0
    eager_seconds: float = 0.0

    def describe(self) -> str:
        """What ran this shape last and where its background compile stands."""
        if self.last is None:
            return "not run yet"
        line = f"last ran {self.last.value} ({self.eager_runs} eager run(s))"
        if self.job is not None:
            state = self.job.current()
            line += f"; background compile {state.value}"
            if self.job.message:
                line += f" ({self.job.message})"
        return line


# the tier record of each plan-cache entry, by the entry's id with a weak reference to it
# (dropped when the entry dies, so an id is never another entry's while here): a plain
# dict read with one atomic ``get`` on the hot path, where a ``WeakKeyDictionary`` runs
# Python code per lookup (issue 34)
_STATES: dict[int, tuple[weakref.ref[CachedPlan], TierState]] = {}
_LOCK = threading.Lock()


def state_of(entry: CachedPlan) -> TierState:
    """The tier record of a plan-cache entry (made on first use)."""
    found = _STATES.get(id(entry))
    if found is not None and found[0]() is entry:
        return found[1]
    with _LOCK:
        found = _STATES.get(id(entry))
        if found is not None and found[0]() is entry:
            return found[1]
        st = TierState()
        _STATES[id(entry)] = (weakref.ref(entry, functools.partial(_drop_state, id(entry))), st)
        return st


def _drop_state(key: int, ref: weakref.ref[CachedPlan]) -> None:
    """An entry died: forget its record (unless its id holds a newer entry's already)."""
    found = _STATES.get(key)
    if found is not None and found[0] is ref:
        _STATES.pop(key, None)


def compiled_again(entry: CachedPlan) -> bool:
    """Whether this call of ``entry``'s shape takes the compiled tier at once, as
    :func:`choose_tier` would decide (its program is made, so it ran compiled; any mode but
    ``eager``), recorded as :func:`run_tiered` records it; False when that needs
    :func:`run_tiered` itself (no record yet, the eager mode, not yet on disk)."""
    found = _STATES.get(id(entry))
    if (found is None or found[0]() is not entry or entry.program is None
            or entry.store_key is not None or _MODE.get() is CompileMode.EAGER):
        return False
    found[1].last = Tier.COMPILED
    STATS.bump("compiled")
    return True


def small(inputs: list[Any]) -> bool:
    """Whether every operand has at most :data:`EAGER_MAX_ELEMENTS` entries (the dense
    interpreter runs the plan; else the stored-entry evaluator)."""
    return all(math.prod(t.shape) <= EAGER_MAX_ELEMENTS for t in inputs)


def tiny(inputs: list[Any]) -> bool:
    """Whether every operand has at most :data:`TINY_ELEMENTS` entries (see there), and is
    small (:func:`small`)."""
    limit = min(TINY_ELEMENTS, EAGER_MAX_ELEMENTS)
    return all(math.prod(t.shape) <= limit for t in inputs)


def on_host(inputs: list[Any]) -> bool:
    """Whether every operand is a host tensor (the eager tier runs nothing else)."""
    return all(isinstance(t, Tensor) for t in inputs)


def choose_tier(entry: CachedPlan, st: TierState, inputs: list[Any],
                mode: CompileMode) -> Tier:
    """The tier of this call: compiled in ``sync`` mode, for operands off the host, once the
    shape ran compiled (in this process, or in an earlier one: a plan read from disk), its
    background compile ended, or its eager runs cost more than :data:`EAGER_BUDGET_S` while
    it compiles; else eager."""
    if mode is CompileMode.SYNC or st.eager_refused:
        return Tier.COMPILED
    if mode is CompileMode.EAGER:
        return Tier.EAGER if on_host(inputs) else Tier.COMPILED
    if (st.last is Tier.COMPILED or entry.program is not None or entry.from_disk
            or not on_host(inputs)):
        return Tier.COMPILED  # the hot path: a shape that runs compiled stays so
    if st.job is not None:
        pending = st.job.current() is JobState.PENDING
        return Tier.EAGER if pending and st.eager_seconds <= EAGER_BUDGET_S else Tier.COMPILED
    # never submitted (first sight, or a large shape's second): eager; submitted but refused
    # (no worker, unpicklable): the shape repeats, so it compiles in process
    return Tier.COMPILED if st.submitted else Tier.EAGER


def tier_line(entry: CachedPlan, inputs: list[Any]) -> str:
    """``xp.explain``'s line: the tier the next call of this shape takes, and its record."""
    st = state_of(entry)
    nxt = choose_tier(entry, st, inputs, compile_mode())
    return f"tier: next call {nxt.value}; {st.describe()}"


def run_eager(plan: Plan, inputs: list[Any]) -> tuple[Tensor, ...] | None:
    """The plan's results from the dense interpreter (small operands) or over the stored
    entries (large ones), bounded; None where it cannot run it (too large, or a construct
    it does not evaluate): the compiled tier then runs it."""
    try:
        if small(inputs):
            return interpret(plan, max_elements=EAGER_MAX_ELEMENTS)
        from lazysparse.engine.eager_sparse import interpret_stored  # SciPy loads here

        out = interpret_stored(plan, max_elements=EAGER_DENSE_MAX_ELEMENTS)
    except Exception:  # the compiled tier runs it and raises any genuine error itself
        return None
    STATS.bump("eager_stored")
    return out


def submits(entry: CachedPlan, st: TierState, inputs: list[Any], mode: CompileMode) -> bool:
    """Whether this eager call sends the plan to the compile worker: in ``background`` mode,
    once per shape; at first sight for small operands, once the shape repeats for large
    ones (the worker runs the plan on its data: a large plan run once is not worth a
    compile, as a JIT compiles what repeats), and once it repeated :data:`TINY_REPEATS`
    times or ran eager :data:`TINY_BUDGET_S` for tiny ones."""
    if mode is not CompileMode.BACKGROUND or not entry.cached or st.submitted:
        return False
    if tiny(inputs):
        return st.eager_runs >= TINY_REPEATS or st.eager_seconds >= TINY_BUDGET_S
    return st.eager_runs > 0 or small(inputs)


def run_tiered(entry: CachedPlan, inputs: list[Any], params: tuple[Any, ...],
               run_compiled: Callable[[CachedPlan, list[Any], tuple[Any, ...]],
                                      tuple[Tensor, ...]]) -> tuple[Tensor, ...]:
    """Run one call of a cached plan on its tier (see the module docstring)."""
    mode = compile_mode()
    st = state_of(entry)
    if choose_tier(entry, st, inputs, mode) is Tier.EAGER:
        plan = entry.plan(inputs, params)
        if submits(entry, st, inputs, mode):
            st.submitted = True  # sent before the eager run, so both proceed at once
            st.job = background.submit(plan)
        start = time.perf_counter()
        out = run_eager(plan, inputs)
        if out is not None:
            st.last = Tier.EAGER
            st.eager_runs += 1
            st.eager_seconds += time.perf_counter() - start
            STATS.bump("eager")
            if entry.store_key is not None and not entry.eager_saved:
                # a new process reads this plan instead of optimizing it again
                persist_eager(entry)
            return out
        st.eager_refused = True
        STATS.bump("eager_refused")
    st.last = Tier.COMPILED
    STATS.bump("compiled")
    out = run_compiled(entry, inputs, params)
    if entry.store_key is not None:  # not yet on disk (one attribute read on the hot path)
        persist(entry)
    return out
