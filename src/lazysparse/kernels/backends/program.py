"""Re-running plans of a known shape: a :class:`Program` per cached optimized plan.

The first run of a plan shape decides each compute query once (``execute.decide_query``:
its layouts, runner and kernel) and derives a :class:`Recipe`: which environment entries
are its operands, which plan parameters are its constants, where each loop extent comes
from. Later runs bind tensors and constants by those recipes and call the kernel: no walk
of the query, no dtype inference, no structural key. A recipe is used only while the
facts its kernel was chosen for still hold (result fill key, fold decision, sparse
operands' fill values); otherwise that query takes the full path again.
"""

from __future__ import annotations

import operator
import struct
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from lazysparse.formats.dtypes import fill_key
from lazysparse.formats.layouts import canonical
from lazysparse.formats.ordering import ordered
from lazysparse.kernels.backends.execute import (
    RUNS,
    HostRunner,
    decide_query,
    execute_plan,
    host_runner,
    run_decided,
)
from lazysparse.kernels.backends.numba.kernel import Kernel, fold_ok, out_fill_key
from lazysparse.kernels.compile.planning.analysis import (
    DENSE_FILL,
    KernelInfo,
    QueryData,
    const_decided,
    decisions_hold,
    eval_fill,
    has_implicit,
)
from lazysparse.kernels.compile.planning.constant_fills import always_full
from lazysparse.kernels.compile.planning.decisions import DecisionsRecord, QueryDecisions
from lazysparse.logic.nodes import (
    Aggregate,
    Alias,
    Immediate,
    LogicNode,
    MapJoin,
    Plan,
    Produces,
    Query,
    Reformat,
    Reorder,
    Table,
)

_KNOWN_DATA_FIELDS = ("tensors", "consts", "init", "extents", "out_shape", "out_fill")


