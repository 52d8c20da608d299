"""Size and work estimates from degree statistics (``formats.statistics``).

The uniform-independence model of ``analysis.py`` sizes ``sum_t A[i,t] B[j,t]`` as if every
column held ``nnz / extent`` entries; on skewed data (zipf terms, power-law graphs) the few
heavy columns carry most of the work, and the estimate is off by orders of magnitude.
Following the degree-constraint statistics of Deeds, Galley et al., an intersection of
sparse accesses that all share one field ``t`` (a *star*: ``A[i,t] * B[j,t]``, ``A[i,t] *
A[t,j]``, ``A[i,t] * v[t]``; the other fields distinct) is sized from each access's degree
vector along ``t``:

* ``t`` bound: the number of bound tuples is ``sum_t prod_k m_k(t)`` with ``m_k(t)`` the
  degree ``deg_k(t)`` when the access's other field is bound, else ``[deg_k(t) > 0]``:
  exact (the work of a one-index contraction is ``sum_t deg_A(t) * deg_B(t)``).
* ``t`` free: a bound tuple is nonempty unless every ``t`` misses, with ``t`` present for
  access ``k`` with probability ``deg_k(t) / n_k`` (its other field bound; ``n_k`` that
  field's extent) or ``[deg_k(t) > 0]``: ``1 - prod_t (1 - prod_k q_k(t))``; independence
  across ``t`` only, so a heavy column makes its rows' products dense.

A single access is sized exactly from its degree vectors (nonempty rows or columns).
Anything else returns None and the uniform model decides; so does data whose degrees
along the star's center look uniform (index of dispersion at most ``SKEW_DISPERSION``:
binomial degrees have about 1), where both models agree within noise and the plans of
uniform data stay as they were.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lazysparse.formats.statistics import SKEW_DISPERSION, TensorStats
from lazysparse.logic.nodes import Field


@dataclass(frozen=True)
class StatsView:
    """A stored tensor's statistics seen through an alias: alias axis ``k`` is the tensor's
    axis ``axes[k]`` (a transposed copy keeps its source's statistics)."""

    stats: TensorStats
    axes: tuple[int, ...]

    def degrees(self, k: int) -> np.ndarray | None:
        """Stored entries at each coordinate of the alias's axis ``k``."""
        return self.stats.degrees(self.axes[k])

    def skewed(self, k: int) -> bool:
        """Whether the degrees along alias axis ``k`` are far from uniform."""
        disp = self.stats.dispersion(self.axes[k])
        return disp is not None and disp > SKEW_DISPERSION

    @property
    def nnz(self) -> int:
        """The tensor's stored entries."""
        return self.stats.nnz

    def permuted(self, perm: Sequence[int]) -> StatsView:
        """The view of an alias whose axis ``k`` is this alias's axis ``perm[k]``."""
        return StatsView(self.stats, tuple(self.axes[m] for m in perm))


Access = tuple[tuple[Field, ...], StatsView]


def intersection_probability(accs: Sequence[Access], bound: set[Field] | frozenset[Field],
                             sizes: dict[Field, int]) -> float | None:
    """Probability that the intersection of ``accs`` (fields, statistics) restricted to the
    ``bound`` fields is nonempty at a bound tuple (over the accesses' bound fields), or None
    when the accesses are not a star with known degrees (module doc)."""
    if not accs or any(len(set(f)) != len(f) or not 1 <= len(f) <= 2 for f, _ in accs):
        return None
    if len(accs) == 1:
        return _single(accs[0], bound, sizes)
    common = set(accs[0][0]).intersection(*(set(f) for f, _ in accs[1:]))
    if len(common) != 1:
        return None
    (t,) = common
    leaves = [next((g for g in f if g != t), None) for f, _ in accs]
    named = [g for g in leaves if g is not None]
    if len(set(named)) != len(named):
        return None
    if not any(view.skewed(f.index(t)) for f, view in accs):
        return None
    degs = [view.degrees(f.index(t)) for f, view in accs]
    if any(d is None for d in degs) or len({d.size for d in degs}) != 1:  # type: ignore[union-attr]
        return None
    if t in bound:
        return _bound_center(degs, leaves, t, bound, sizes)  # type: ignore[arg-type]
    return _free_center(degs, leaves, bound, sizes)  # type: ignore[arg-type]


def _single(acc: Access, bound: set[Field] | frozenset[Field],
            sizes: dict[Field, int]) -> float | None:
    """One access: exact from its nnz and degree vectors."""
    fields, view = acc
    inside = [k for k, f in enumerate(fields) if f in bound]
    if len(inside) == len(fields):
        space = math.prod(sizes[f] for f in fields)
        return min(1.0, view.nnz / space) if space else 0.0
    if not inside:
        return 1.0 if view.nnz else 0.0
    (k,) = inside
    d = view.degrees(k) if view.skewed(k) else None
    if d is None or not d.size:
        return None
    return float(np.count_nonzero(d)) / sizes[fields[k]]


def _bound_center(degs: list[np.ndarray], leaves: list[Field | None], t: Field,
                  bound: set[Field] | frozenset[Field], sizes: dict[Field, int]) -> float:
    """``sum_t prod_k m_k(t)`` over the bound space of the star's fields."""
    prod = np.ones(degs[0].size, dtype=np.float64)
    space = float(sizes[t])
    for d, leaf in zip(degs, leaves, strict=True):
        if leaf is not None and leaf in bound:
            prod *= d
            space *= sizes[leaf]
        else:
            prod *= d > 0
    return min(1.0, float(prod.sum()) / space) if space else 0.0


def _free_center(degs: list[np.ndarray], leaves: list[Field | None],
                 bound: set[Field] | frozenset[Field], sizes: dict[Field, int]) -> float:
    """``1 - prod_t (1 - prod_k q_k(t))`` (module doc)."""
    q = np.ones(degs[0].size, dtype=np.float64)
    for d, leaf in zip(degs, leaves, strict=True):
        if leaf is not None and leaf in bound:
            q *= d / max(sizes[leaf], 1)
        else:
            q *= d > 0
    if not q.size:
        return 0.0
    if float(q.max()) >= 1.0:
        return 1.0
    return float(-np.expm1(np.log1p(-q).sum()))
