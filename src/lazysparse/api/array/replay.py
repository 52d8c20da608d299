"""A loop step's compute replayed from its cached program, without building it again.

A native solver's iteration builds the same expression each time from the same kind of
arrays (the matrix and the iterates, computed leaves) and a few Python floats, and computes
several arrays of it in one plan (cg: ``x, r, p, r.r``). Its queries share subqueries
(``p`` feeds ``A p``, ``p.Ap`` and ``x + alpha p``), so the one-array fast path
(``engine.known_shapes.run_known``) cannot serve it, and each iteration pays the full path:
building a score of nodes, a walk keying the plan, the plan-cache lookup (issue 34).

:class:`Replay` runs a step's full path once and records how the plan-cache key, the
program's inputs (in key order) and its parameters (in parameter order) follow from the
step's arrays and scalars. A later call builds nothing: it derives the key from the
recorded structure and the new data's classes (each leaf's, as the full path reads them),
and runs the cached program on the new tensors (``engine.known_shapes.run_entry``).

It answers what the full path answers. A call takes a record's route only when the key it
derives is that record's (same structure, data classes, constant classes, aliasing of the
inputs, which of the step's arrays hold one tensor) and the entry a compiled hit (a shape
whose formats exact counts decided found by the counts' verdicts on this call's data, as
``plan_cache.lookup`` finds it). A full call makes a record only when every output is a
new uncomputed cpu array, the full path keeps no held value with them (``api.held_values``:
the step's temporaries die before it computes, so a later call keeps none either), every
output computed has its tensor's fill value (a replay's outputs are leaves of the
tensors), every input of the plan is the tensor of one of the step's arrays (by identity)
and every parameter exactly one of its scalars converted to the parameter's
dtype (``logic.dtypes.scalar_as``, as the api converts an operand), bit for bit. A record
is used once a second full call with the same key made the same one, every scalar having
changed in between: a constant of the step equal to a scalar's value by chance, or a
scalar the step transformed, never passes for that scalar. A step keeps a record per key
it meets (:data:`MAX_RECORDS`: a scalar's sign is in the key).

The caller's part: the step's expression depends on its arrays and scalars only through
the key's classes, as the optimizer's plans do (the solvers' products, axpys and dots);
a step whose expression a host branch changes (minres' first iteration, lsqr's zero
norms) keeps a ``Replay`` per branch or runs that branch by ``xp.compute``. Otherwise, and
on any miss, the step runs the full path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lazysparse.api.array.held_values import held_values
from lazysparse.api.array.lazy_array import CPU, LazyArray
from lazysparse.api.array.live import BY_ALIAS
from lazysparse.api.array.materialize import build_plan, compute_arrays
from lazysparse.engine.known_shapes import run_entry
from lazysparse.engine.plan_cache import const_classes, input_key, plan_key, same_inputs
from lazysparse.formats.compiled.sync import Counters
from lazysparse.formats.config import get_densify_limit
from lazysparse.logic.dtypes import scalar_as
from lazysparse.logic.nodes import Reorder, Table
from lazysparse.logic.structural_key import node_classes, subquery_key

# whether steps replay (tests compare both routes' results bit for bit)
ENABLED = True
STATS = Counters("recorded", "replayed", "full")


@dataclass(frozen=True)
class _Record:
    """How one step's plan-cache key and program arguments follow from its arrays and
    scalars: ``key`` the full key recorded, ``structure`` its data-free part, ``data``
    the array each plan input is the tensor of, ``params`` the scalar each parameter is
    and its dtype (None: the scalar as it is); ``values`` the call's scalars as the
    parameters read them (to confirm a record by a second one)."""

    key: Any
    structure: Any
    shared: tuple[int, ...]  # which of the step's arrays hold one tensor (``same_inputs``)
    data: tuple[int, ...]
    params: tuple[tuple[int, np.dtype | None], ...]
    values: tuple[Any, ...]

    def confirms(self, earlier: _Record) -> bool:
        """Whether this record and an earlier call's agree, every scalar a parameter
        reads having changed between the two calls (module docstring)."""
        if (self.key, self.shared, self.data, self.params) != (
                earlier.key, earlier.shared, earlier.data, earlier.params):
            return False
        return all(not _same(self.values[k], earlier.values[k])
                   for k in range(len(self.params)))


def _same(x: Any, y: Any) -> bool:
    """Whether two scalars are the same value bit for bit, of the same type."""
    return type(x) is type(y) and np.asarray(x).tobytes() == np.asarray(y).tobytes()


def _converted(value: Any, dtype: np.dtype | None) -> Any:
    """A scalar as a parameter of ``dtype`` reads it (as the api converts operands)."""
    return value if dtype is None else scalar_as(value, dtype)


def _leaf_tensor(a: LazyArray) -> Any:
    """The tensor of computed cpu leaf ``a`` as a plan reads it (its ``Table``'s), else
    None (uncomputed, a view or queued writes to bring up to date, another device)."""
    if a._result is None or a._view is not None or (a._update is not None and a._update.dirty) \
            or a._device.name != "cpu" or type(a._expr.arg) is not Table:
        return None  # (a write's state with nothing queued: ``_sync`` would do nothing)
    return a._expr.arg.tns.val


def _own_fill(a: LazyArray) -> bool:
    """Whether computed ``a`` has its tensor's fill value (bit for bit): then a replay's
    leaf of the tensor (``LazyArray.from_tensor``) is the array the full path made."""
    t = a._result
    return t is not None and _same(a._fill_value, t.fill_value)


def _leaf_class(a: LazyArray) -> Any:
    """The class the plan key gives leaf ``a``'s data: its node's, kept on the node."""
    node = a._expr
    if node.key_cache is None:
        subquery_key(node)
    return node_classes(node, input_key)[0]


# the most confirmed records (and candidates) one step keeps: one per key its calls take
# (a step scalar's sign is in the key: minres' ``phi`` alternates)
MAX_RECORDS = 8
# full calls in a row that could make no record after which a step stops trying (each try
# keys its plan once more: a step that can never replay pays it only this often)
MAX_MISSES = 8


class Replay:
    """One loop's repeated step (module docstring): ``step(arrays, scalars, build)``
    returns the computed arrays ``build()`` makes from ``arrays`` and ``scalars``.
    ``records``: the confirmed records, most recently used first; ``candidates``: the
    records of full calls not yet confirmed, by key."""

    __slots__ = ("records", "candidates", "misses")

    def __init__(self) -> None:
        self.records: list[_Record] = []
        self.candidates: dict[Any, _Record] = {}
        self.misses = 0  # full calls in a row that could make no record

    def __call__(self, arrays: Sequence[LazyArray], scalars: Sequence[float],
                 build: Callable[[], tuple[LazyArray, ...]]) -> tuple[LazyArray, ...]:
        """The results of ``build()`` (arrays it makes of ``arrays`` and ``scalars``
        alone), computed together; replayed when recorded, else computed (and recorded)."""
        replayable = False
        if self.records:
            out, replayable = self._replayed(arrays, scalars)
            if out is not None:
                STATS.bump("replayed")
                return out
        outs = build()
        rec = None
        if ENABLED and not replayable and self.misses < MAX_MISSES:
            rec = _recorded(arrays, scalars, outs)
        STATS.bump("full")
        compute_arrays(outs)
        if rec is not None and all(map(_own_fill, outs)):
            self._record(rec)
            self.misses = 0
        elif not replayable:
            self.misses += 1
        return outs

    def _record(self, rec: _Record | None) -> None:
        """Keep this full call's record as a candidate, or as a record when it confirms
        the candidate of its key."""
        if rec is None:
            return
        earlier = self.candidates.pop(rec.key, None)
        if earlier is not None and rec.confirms(earlier):
            self.records.insert(0, rec)
            del self.records[MAX_RECORDS:]
            STATS.bump("recorded")
            return
        if len(self.candidates) >= MAX_RECORDS:
            self.candidates.clear()
        self.candidates[rec.key] = rec

    def _replayed(self, arrays: Sequence[LazyArray], scalars: Sequence[float]
                  ) -> tuple[tuple[LazyArray, ...] | None, bool]:
        """The results of the record whose key this call's data and scalars give, run by
        its program, as new leaves; None where the full path must run, and whether a
        record's key matched (then a full call records nothing new)."""
        classes = []
        tensors = []
        for a in arrays:
            t = _leaf_tensor(a)
            if t is None:
                return None, False
            tensors.append(t)
            classes.append(_leaf_class(a))
        shared = same_inputs(tensors)
        for k, rec in enumerate(self.records):
            if rec.shared != shared:
                continue
            data = [tensors[i] for i in rec.data]
            params = tuple([_converted(scalars[j], d) for j, d in rec.params])
            key = ("cpu", ((rec.structure, tuple([classes[i] for i in rec.data])),
                           const_classes(params), same_inputs(data), get_densify_limit()))
            if key == rec.key:
                if k:
                    self.records.insert(0, self.records.pop(k))
                results = run_entry(key, data, params, counted=True)
                if results is None:
                    return None, True
                return tuple([LazyArray.from_tensor(t, CPU) for t in results]), True
        return None, False


def _recorded(arrays: Sequence[LazyArray], scalars: Sequence[float],
              outs: tuple[LazyArray, ...]) -> _Record | None:
    """The record of a step whose full path computes ``outs`` of ``arrays`` and
    ``scalars`` (module docstring: when it can be replayed), else None."""
    if not _plain_outputs(outs):
        return None
    tensors = [_leaf_tensor(a) for a in arrays]
    if any(t is None for t in tensors):
        return None
    where = {id(t): i for i, t in reversed(list(enumerate(tensors)))}  # first positions
    raw, inputs, nodes = plan_key(build_plan(outs))
    data = tuple([where.get(id(t), -1) for t in inputs])
    params = tuple([_source(n.val, scalars) for n in nodes])
    if -1 in data or None in params:
        return None
    return _Record(("cpu", raw), raw[0][0], same_inputs(tensors), data,
                   params,  # type: ignore[arg-type]
                   tuple([n.val for n in nodes]))


def _source(value: Any, scalars: Sequence[float]) -> tuple[int, np.dtype | None] | None:
    """Which scalar a parameter of value ``value`` is, converted to its dtype: the one
    whose conversion is ``value`` bit for bit, or None (none, or several)."""
    dtype = value.dtype if isinstance(value, np.generic) else None
    found = None
    for j, s in enumerate(scalars):
        try:
            same = _same(_converted(s, dtype), value)
        except (TypeError, ValueError, OverflowError):
            same = False
        if same:
            if found is not None:
                return None
            found = (j, dtype)
    return found


def _plain_outputs(outs: tuple[LazyArray, ...]) -> bool:
    """Whether ``outs`` are distinct new uncomputed cpu arrays, no view of another, that a
    compute runs in one plan of their own (no held value to keep: ``held_values``; a
    later call's would be none too, its history being the step's own temporaries and
    leaves)."""
    if len({id(a) for a in outs}) != len(outs):
        return False
    for a in outs:
        if a._result is not None or a._view is not None or a._update is not None \
                or a._device.name != "cpu" or type(a._expr.arg) is Reorder:
            return False
    return not held_values(tuple(outs), BY_ALIAS)