@dataclass(frozen=True)
class Recipe:
    """How to bind one compute query's runtime data without analysing it again."""

    info: KernelInfo
    kernel: Kernel | None  # None: ``host`` runs it
    host: HostRunner | None  # the NumPy executor or a relayout (no compiled kernel)
    operands: tuple[Alias, ...]
    params: tuple[int, ...]  # plan parameter of each kernel constant, in kernel order
    extents: tuple[tuple[str, int, int], ...]  # (field, operand slot, axis)
    unit_fields: tuple[str, ...]  # loop fields no operand indexes (extent 1)
    init: Any
    init_fill: Any  # the init at the accumulator's dtype (a reduction's result fill)
    out_fill: Any  # fixed result fill (reductions), else None: evaluated per run
    out_fill_key: Any
    sparse_fills: tuple[tuple[int, Any], ...]  # (slot, fill key) of non-dense operands
    fold_ok: bool | None  # the fold decision, when it depends on the constants
    # the fill-time decisions depend on the constants (``analysis.const_decided``)
    recheck: bool = False
    # each operand's layout the kernel was built for (an unordered operand the kernel
    # needed sorted, ``compile.planning.ordering``, is sorted again on every run)
    specs: tuple[Any, ...] = ()
    # the result fill when every operand is dense, whatever the constants
    # (``constant_fills.always_full``: 0 of the result dtype), else None: evaluated per run
    dense_fill: Any = None

    # the last (fills and constants, result fill) whose facts held: every check below is
    # a function of the fills and constants, so a run with the same ones skips them. One
    # tuple in one slot, read and replaced whole: threads running this recipe with their
    # own constants never pair one run's fills with another's result fill
    last: list[Any] = field(default_factory=lambda: [None], compare=False, repr=False)

    def data(self, env: dict[Alias, Any], params: tuple[Any, ...]) -> QueryData | None:
        """The query's runtime data, or None when the kernel's facts no longer hold."""
        return self.bound(tuple([env[a] for a in self.operands]), params)

    def bound(self, tensors: tuple[Any, ...], params: tuple[Any, ...]) -> QueryData | None:
        """:meth:`data` of the operand tensors already gathered (in operand order)."""
        if self.specs and not _same_specs(tensors, self.specs):
            tensors = self._conformed(tensors)
            if tensors is None:
                return None
        # maps and loops, not comprehensions: no Python frame per call (this runs per compute)
        consts = tuple(map(params.__getitem__, self.params))
        extents = {}
        for f, s, ax in self.extents:
            extents[f] = tensors[s].shape[ax]
        for f in self.unit_fields:
            extents[f] = 1
        scalars = (*map(_FILL_VALUE, tensors), *consts)  # the fills, then the constants
        last = self.last[0]
        if last is not None and _same_scalars(last[0], scalars):
            return QueryData(tensors, consts, self.init, extents,
                             tuple(map(extents.__getitem__, self.info.out_fields)), last[1])
        data = self._checked(tensors, consts, extents)
        if data is not None:
            self.last[0] = (scalars, data.out_fill)
        return data

    def _conformed(self, tensors: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """``tensors`` with the operands the kernel reads sorted made so (None when an
        operand's layout differs otherwise: the full path decides again)."""
        out = []
        for t, spec in zip(tensors, self.specs, strict=True):
            if getattr(t, "spec", spec) != spec:
                t = ordered(t)
                if t.spec != spec:  # a structured operand the kernel reads csr-like
                    t = canonical(t)
                if t.spec != spec:
                    return None
            out.append(t)
        return tuple(out)

    def _checked(self, tensors: tuple[Any, ...], consts: tuple[Any, ...],
                 extents: dict[str, int]) -> QueryData | None:
        """The data with the result fill evaluated and every fact checked (None: a fact
        the kernel was built for does not hold)."""
        for slot, key in self.sparse_fills:
            if fill_key(tensors[slot].fill_value) != key:
                return None
        info = self.info
        out_fill = self.out_fill
        if info.epilogue is not None:  # the epilogue of the reduction's fill (the init)
            out_fill = eval_fill(info.epilogue, list(tensors), list(consts), self.init_fill)
        elif out_fill is None:
            if self.dense_fill is not None and _all_dense(tensors):
                out_fill = self.dense_fill  # what eval_fill gives, known without the constants
            else:
                out_fill = eval_fill(info.expr, list(tensors), list(consts))
        data = QueryData(tensors, consts, self.init, extents,
                         tuple(extents[f] for f in info.out_fields), out_fill)
        if self.out_fill_key is not DENSE_FILL and out_fill_key(info, data) != self.out_fill_key:
            return None
        if self.fold_ok is not None and fold_ok(info, data) != self.fold_ok:
            return None
        if self.recheck and not decisions_hold(info, tensors, consts, self.init):
            return None
        return data

    def run(self, data: QueryData) -> Any:
        """Run the kernel (or the host path) on ``data``."""
        RUNS.bump("queries")
        if self.kernel is None:
            return self.host(self.info, data)
        return self.kernel(data)


_FILL_VALUE = operator.attrgetter("fill_value")


def _all_dense(tensors: tuple[Any, ...]) -> bool:
    """Whether no operand has an implicit region (``analysis.has_implicit``)."""
    for t in tensors:  # a loop: per run
        if has_implicit(t):
            return False
    return True


def _same_specs(tensors: tuple[Any, ...], specs: tuple[Any, ...]) -> bool:
    """Whether each tensor has its layout in ``specs`` (the same object mostly: a
    dataclass compare otherwise); data without a spec matches anything."""
    for t, spec in zip(tensors, specs):  # noqa: B905 - one spec per operand
        own = getattr(t, "spec", spec)
        if own is not spec and own != spec:
            return False
    return True


def _same_scalars(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Whether two tuples of scalars hold the same values bit for bit and type for type
    (``-0.0`` differs from ``0.0``; equal NaNs match, they compute alike)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):  # noqa: B905 - lengths checked above
        if x is not y and not _same_scalar(x, y):  # the same object mostly: no call
            return False
    return True


def _same_scalar(x: Any, y: Any) -> bool:
    if x is y:
        return True
    if type(x) is not type(y):
        return False
    if isinstance(x, np.generic):
        return (x.dtype is y.dtype or x.dtype == y.dtype) and x.tobytes() == y.tobytes()
    if isinstance(x, float | complex):
        return struct.pack("<2d", *_parts(x)) == struct.pack("<2d", *_parts(y))
    return bool(x == y)


def _parts(v: float | complex) -> tuple[float, float]:
    c = complex(v)
    return c.real, c.imag


def _pointwise_params(node: LogicNode) -> list[Any] | None:
    """The ``Immediate`` values of a query's pointwise tree in the order ``analyze_query``
    reads them (left to right, depth first)."""
    out: list[Any] = []

    def visit(n: LogicNode) -> None:
        if isinstance(n, Immediate):
            out.append(n.val)
        elif isinstance(n, MapJoin):
            for a in n.args:
                visit(a)
        elif isinstance(n, Aggregate | Reorder | Reformat):
            visit(n.arg)

    if not isinstance(node, Query):
        return None
    visit(node.rhs)
    return out


def _param_index(val: Any) -> int | None:
    idx = getattr(val, "index", None)
    return idx if type(val).__name__ == "_Param" else None


def _recipe(template: Query, info: KernelInfo, data: QueryData, kernel: Kernel | None,
            host: HostRunner | None, params: tuple[Any, ...],
            aliases: dict[str, Alias]) -> Recipe | None:
    """The recipe of ``template`` (its constants as ``_Param`` s), checked against what
    ``analyze_query`` derived on this run; None when it cannot reproduce it. ``aliases``:
    the plan's statement aliases by name (the recipe binds operands by those objects, so
    each run's lookups match by identity)."""
    if tuple(f.name for f in fields(QueryData)) != _KNOWN_DATA_FIELDS:
        return None  # the query data grew a field this recipe does not know how to bind
    raw = _pointwise_params(template)
    if raw is None:
        return None
    pidx = [_param_index(v) for v in raw]
    if any(i is None for i in pidx):
        return None
    operands = tuple(aliases.get(op.alias) or Alias(op.alias) for op in info.operands)
    extents: list[tuple[str, int, int]] = []
    for op in info.operands:
        for ax, f in enumerate(op.axis_fields):
            if all(f != e[0] for e in extents):
                extents.append((f, op.slot, ax))
    unit = tuple(f for f in info.loop_order if all(f != e[0] for e in extents))
    init_fill = (np.asarray(data.init).astype(info.acc_dtype)[()]
                 if info.reduce_op is not None else None)
    out_fill = data.out_fill if info.reduce_op is not None else None
    # a folding kernel needs the constants to agree on the skipped value on every run; a
    # kernel built without folding is right whatever they are (it visits every point)
    fold = None
    if kernel is not None and kernel.lowered.fold is not None and info.const_dtypes:
        fold = fold_ok(info, data)
    sparse = tuple((op.slot, op.fill_key) for op in info.operands
                   if op.fill_key != DENSE_FILL)
    recipe = Recipe(info, kernel, host, operands, tuple(pidx), tuple(extents),  # type: ignore[arg-type]
                    unit, data.init, init_fill, out_fill,
                    DENSE_FILL if kernel is None else out_fill_key(info, data), sparse, fold,
                    const_decided(info), tuple(getattr(t, "spec", None) for t in data.tensors),
                    _dense_fill(info, out_fill))
    env = {a: t for a, t in zip(operands, data.tensors, strict=True)}
    again = recipe.data(env, params)
    if again is None or not _same_data(again, data):
        return None
    return recipe


def _dense_fill(info: KernelInfo, out_fill: Any) -> Any:
    """:attr:`Recipe.dense_fill` of a query (None where the fill is fixed already, an
    epilogue's follows the reduction, or the constants may decide it)."""
    if out_fill is not None or info.epilogue is not None or not always_full(info.expr):
        return None
    return np.asarray(0).astype(info.expr.dtype)[()]  # type: ignore[attr-defined]


def _same_data(a: QueryData, b: QueryData) -> bool:
    return (all(x is y for x, y in zip(a.tensors, b.tensors, strict=True))
            and len(a.consts) == len(b.consts)
            and all(x is y or np.array_equal(x, y, equal_nan=True)
                    for x, y in zip(a.consts, b.consts, strict=True))
            and a.extents == b.extents and a.out_shape == b.out_shape
            and fill_key(a.out_fill) == fill_key(b.out_fill)
            and (a.init is b.init or np.array_equal(a.init, b.init, equal_nan=True)))


class Program:
    """Runs one cached optimized plan (``optimizer.plan_cache.CachedPlan``) on new inputs
    and parameters, deriving each query's recipe on first use."""

    def __init__(self, entry: Any) -> None:
        self.entry = entry
        self.recipes: dict[int, Recipe | None] = {}
        # per query, the decisions its first run took (without that run's data) and its
        # compiled kernel (None: a host runner's): the record ``xp.explain`` prints
        # (:meth:`recorded`)
        self.decided: dict[int, tuple[DecisionsRecord, Kernel | None]] = {}
        # per query whose operands are all plan inputs, each operand's input slot: its
        # recipe's tensors are read from the inputs directly (no alias lookups per call)
        self.slots: dict[int, tuple[int, ...]] = {}
        # the template's statements, decoded once: (input slot, alias) binds an input,
        # (body index, alias) of a compute query, and the aliases the plan produces
        template: Plan = entry.template
        self.inputs: list[tuple[int, Alias]] = []
        self.queries: list[tuple[int, Alias]] = []
        self.produces: tuple[Alias, ...] | None = None
        for j, body in enumerate(template.bodies):
            if j in entry.slots:
                assert isinstance(body, Query) and isinstance(body.rhs, Table)
                self.inputs.append((body.rhs.tns.val.index, body.lhs))
            elif isinstance(body, Query):
                self.queries.append((j, body.lhs))
            elif isinstance(body, Produces):
                self.produces = body.args  # type: ignore[assignment]
                break
        # the body index of the plan's one query when it produces that query's result alone
        # (a compute of one array): :meth:`run` calls its recipe without the alias tables
        self.only: int | None = self.queries[0][0] if len(self.queries) == 1 and \
            self.produces == (self.queries[0][1],) else None

    def run(self, inputs: list[Any], params: tuple[Any, ...]) -> tuple[Any, ...]:
        """The tensors the plan produces for ``inputs`` and ``params``."""
        if self.produces is None:
            raise ValueError("plan has no Produces statement")
        if self.only is not None and self.only in self.slots:  # one query on the inputs
            recipe = self.recipes[self.only]
            assert recipe is not None
            data = recipe.bound(tuple(map(inputs.__getitem__, self.slots[self.only])), params)
            if data is not None:
                return (recipe.run(data),)
        env: dict[Alias, Any] | None = None  # by alias: made when a query needs it
        out: dict[Alias, Any] = {}  # the queries' results
        filled: Plan | None = None
        for j, lhs in self.queries:
            recipe = self.recipes.get(j)
            data = None
            if recipe is not None:
                slots = self.slots.get(j)
                if slots is not None:
                    data = recipe.bound(tuple(map(inputs.__getitem__, slots)), params)
                else:
                    env = self._env(env, inputs, out)
                    data = recipe.data(env, params)
            if recipe is not None and data is not None:
                res = recipe.run(data)
            else:
                if filled is None:
                    filled = self.entry.fill(inputs, params)
                query = filled.bodies[j]
                body = self.entry.template.bodies[j]
                assert isinstance(query, Query) and isinstance(body, Query)
                env = self._env(env, inputs, out)
                res = self._first_run(j, body, query, env, params)
            out[lhs] = res
            if env is not None:
                env[lhs] = res
        produced = []
        for a in self.produces:
            if a not in out:  # an input produced as it is
                env = self._env(env, inputs, out)
            produced.append(out[a] if a in out else env[a])  # type: ignore[index]
        return tuple(produced)

    def rerun(self, inputs: Any, params: tuple[Any, ...]) -> tuple[Any, ...]:
        """:func:`run_cached` of this program's entry (counted in ``RUNS``): a compute of a
        known shape reaches it from the root's key, without a plan
        (``engine.known_shapes``)."""
        RUNS.bump("plans")
        return self.run(inputs, params)

    def recorded(self, j: int, env: dict[Alias, Any], params: tuple[Any, ...]
                 ) -> tuple[QueryDecisions, Kernel | None] | None:
        """Query ``j``'s recorded decisions over the data of ``env`` and ``params``, and its
        kernel, where a run on them would use that record (its recipe binds the data), else
        None: a run would decide again."""
        recipe = self.recipes.get(j)
        if j not in self.decided or recipe is None:
            return None
        data = recipe.data(env, params)
        if data is None:
            return None
        record, kernel = self.decided[j]
        return record.bound(data), kernel

    def _env(self, env: dict[Alias, Any] | None, inputs: list[Any],
             out: dict[Alias, Any]) -> dict[Alias, Any]:
        """``env``, or the plan's inputs and the results so far by alias when not made yet."""
        if env is None:
            env = {lhs: inputs[i] for i, lhs in self.inputs}
            env.update(out)
        return env

    def _first_run(self, j: int, template: Query, query: Query, env: dict[Alias, Any],
                   params: tuple[Any, ...]) -> Any:
        """Run ``query`` through the full path and remember its recipe (once per query:
        a query whose recipe failed its checks keeps the full path)."""
        d, kernel = decide_query(query, env)
        if j not in self.recipes:
            self.decided[j] = (d.record(), kernel)
            host = None if kernel is not None else host_runner(d.runner)  # type: ignore[arg-type]
            aliases = {a.name: a for _, a in (*self.inputs, *self.queries)}
            recipe = self.recipes[j] = _recipe(template, d.info, d.data, kernel, host, params,
                                               aliases)
            slot_of = {a.name: i for i, a in self.inputs}
            if recipe is not None and all(a.name in slot_of for a in recipe.operands):
                self.slots[j] = tuple([slot_of[a.name] for a in recipe.operands])
        return run_decided(d, kernel)


def run_cached(entry: Any, inputs: list[Any], params: tuple[Any, ...]) -> tuple[Any, ...]:
    """Run a plan-cache entry: through its :class:`Program` when it is cached, else the
    optimized plan it holds through :func:`execute_plan` (each run counted in ``RUNS``)."""
    RUNS.bump("plans")
    if not entry.cached:
        return execute_plan(entry.template)
    if entry.program is None:
        entry.program = Program(entry)
    return entry.program.run(inputs, params)


def recorded(entry: Any, j: int, env: dict[Alias, Any], params: tuple[Any, ...]
             ) -> tuple[QueryDecisions, Kernel | None] | None:
    """Query ``j`` of a plan-cache entry as its :class:`Program` decided it, where a run on
    ``env`` and ``params`` would use that record (``Program.recorded``), else None."""
    prog = entry.program
    return prog.recorded(j, env, params) if isinstance(prog, Program) else None
