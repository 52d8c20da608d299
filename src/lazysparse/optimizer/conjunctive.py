"""Conjunctive queries and their containment: the algebra of the asymptotic cost model.

Ahrens, Kjolstad and Amarasinghe, "An Asymptotic Cost Model for Autoscheduling Sparse
Tensor Programs", §5.1–5.2 and §5.4. A task set is a union of conjunctive queries (CQs)
``{[i ∈ I, j ∈ J] | ∃k A(i, k) ∧ B(k, j)}``: the head lists the loop indices a task is named
by, each with its dimension (here: the loop ``Field`` it stands for); the clauses are
predicates (sparse operands: "this entry is stored") over head and existential variables.

- ``P ⊆ Q`` (:func:`cq_contained`) iff there is a homomorphism ``h`` from Q's variables to
  P's mapping every clause of Q onto a clause of P with the same predicate (§5.1). Tasks are
  *lazy* (§5.2): a task stands for every subset and permutation of its indices, so the head
  condition is ``head(P) ⊆ h(head(Q))`` with head variables mapped to head variables of the
  same dimension; Q's other head variables are projected away (existential). Found by a
  backtracking search over Q's clauses, memoized per pair.
- A union ``P₁ ∪ … ⊆ Q₁ ∪ …`` iff each ``Pᵢ`` is contained in some ``Qⱼ``
  (:func:`union_contained`).
- Simplifications of §5.4: a CQ loses clauses that a homomorphism shows redundant
  (:func:`minimize`), and a union loses CQs contained in others (:func:`simplify_union`).

Everything is frozen and hashable, so results are memoized across calls (one plan shape
asks the same questions for every candidate loop order).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from lazysparse.logic.nodes import Field


@dataclass(frozen=True)
class Var:
    """A variable of dimension ``dim``: ``n == 0`` is the head variable of that dimension
    (a bound loop index), ``n > 0`` an existential copy."""

    dim: Field
    n: int = 0
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.dim.name, self.n)))

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        return self.dim.name if self.n == 0 else f"{self.dim.name}'{self.n}"


Clause = tuple[str, tuple[Var, ...]]


def _clause_str(c: Clause) -> str:
    return f"{c[0]}({', '.join(str(v) for v in c[1])})"


@dataclass(frozen=True)
class CQ:
    """``{[head] | ∃(other variables) clause ∧ …}``; head variables have ``n == 0`` and
    distinct dimensions. Build with :func:`make_cq` for a canonical form."""

    head: tuple[Var, ...]
    clauses: tuple[Clause, ...]
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.head, self.clauses)))

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        head = ", ".join(str(v) for v in self.head)
        body = " ∧ ".join(_clause_str(c) for c in self.clauses) or "true"
        return f"{{[{head}] | {body}}}"


def _order_key(v: Var) -> tuple[str, int]:
    return (v.dim.name, v.n)


def make_cq(head: tuple[Field, ...] | tuple[Var, ...], clauses: tuple[Clause, ...]) -> CQ:
    """The canonical CQ: head sorted by dimension name, duplicate clauses dropped, clauses
    sorted and existential variables renumbered in order of first appearance, so equal
    queries built along different loop orders compare (and memoize) equal. Its cost
    counts against the model's step budget."""
    spend(1 + len(clauses))
    hv = sorted({v if isinstance(v, Var) else Var(v) for v in head}, key=_order_key)
    heads = set(hv)

    def shape(c: Clause) -> tuple[str, tuple[tuple[str, bool], ...]]:
        return (c[0], tuple((v.dim.name, v in heads) for v in c[1]))

    ordered = sorted(set(clauses), key=lambda c: (shape(c), tuple(map(_order_key, c[1]))))
    rename: dict[Var, Var] = {}
    count: dict[Field, int] = {}
    out: list[Clause] = []
    for pred, args in ordered:
        new = []
        for v in args:
            if v not in heads and v not in rename:
                count[v.dim] = count.get(v.dim, 0) + 1
                rename[v] = Var(v.dim, count[v.dim])
            new.append(rename.get(v, v))
        out.append((pred, tuple(new)))
    return CQ(tuple(hv), tuple(dict.fromkeys(out)))


# containment is NP-complete and the task sets grow with the operands: one model evaluation
# may take this many steps (CQs built, clauses, backtracking tries; the largest ordinary
# query, an SpGEMM universe of 96 schedules, takes ~4,600), then the caller falls back
MODEL_STEP_BUDGET = 20_000


