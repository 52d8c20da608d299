"""Which values the user still holds a compute also keeps (docs/api.md, "Values computed
once").

An uncomputed array is an expression: every plan that reads it runs it again, and a
natural loop (``r = r - alpha * Ap``; ``float(xp.vecdot(r, r))``, never an
``xp.compute``) would re-run its whole history at each observation. So when a compute
runs, it also computes — in the same plan, once — the *held* values it meets: live
``LazyArray`` objects, uncomputed, on the same device, whose result is no larger than the
largest stored input of the plan (a sparse result, which stores at most its size: 16
times that; never a dense ``n x n`` product a sparse mask samples: keeping that would
cost more than recomputing it), that are

- **reductions** (``Ap = A @ p``: a kernel of their own, costly to run twice);
- **read twice** in the plan (``vecdot(r, r)``, ``log(p)`` and ``log(1 - p)``);
- **deep**: more than one array level of uncomputed history (PageRank's
  ``x = 0.85 * (P.T @ x) + c``), which a later plan would otherwise run again;
- **sharing history** with the plan while outside it: another held array whose
  uncomputed history reads a value this plan computes and runs a reduction of its own
  (gradient descent's new ``w``, built before the loop observes its loss: left lazy, the
  next iterations would run its ``X.T @ (p - y)`` again, and every earlier one with it),
  found within a walk budget; a held array built before all of the plan's uncomputed part
  cannot read it and is ruled out without a walk or a look (the scan of held arrays
  stops at the first one built before it: a loop holding one lazy result per iteration
  pays neither per compute).

A held elementwise expression of stored data read once (``Y = X * 2``) stays fused: running
it again costs one pass over its inputs, as reading it would. Temporaries of an expression
are gone before anything runs and never count. ``xp.explain`` lists the kept values. A
compute keeps only held arrays built on its own thread.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from lazysparse.api.array.memo import memoized
from lazysparse.api.array.plan_nodes import SERIALS, alias_serial
from lazysparse.formats.compiled.sync import Counters
from lazysparse.logic.nodes import Aggregate, LogicNode, Reformat, Relabel, Reorder, Subquery, Table

if TYPE_CHECKING:
    from lazysparse.api.array.lazy_array import LazyArray

# The search for held arrays sharing a plan's history looks at most at this many of the
# newest held uncomputed arrays, visiting at most this many nodes of their histories, per
# compute: beyond it the rest stay lazy (still correct), and a program holding thousands
# of lazy arrays pays a bounded cost per compute.
SHARED_SCAN_ARRAYS = 64
SHARED_WALK_BUDGET = 4096
# A sparse held value stores at most its size; it is kept up to this many times the
# largest stored input (the rows of a cosine similarity ``X[:k] @ X.T``), a dense one
# only up to the largest stored input (never a dense ``U @ V.T`` a sparse mask samples).
SPARSE_KEEP_RATIO = 16


class KeepReason(Enum):
    """Why a compute keeps a held value (printed by ``xp.explain``)."""

    REDUCTION = "a reduction the user holds"
    READ_TWICE = "read more than once by the plan"
    DEEP = "more than one array level of uncomputed history"
    SHARED = "held, and its history reads a value this plan computes"


@dataclass(frozen=True)
class Kept:
    """A held array a compute computes too, and why."""

    array: LazyArray
    reason: KeepReason

    def describe(self) -> str:
        """One line for ``xp.explain``."""
        a = self.array
        return f"{a._expr.lhs.name}: shape {a.shape} {a.dtype}, {self.reason.value}"


# Live uncomputed arrays with a history, oldest first, with the thread that built each:
# ``LazyArray`` registers one when it is built and forgets it when it is computed; a
# collected one is dropped at the next registration or scan. Threads build and compute
# arrays side by side (docs/architecture.md, "Threads"): every change of ``_PENDING`` and
# every scan of it holds ``_LOCK``, and a weak reference's callback, which the garbage
# collector may run at any moment (inside a locked scan too), only appends to ``_DEAD``
# (an atomic ``list.append``). A compute keeps only arrays its own thread built: another
# thread's array may be under a write at that moment, and a result stored into it would
# undo the write.
#
# Each entry also holds a serial bound drawn under ``_LOCK`` when it registers
# (``plan_nodes.SERIALS``): larger than the alias serial of every node its history holds
# (they were all made before) and nondecreasing in registration order, so a scan from the
# newest entry stops at the first whose bound is not newer than every uncomputed subquery
# of the plan (no entry before it can read one): a compute looks only at the arrays built
# since its plan's uncomputed history began, however many older ones are held.
_PENDING: dict[int, tuple[weakref.ref[LazyArray], int, int]] = {}
_DEAD: list[int] = []
_LOCK = threading.Lock()
_ORDER = itertools.count()  # next() on a count is atomic
STATS = Counters("scanned")  # held arrays the search for shared histories looked at


def register_pending(array: LazyArray) -> int:
    """Record a new uncomputed array with a history (a candidate to keep); its key."""
    key = next(_ORDER)
    ref = weakref.ref(array, lambda _ref: _DEAD.append(key))
    with _LOCK:
        if _DEAD:
            _drop_dead()
        _PENDING[key] = (ref, threading.get_ident(), next(SERIALS))
    return key


def _drop_dead() -> None:
    """Remove the entries of collected arrays (the caller holds ``_LOCK``)."""
    while _DEAD:
        _PENDING.pop(_DEAD.pop(), None)


def forget(key: int | None) -> None:
    """The array registered under ``key`` is computed (or replaced): no candidate now."""
    if key is not None:
        with _LOCK:
            _PENDING.pop(key, None)


def pending_count() -> int:
    """How many live arrays are registered (collected ones dropped first)."""
    with _LOCK:
        _drop_dead()
        return len(_PENDING)


def _pending(key: int) -> LazyArray | None:
    """The live uncomputed array registered under ``key`` by this thread (pruned once
    computed)."""
    entry = _PENDING.get(key)
    if entry is not None:
        arr = entry[0]()
        if arr is not None and arr._result is None:
            return arr if entry[1] == threading.get_ident() else None
    forget(key)
    return None


def _built_here(arr: LazyArray) -> bool:
    """Whether ``arr`` is registered, and by this thread."""
    entry = _PENDING.get(arr._pending) if arr._pending is not None else None
    return entry is not None and entry[1] == threading.get_ident()


def _newest_keys(count: int | None) -> list[int]:
    """The keys of the ``count`` newest registered arrays, newest first (all: None), as a
    snapshot other threads cannot change under its reader."""
    with _LOCK:
        _drop_dead()
        return list(itertools.islice(reversed(_PENDING), count))


def _keys_since(oldest: int | None, count: int) -> list[int]:
    """The keys of the (at most ``count``) newest registered arrays that may read a
    subquery of serial ``oldest`` or newer, newest first: the scan stops at the first entry
    whose serial bound is not newer (every entry before it is older too; None: no bound)."""
    out: list[int] = []
    with _LOCK:
        _drop_dead()
        for key in reversed(_PENDING):
            if len(out) == count or oldest is not None and _PENDING[key][2] <= oldest:
                break
            out.append(key)
    return out


@dataclass
class _History:
    """The uncomputed part of some arrays' histories: its subqueries by id, how often each
    is read, and the largest stored input (in entries)."""

    nodes: dict[int, Subquery]
    reads: dict[int, int]
    largest: int


def _uncomputed_history(roots: list[LogicNode]) -> _History:
    """Walk ``roots`` down to stored leaves and computed subqueries, counting reads."""
    hist = _History({}, {}, 0)
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if isinstance(n, Subquery):
            k = id(n)
            hist.reads[k] = hist.reads.get(k, 0) + 1
            if hist.reads[k] > 1:
                continue
            stored = n.arg.tns.val if isinstance(n.arg, Table) else memoized(n.lhs)
            if stored is not None:  # the plan reads this tensor, not its old history
                hist.largest = max(hist.largest, _entries(stored))
                continue
            hist.nodes[k] = n
            stack.append(n.arg)
        elif id(n) not in seen:
            seen.add(id(n))
            if isinstance(n, Table):
                hist.largest = max(hist.largest, _entries(n.tns.val))
            else:
                stack.extend(n.children)
    return hist


def _entries(tensor: object) -> int:
    """The entries a stored input holds (its size when dense)."""
    return int(getattr(tensor, "nnz", 0))


def _is_reduction(node: LogicNode) -> bool:
    while isinstance(node, Reorder | Relabel | Reformat):
        node = node.arg
    return isinstance(node, Aggregate)


def held_values(arrays: tuple[LazyArray, ...],
                live: Mapping[str, weakref.ref[LazyArray]]) -> tuple[Kept, ...]:
    """The held arrays a compute of ``arrays`` keeps too (module docstring), with reasons;
    ``live`` maps an alias name to a weak reference to the live array whose expression it
    names (``api.array.live.BY_ALIAS``)."""
    if only_these(arrays):  # the common case: nothing else held is uncomputed
        return ()
    todo = {id(a) for a in arrays}
    device = arrays[0].device
    if not _others_pending(todo):
        return ()
    hist = _uncomputed_history([a._expr.arg for a in arrays if a._depth > 0])
    if not hist.nodes:
        return ()

    def affordable(arr: LazyArray | None, node: Subquery) -> bool:
        return (arr is not None and arr._expr is node and arr._result is None
                and id(arr) not in todo and arr.device == device and _built_here(arr)
                and arr.size <= hist.largest * (1 if arr.full else SPARSE_KEEP_RATIO))

    kept: dict[int, Kept] = {}
    for k, node in hist.nodes.items():
        ref = live.get(node.lhs.name)
        arr = ref() if ref is not None else None
        if not affordable(arr, node):
            continue
        assert arr is not None
        if _is_reduction(node.arg):
            kept[id(arr)] = Kept(arr, KeepReason.REDUCTION)
        elif hist.reads[k] > 1:
            kept[id(arr)] = Kept(arr, KeepReason.READ_TWICE)
        elif arr._depth > 1:
            kept[id(arr)] = Kept(arr, KeepReason.DEEP)
    same = {id(a._expr) for a in arrays}  # copies of a computed array: the same value
    for arr in _sharing_history(hist, todo | set(kept), same):
        if affordable(arr, arr._expr):
            kept[id(arr)] = Kept(arr, KeepReason.SHARED)
    return tuple(kept.values())


def only_these(arrays: tuple[LazyArray, ...]) -> bool:
    """Whether every registered array is one of ``arrays``: then no other held array
    exists, found without a scan (registered arrays are distinct, so counting ``arrays``'
    own entries suffices). The temporaries of the expression just built (``0.5 * p`` in
    ``v + 0.5 * p``) died a moment ago: their entries are dropped first."""
    if _DEAD:
        with _LOCK:
            _drop_dead()
    own = 0
    for a in arrays:
        if a._pending is not None and a._pending in _PENDING:
            own += 1
    return len(_PENDING) == own


def _others_pending(todo: set[int]) -> bool:
    """Whether a live uncomputed array other than ``todo``'s exists: every candidate to
    keep is one."""
    # registered arrays are distinct and uncomputed: one more than ``todo`` holds is
    # another (a stale entry only costs the walk it starts)
    return len(_PENDING) > len(todo) or any(
        (arr := _pending(key)) is not None and id(arr) not in todo
        for key in _newest_keys(None))


def _sharing_history(hist: _History, skip: set[int], same: set[int]) -> list[LazyArray]:
    """Held uncomputed arrays outside the plan whose histories read one of its uncomputed
    subqueries and run a reduction besides (the ``SHARED_SCAN_ARRAYS`` newest of those
    built since its oldest uncomputed subquery, within ``SHARED_WALK_BUDGET`` visited
    nodes)."""
    found: list[LazyArray] = []
    budget = SHARED_WALK_BUDGET
    oldest = _oldest_serial(hist)
    for key in _keys_since(oldest, SHARED_SCAN_ARRAYS):
        STATS.bump("scanned")
        arr = _pending(key)
        if arr is None or id(arr) in skip or id(arr._expr) in hist.nodes \
                or id(arr._expr) in same or not arr.runs_reduction() \
                or _built_before(arr._expr, oldest):
            continue
        if arr._size > budget:
            break
        budget -= arr._size
        if _reads_and_reduces(arr._expr.arg, hist.nodes):
            found.append(arr)
    return found


def _oldest_serial(hist: _History) -> int | None:
    """The smallest alias serial of the plan's uncomputed subqueries (None: one has an alias
    of another kind, so no array can be ruled out by age)."""
    serials = [alias_serial(n.lhs) for n in hist.nodes.values()]
    return None if any(s is None for s in serials) else min(serials, default=None)


def _built_before(expr: Subquery, oldest: int | None) -> bool:
    """Whether ``expr`` was built before every uncomputed subquery of the plan, so its
    history cannot read one (a held value a loop built in an earlier iteration, such as
    the statistics scipy's permutation_test collects: no walk of its history per compute)."""
    serial = alias_serial(expr.lhs)
    return oldest is not None and serial is not None and serial < oldest


def _reads_and_reduces(root: LogicNode, nodes: dict[int, Subquery]) -> bool:
    """Whether the uncomputed history under ``root`` reads one of ``nodes`` and, outside
    them, runs a reduction of its own (a kernel that would otherwise run again later,
    when its inputs may have to be recomputed too)."""
    seen: set[int] = set()
    stack = [root]
    reads = reduces = False
    while stack and not (reads and reduces):
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, Subquery):
            if id(n) in nodes:
                reads = True
                continue
            if isinstance(n.arg, Table) or memoized(n.lhs) is not None:
                continue
        reduces = reduces or isinstance(n, Aggregate)
        stack.extend(n.children)
    return reads and reduces
