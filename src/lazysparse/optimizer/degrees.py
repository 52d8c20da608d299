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

* ``t`` free with a skewed bound leaf (co-occurrence ``X[t,i] X[t,j]``: documents uniform,
  terms zipf): the rank-one (Chung–Lu) model of each access, ``P(X[t,i]) = deg(t)
  deg(i) / nnz``, so ``q(t, leaves) = prod_k deg_k(t) e_k(leaf_k) / nnz_k``, averaged over
  the leaves' degrees grouped on a log scale (``LEAF_BINS_PER_OCTAVE``) and the center's
  degree tuples (exact below ``CENTER_EXACT``). With uniform leaves ``e_k = nnz_k / n_k``
  it is the rule above; independence of the leaves would count every heavy pair many
  times (2.5x too many co-occurrence entries on the zipf corpus).
* A triangle ``A[i,j] B[i,k] C[k,j]`` with every field bound (a triangle count's work): the
  two-path of two accesses on their shared field, exact as above, times the chance that
  the third (closing) access holds the path's ends: under the rank-one model the path's
  ends are degree-biased, ``P = E_a E_b / nnz_c`` with ``E_a`` the closing access's
  degrees along ``a`` averaged with the path's weights; the least over the three choices
  of closing access (each overestimates when the ends' degrees correlate).

A single access is sized exactly from its degree vectors (nonempty rows or columns).
Anything else returns None and the uniform model decides; so does data whose degrees
look uniform (index of dispersion at most ``SKEW_DISPERSION``: binomial degrees have
about 1) along the star's center and its bound leaves, where both models agree within
noise and the plans of uniform data stay as they were.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lazysparse.formats.statistics import SKEW_DISPERSION, TensorStats
from lazysparse.logic.nodes import Field

# leaf degrees grouped this many groups per doubling for the rank-one model (an estimate
# within a few percent of the per-coordinate sum; grouping keeps it O(groups^2 x centers))
LEAF_BINS_PER_OCTAVE = 2
# center degrees kept exact below this; heavier ones grouped four per doubling
CENTER_EXACT = 64
# the most (center groups x leaf groups) cells the rank-one model evaluates; past it the
# independent-leaf rule decides
RANK_ONE_CELLS = 1 << 21


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


def dot_degrees(a: np.ndarray, b: np.ndarray) -> float:
    """``sum(a * b)`` of two degree vectors in float64, without BLAS: ``np.dot`` of 10k+
    entries runs on OpenBLAS's thread pool, which stalled 20-30 ms a call next to the
    kernels' threads (issue 36's ``C[:300] @ C.T``, priced every call)."""
    return float(np.multiply(a, b, dtype=np.float64).sum())


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
    if not common and len(accs) == 3:
        return _triangle(accs, bound, sizes)
    if len(common) != 1:
        return None
    (t,) = common
    leaves = [next((g for g in f if g != t), None) for f, _ in accs]
    named = [g for g in leaves if g is not None]
    if len(set(named)) != len(named):
        return None
    skewed_leaves = [g is not None and g in bound and view.skewed(f.index(g))
                     for (f, view), g in zip(accs, leaves, strict=True)]
    if not any(view.skewed(f.index(t)) for f, view in accs) and not any(skewed_leaves):
        return None
    degs = [view.degrees(f.index(t)) for f, view in accs]
    if any(d is None for d in degs) or len({d.size for d in degs}) != 1:  # type: ignore[union-attr]
        return None
    if t in bound:
        return _bound_center(degs, leaves, t, bound, sizes)  # type: ignore[arg-type]
    if any(skewed_leaves):
        p = _rank_one_once(accs, degs, leaves, bound, sizes)  # type: ignore[arg-type]
        if p is not None:
            return p
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


def _log_groups(values: np.ndarray, per_octave: int = LEAF_BINS_PER_OCTAVE) -> np.ndarray:
    """A group number per value: 0 for 0, else ``1 + floor(per_octave * log2(value))``."""
    v = np.asarray(values, dtype=np.float64)
    return np.where(v > 0, np.floor(per_octave * np.log2(np.maximum(v, 1.0))) + 1,
                    0).astype(np.int64)


# leaf degree groups per tensor statistics and axis, computed once (weakly keyed: dropped
# with the statistics)
_LEAF_GROUPS: weakref.WeakKeyDictionary[TensorStats, dict[int, tuple[np.ndarray, np.ndarray]]]
_LEAF_GROUPS = weakref.WeakKeyDictionary()


def _leaf_groups(view: StatsView, k: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The degrees along alias axis ``k`` grouped on the log scale: (mean degree,
    coordinates) per group; None when unknown."""
    axis = view.axes[k]
    per = _LEAF_GROUPS.setdefault(view.stats, {})
    if axis not in per:
        d = view.stats.degrees(axis)
        if d is None:
            return None
        _, inv, cnt = np.unique(_log_groups(d), return_inverse=True, return_counts=True)
        per[axis] = (np.bincount(inv, weights=d) / cnt, cnt.astype(np.float64))
    return per[axis]


def _center_key(d: np.ndarray) -> np.ndarray:
    """A group number per center degree: exact below ``CENTER_EXACT``, past it four per
    doubling (heavy coordinates are few; their mean per group stands for them)."""
    d = np.asarray(d, dtype=np.int64)
    heavy = d >= CENTER_EXACT
    if not heavy.any():
        return d
    octaves = np.floor(4 * np.log2(np.maximum(d, CENTER_EXACT) / CENTER_EXACT)).astype(np.int64)
    return np.where(heavy, CENTER_EXACT + octaves, d)


def _center_groups(degs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The center's degree tuples grouped (``_center_key`` per access, jointly): the mean
    degree of each access per group (one row per group) and how many coordinates hold it."""
    joint = np.zeros(degs[0].size, dtype=np.int64)
    for d in degs:
        key = _center_key(d)
        joint = joint * (int(key.max(initial=0)) + 1) + key
    top = int(joint.max(initial=0)) + 1
    if top <= max(4 * joint.size, 1 << 16):  # a count per possible group: O(n)
        cnt = np.bincount(joint, minlength=top)
        present = np.flatnonzero(cnt)
        means = np.stack([np.bincount(joint, weights=d, minlength=top)[present]
                          for d in degs], axis=1) / cnt[present, None]
        return means, cnt[present].astype(np.float64)
    _, inv, counts = np.unique(joint, return_inverse=True, return_counts=True)
    inv = inv.ravel()
    means = np.stack([np.bincount(inv, weights=d) for d in degs], axis=1) / counts[:, None]
    return means, counts.astype(np.float64)


# rank-one estimates by the statistics, axes and extents they read, kept with the first
# access's statistics (weakly keyed; the others' by weak reference, checked on a hit): one
# optimization asks the same star for every loop-order candidate
_RankOneMemo = dict[tuple[Any, ...], tuple[tuple["weakref.ref[TensorStats]", ...], float | None]]
_RANK_ONE: weakref.WeakKeyDictionary[TensorStats, _RankOneMemo] = weakref.WeakKeyDictionary()


def _rank_one_once(accs: Sequence[Access], degs: list[np.ndarray], leaves: list[Field | None],
                   bound: set[Field] | frozenset[Field], sizes: dict[Field, int]) -> float | None:
    """``_rank_one``, computed once per star of the same statistics and extents."""
    key = tuple((id(view.stats), view.axes, -1 if leaf is None or leaf not in bound
                 else fields.index(leaf), sizes[leaf] if leaf is not None and leaf in bound
                 else 0) for (fields, view), leaf in zip(accs, leaves, strict=True))
    memo = _RANK_ONE.setdefault(accs[0][1].stats, {})
    hit = memo.get(key)
    if hit is not None and all(r() is view.stats for r, (_, view) in zip(hit[0], accs,
                                                                          strict=True)):
        return hit[1]
    p = _rank_one(accs, degs, leaves, bound, sizes)
    memo[key] = (tuple(weakref.ref(view.stats) for _, view in accs), p)
    return p


def _rank_one(accs: Sequence[Access], degs: list[np.ndarray], leaves: list[Field | None],
              bound: set[Field] | frozenset[Field], sizes: dict[Field, int]) -> float | None:
    """The rank-one model of a star with its center free (module doc), averaged over the
    bound leaves' degree groups; None past ``RANK_ONE_CELLS``."""
    centers, weight = _center_groups(degs)
    q = np.ones((centers.shape[0],), dtype=np.float64)
    shape = [centers.shape[0]]
    leaf_weights: list[np.ndarray] = []
    for k, ((fields, view), leaf) in enumerate(zip(accs, leaves, strict=True)):
        dk = centers[:, k]
        if leaf is None or leaf not in bound:
            q = q * (dk > 0).reshape(q.shape[:1] + (1,) * (q.ndim - 1))
            continue
        if not view.nnz:
            return 0.0
        groups = _leaf_groups(view, fields.index(leaf)) if view.skewed(fields.index(leaf)) \
            else None
        if groups is not None:
            e, w = groups
        else:
            e, w = np.array([view.nnz / max(sizes[leaf], 1)]), np.array([float(sizes[leaf])])
        shape.append(e.size)
        if math.prod(shape) > RANK_ONE_CELLS:
            return None
        q = q[..., None] * (dk[(slice(None),) + (None,) * (q.ndim - 1) + (None,)] * e / view.nnz)
        leaf_weights.append(w)
    with np.errstate(divide="ignore"):  # a certain hit: log(0) = -inf, a miss of 0
        miss = np.einsum("c...,c->...", np.log1p(-np.minimum(q, 1.0)), weight)
    hit = -np.expm1(miss)
    total = 1.0
    for w in leaf_weights:
        hit = np.tensordot(w, hit, axes=(0, 0))
        total *= float(w.sum())
    return float(hit) / total if total else 0.0


def _triangle(accs: Sequence[Access], bound: set[Field] | frozenset[Field],
              sizes: dict[Field, int]) -> float | None:
    """A triangle of accesses with every field bound: a two-path times its closing
    access's chance at the path's ends, the least over the closing access (module doc)."""
    fields = set().union(*(set(f) for f, _ in accs))
    if len(fields) != 3 or any(len(f) != 2 for f, _ in accs) or not fields <= set(bound):
        return None
    if not any(view.skewed(k) for f, view in accs for k in range(2)):
        return None
    best = None
    for c, (fc, vc) in enumerate(accs):
        est = _closed_path([a for k, a in enumerate(accs) if k != c], fc, vc)
        if est is not None:
            best = est if best is None else min(best, est)
    if best is None:
        return None
    space = math.prod(sizes[f] for f in fields)
    return min(1.0, best / space) if space else 0.0


def _closed_path(path: list[Access], fc: tuple[Field, ...], vc: StatsView) -> float | None:
    """Tuples of a two-path ``path`` (exact) whose ends ``fc`` the closing access ``vc``
    holds, its chance ``E_a E_b / nnz_c`` from the rank-one model (module doc)."""
    ((f1, v1), (f2, v2)) = path
    (t,) = set(f1) & set(f2)
    d1, d2 = v1.degrees(f1.index(t)), v2.degrees(f2.index(t))
    if d1 is None or d2 is None or d1.size != d2.size or not vc.nnz:
        return None
    chance = 1.0 / vc.nnz
    for f, v in ((f1, v1), (f2, v2)):
        (end,) = set(f) - {t}
        w, e = v.degrees(f.index(end)), vc.degrees(fc.index(end))
        if w is None or e is None or w.size != e.size or not v.nnz:
            return None
        chance *= dot_degrees(w, e) / v.nnz
    return dot_degrees(d1, d2) * min(1.0, chance)