class ModelBudgetExceeded(Exception):
    """One cost-model evaluation took more than ``MODEL_STEP_BUDGET`` steps."""


_STEPS = threading.local()  # per thread: optimizations in Dask's threads run side by side


@contextmanager
def step_budget(steps: int | None = None) -> Iterator[None]:
    """Allow ``steps`` (default ``MODEL_STEP_BUDGET``) steps (:func:`spend`) inside the
    block; nested blocks share the outer budget."""
    outer = getattr(_STEPS, "left", None)
    if outer is None:
        _STEPS.left = MODEL_STEP_BUDGET if steps is None else steps
    try:
        yield
    finally:
        if outer is None:
            _STEPS.left = None


def spend(n: int = 1) -> None:
    """Count ``n`` steps against the current budget (none outside :func:`step_budget`);
    ``ModelBudgetExceeded`` when it is used up."""
    left = getattr(_STEPS, "left", None)
    if left is None:
        return
    left -= n
    _STEPS.left = left
    if left < 0:
        raise ModelBudgetExceeded("cost model over its step budget")


@functools.lru_cache(maxsize=1 << 16)
def cq_contained(p: CQ, q: CQ) -> bool:
    """``P ⊆ Q`` (lazy tasks): a homomorphism from Q's variables to P's covering P's head."""
    ph = {v.dim: v for v in p.head}
    qh = {v.dim: v for v in q.head}
    if not ph.keys() <= qh.keys():
        return False
    index: dict[tuple[str, int], list[tuple[Var, ...]]] = {}
    for pred, args in p.clauses:
        index.setdefault((pred, len(args)), []).append(args)
    todo = [(index.get((pred, len(args)), []), args) for pred, args in q.clauses]
    if any(not targets for targets, _ in todo):
        return False
    todo.sort(key=lambda t: (len(t[0]), -sum(v in qh.values() for v in t[1])))
    h = {qh[d]: v for d, v in ph.items()}
    return _extend(todo, 0, h)


def _extend(todo: list[tuple[list[tuple[Var, ...]], tuple[Var, ...]]], k: int,
            h: dict[Var, Var]) -> bool:
    """Backtracking: map Q's clause ``k`` onto some P clause consistently with ``h``."""
    if k == len(todo):
        return True
    targets, args = todo[k]
    for target in targets:
        spend()
        added: list[Var] = []
        ok = True
        for a, t in zip(args, target, strict=True):
            cur = h.get(a)
            if cur is None:
                h[a] = t
                added.append(a)
            elif cur != t:
                ok = False
                break
        if ok and _extend(todo, k + 1, h):
            for a in added:
                del h[a]
            return True
        for a in added:
            del h[a]
    return False


def union_contained(ps: tuple[CQ, ...], qs: tuple[CQ, ...]) -> bool:
    """``∪ps ⊆ ∪qs``: every CQ of ``ps`` is contained in some CQ of ``qs`` (§5.1)."""
    return all(any(cq_contained(p, q) for q in qs) for p in ps)


def strictly_contained(ps: tuple[CQ, ...], qs: tuple[CQ, ...]) -> bool:
    """``∪ps ⊊ ∪qs``: ``ps`` is asymptotically dominated by ``qs`` (§5.1)."""
    return union_contained(ps, qs) and not union_contained(qs, ps)


@functools.lru_cache(maxsize=1 << 14)
def minimize(cq: CQ) -> CQ:
    """``cq`` without clauses that a homomorphism shows redundant (§5.4, third
    simplification): drop one clause at a time while the smaller query is still contained
    in the original (it always contains it), until no clause can go."""
    clauses = list(cq.clauses)
    changed = True
    while changed:
        changed = False
        full = CQ(cq.head, tuple(clauses))
        for k in range(len(clauses)):
            smaller = CQ(cq.head, tuple(clauses[:k] + clauses[k + 1:]))
            if cq_contained(smaller, full):
                del clauses[k]
                changed = True
                break
    return make_cq(cq.head, tuple(clauses))


def simplify_union(cqs: tuple[CQ, ...] | list[CQ]) -> tuple[CQ, ...]:
    """The union with each CQ minimized and every CQ contained in another left out
    (§5.4, second simplification; of equivalent CQs the first is kept)."""
    items = list(dict.fromkeys(minimize(c) for c in cqs))
    keep: list[CQ] = []
    for k, c in enumerate(items):
        covered = any(cq_contained(c, d) and (j < k or not cq_contained(d, c))
                      for j, d in enumerate(items) if j != k)
        if not covered:
            keep.append(c)
    return tuple(keep)
