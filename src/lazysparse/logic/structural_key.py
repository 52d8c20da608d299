"""Structural keys: a plan with its data abstracted, the cache key of compiled kernels.

A key is ``(structure, classes)``. In the structure, data (``Table`` tensors) is a ``data``
token; its class (by default its signature: format spec, dtype, fill value, ndim; a NumPy
array is ``("dense", dtype, ndim)``) is in ``classes``, the data's classes in key order.
Scalar constants in pointwise position become parameters that keep their dtype kind,
numbered by their order in the walk (so ``x * 3`` and ``x * 4`` share a key, and
:func:`plan_parameters` lists ``(3,)`` / ``(4,)`` in parameter order for the kernel call);
aliases and fields are renumbered in order of first appearance. Aggregate inits stay in the
key by value (they decide result fill values and formats). A subquery shared by several uses
is keyed once (later uses name it). Every subquery carries its own data-free key once
computed (:class:`SubqueryKey`, built from its children's, kept on the node as tinygrad's
UOps keep theirs), its structure hash-consed (:class:`Structure`: equal structures are one
object, hashed and compared by identity in C): a relabeled subquery is one token of its
parent's key, so a plan keys only the nodes it adds, never the history it reads again, and
a plan key hashes and compares in a time independent of the history. The classes of a
subquery's data are collected once per node and data-key function (:func:`node_classes`).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from lazysparse.logic.nodes import (
    Aggregate,
    Alias,
    Field,
    Immediate,
    LogicNode,
    MapJoin,
    Plan,
    Produces,
    Query,
    Reformat,
    Relabel,
    Reorder,
    Subquery,
    Table,
    _scalar_key,
)
from lazysparse.logic.operators import Operator


def _is_scalar(val: Any) -> bool:
    return isinstance(val, bool | int | float | complex | np.generic)


# the parameter kinds of Python's scalars and of NumPy's fixed-size scalar types, by type
# (a dict lookup instead of a dtype built and its text formatted for every new constant);
# a NumPy type whose dtype varies (``str_``, ``void``, datetimes) is not in it
_KINDS: dict[type, str] = {t: f"py-{t.__name__}" for t in (bool, int, float, complex)}
_KINDS.update({t: np.dtype(t).str for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float16, np.float32, np.float64, np.longdouble, np.complex64,
    np.complex128, np.clongdouble)})


def scalar_kind(val: Any) -> str:
    """The parameter kind of a scalar: its dtype for NumPy scalars, ``py-<type>`` for Python's
    (weakly typed)."""
    kind = _KINDS.get(type(val))
    if kind is not None:
        return kind
    if isinstance(val, np.generic):
        return val.dtype.str
    return f"py-{type(val).__name__}"


def spec_key(spec: Any) -> tuple[Any, ...]:
    """A format spec as the tuple of what tells specs apart (its fields): a key token that
    hashes in C, where the spec's dataclass ``__hash__`` runs Python code on every lookup
    of a cached leaf's key."""
    key = (spec.name, spec.level_kinds, spec.mode_order)
    return (*key, "keeps fills") if getattr(spec, "keeps_fills", False) else key


def data_key(val: Any) -> Any:
    """The key of data in a plan: a tensor's signature (its spec as ``spec_key``), a NumPy
    array's dtype and ndim (None for anything else)."""
    sig = getattr(val, "signature", None)
    if sig is not None and hasattr(val, "levels"):
        head = sig[0] if sig else None
        if hasattr(head, "level_kinds") and hasattr(head, "mode_order"):
            sig = (spec_key(head), *sig[1:])
        return ("data", sig)
    if isinstance(val, np.ndarray):
        return ("data", ("dense", val.dtype.str, val.ndim))
    return None


class Structure:
    """The data-free key of a subquery, hash-consed (:func:`structure_of`): equal token
    streams are one object, so a key holding it hashes and compares it by identity (in C,
    whatever the history below it); ``tokens`` is the stream (for the plan store's
    canonical text)."""

    __slots__ = ("tokens", "__weakref__")

    def __init__(self, tokens: tuple[Any, ...]) -> None:
        self.tokens = tokens

    def __reduce__(self) -> tuple[Any, ...]:
        return (structure_of, (self.tokens,))

    def __repr__(self) -> str:
        return f"Structure{self.tokens!r}"


# the live structures by token stream (an entry leaves with its structure's last holder)
_STRUCTURES: dict[tuple[Any, ...], weakref.KeyedRef] = {}
_STRUCTURES_LOCK = threading.RLock()  # reentrant: a collection may drop an entry inside


def _forget(ref: weakref.KeyedRef) -> None:
    with _STRUCTURES_LOCK:
        if _STRUCTURES.get(ref.key) is ref:
            del _STRUCTURES[ref.key]


def structure_of(tokens: tuple[Any, ...]) -> Structure:
    """The one live :class:`Structure` of ``tokens`` (made when none is alive)."""
    ref = _STRUCTURES.get(tokens)
    found = ref() if ref is not None else None
    if found is not None:
        return found
    with _STRUCTURES_LOCK:
        ref = _STRUCTURES.get(tokens)
        found = ref() if ref is not None else None
        if found is None:
            found = Structure(tokens)
            _STRUCTURES[tokens] = weakref.KeyedRef(found, _forget, tokens)
        return found


class SubqueryKey:
    """The key of one subquery, computed once from its children's and kept on the node
    (``Subquery.key_cache``): a subquery is a closed term under a ``Relabel`` (its fields
    are its own; only its alias is seen outside), so its key, data and parameters do not
    depend on where it is used, and a plan built from known subqueries keys only the nodes
    it adds. ``key``: its :class:`Structure` (data-free: no data-key function in it; made
    from the token stream given);
    ``sources``: where its data's classes come from, in data order (a subquery node for
    the data of a leaf or embedded key, else the value); ``classes``: those classes by
    data-key function, filled by :func:`node_classes`; ``ids``: every subquery node
    inside, itself included (alive while it is, so their ids stay theirs); ``own``: the
    alias numbers its own walk gave (itself 0); ``inner``: the keys it embedded whole, in
    order (a later use of a node inside one is named by its path, :func:`_path`)."""

    __slots__ = ("key", "data", "params", "param_nodes", "ids", "own", "inner", "sources",
                 "classes")

    def __init__(self, tokens: tuple[Any, ...], data: Any, params: tuple[Any, ...],
                 param_nodes: tuple[Immediate, ...], ids: set[int], own: dict[int, int],
                 inner: tuple[SubqueryKey, ...], sources: tuple[Any, ...]) -> None:
        ref = _STRUCTURES.get(tokens)  # structure_of's hit inlined (per new array)
        key = ref() if ref is not None else None
        self.key: Structure = key if key is not None else structure_of(tokens)
        self.data = data
        self.params = params
        self.param_nodes = param_nodes
        self.ids = ids
        self.own = own
        self.inner = inner
        self.sources = sources
        self.classes: dict[Callable[[Any], Any], tuple[Any, ...]] = {}


# a leaf's data is its Table's own value: read from the node, not held, so the key adds no
# reference to the tensor (in-place writes count references to decide whether an array
# owns its storage, api/chapters/setitem.py)
_OWN_DATA = object()


def subquery_key(node: Subquery) -> SubqueryKey:
    """The key of ``node``, from the node when it was keyed before (threads may both
    compute it: the same value, one kept)."""
    found = node.key_cache
    if found is not None:
        return found
    out = _mapjoin_key(node) if FAST_PATH else None
    if out is None:
        out = _walked_key(node)
    node.__dict__["key_cache"] = out
    return out


def node_classes(node: Subquery, data_key_fn: Callable[[Any], Any]) -> tuple[Any, ...]:
    """The classes (``data_key_fn``) of the data of keyed subquery ``node``, in its key's
    data order: computed once per node and function, from its sources' kept classes (read
    without a call: this runs once per new array)."""
    sk = node.key_cache
    found = sk.classes.get(data_key_fn)
    if found is not None:
        return found
    if sk.data is _OWN_DATA:
        found = (data_key_fn(node.arg.tns.val),)
    else:
        out: list[Any] = []
        for src in sk.sources:
            if type(src) is Subquery:
                known = src.key_cache.classes.get(data_key_fn)
                out += known if known is not None else node_classes(src, data_key_fn)
            else:
                out.append(data_key_fn(src))
        found = tuple(out)
    sk.classes[data_key_fn] = found
    return found


def classes_of(sources: Any, data_key_fn: Callable[[Any], Any]) -> tuple[Any, ...]:
    """The data classes of ``sources`` (keyed subquery nodes and data values) in order."""
    out: list[Any] = []
    for src in sources:
        out += node_classes(src, data_key_fn) if type(src) is Subquery else (data_key_fn(src),)
    return tuple(out)


def _walked_key(node: Subquery) -> SubqueryKey:
    """``subquery_key`` by a walk of ``node``'s body (any body)."""
    sub = _Keyer()
    sub.aliases[node.lhs.name] = 0
    sub.own[id(node)] = 0
    sub.seen.add(id(node))
    body = sub.key(node.arg)
    arg = node.arg
    data: Any = tuple(sub.data)
    sources: tuple[Any, ...] = tuple(sub.sources)
    if type(arg) is Table and len(data) == 1 and data[0] is arg.tns.val:
        data, sources = _OWN_DATA, ()
    return SubqueryKey(body, data, tuple(sub.params), tuple(sub.param_nodes), sub.seen,
                       sub.own, tuple(sub.inner), sources)


# whether ``subquery_key`` takes ``_mapjoin_key``'s path (tests compare both paths' keys)
FAST_PATH = True


def _heads(body: LogicNode, out: list[Any], fields: dict[str, int]
           ) -> tuple[LogicNode, ...] | None:
    """The tokens of the nodes on top of an operation's body (the ``Reorder`` s, dense
    ``Reformat`` s and ``Aggregate`` s ``api.building`` wraps around a ``MapJoin`` or an
    operand, then the ``MapJoin``), as the walk emits them, added to ``out``; the operands
    below them (the one operand without a ``MapJoin``), or None for a node the walk keys
    otherwise (a constant it takes as a parameter or as data, a computed operator)."""
    number = fields.setdefault
    while True:
        t = type(body)
        if t is Reorder or t is Aggregate:
            nums = []
            for f in body.idxs:  # an aggregate's reduced fields come before its operand's
                nums.append(number(f.name, len(fields)))
            if t is Reorder:
                out += (Reorder, tuple(nums))
            else:
                op, init = body.op.val, body.init.val
                kind = _KINDS.get(type(init))  # scalar_kind's common case, inlined
                if type(op) is not Operator or kind is None and not _is_scalar(init):
                    return None
                out += (Aggregate, ("op", op.name, op.params),
                        ("const", kind or scalar_kind(init), _scalar_key(init)), tuple(nums))
        elif t is Reformat:
            spec = body.tns.val
            if not (hasattr(spec, "level_kinds") and hasattr(spec, "mode_order")) or \
                    isinstance(spec, Operator) or _is_scalar(spec) or \
                    data_key(spec) is not None:
                return None
            out += (Reformat, 2, ("format", spec_key(spec)))
        elif t is MapJoin:
            op = body.op.val
            if type(op) is not Operator:
                return None
            out += (MapJoin, ("op", op.name, op.params), len(body.args))
            return body.args
        else:
            return (body,)
        body = body.arg


def _mapjoin_key(node: Subquery) -> SubqueryKey | None:
    """``_walked_key``'s answer, token for token, for the bodies operations build (:func:`_heads`
    over scalars and relabeled, maybe reordered, subqueries) without a walker; None for any
    other body or for operands sharing a subquery inside (the walk shows it). Per new array."""
    out: list[Any] = []
    fields: dict[str, int] = {}
    operands = _heads(node.arg, out, fields)
    if operands is None:
        return None
    number = fields.setdefault
    aliases = {node.lhs.name: 0}
    own, ids = {id(node): 0}, {id(node)}
    data: list[Any] = []
    sources: list[Any] = []
    params: list[Any] = []
    nodes: list[Immediate] = []
    inner: list[SubqueryKey] = []
    for a in operands:
        t = type(a)
        if t is Immediate:  # scalar_kind's common case inlined: no call per constant
            kind = _KINDS.get(type(a.val)) or _is_scalar(a.val) and scalar_kind(a.val)
            if not kind:
                return None
            params.append(a.val)
            nodes.append(a)
            out.append(("param", kind))
            continue
        if t is Reorder:  # a broadcast operand's (rare)
            out += (Reorder, tuple([number(f.name, len(fields)) for f in a.idxs]))
            a = a.arg
        if type(a) is not Relabel or type(a.arg) is not Subquery:
            return None
        nums = []
        for f in a.idxs:
            nums.append(number(f.name, len(fields)))
        out += (Relabel, tuple(nums))
        s = a.arg
        if id(s) in ids:
            n = own.get(id(s))
            out += (Subquery, ("in", _path(inner, id(s))) if n is None else n, _AGAIN)
            continue
        sk = s.key_cache or subquery_key(s)
        if sk.data is _OWN_DATA:
            n = own[id(s)] = aliases.setdefault(s.lhs.name, len(aliases))
            ids.add(id(s))
            out += (Subquery, n, _LEAF, sk.key)
            data.append(s.arg.tns.val)
            sources.append(s)
        elif type(s.arg) is Table or not ids.isdisjoint(sk.ids):
            return None  # a leaf holding other data, or a shared subquery: the walk keys it
        else:
            ids.update(sk.ids)
            inner.append(sk)
            out += (WHOLE_TOKEN, sk.key)
            data += sk.data
            sources += (s,) if sk.data else ()
            params += sk.params
            nodes += sk.param_nodes
    return SubqueryKey(tuple(out), tuple(data), tuple(params), tuple(nodes), ids, own,
                       tuple(inner), tuple(sources))


def _path(keys: list[SubqueryKey] | tuple[SubqueryKey, ...], node_id: int) -> tuple[int, Any]:
    """Where subquery ``node_id`` first appears among embedded ``keys``: (which key, its
    alias number there or, deeper, its path there): canonical, as its first appearance in
    pre-order is."""
    for e, k in enumerate(keys):
        if node_id in k.ids:
            n = k.own.get(node_id)
            return (e, n) if n is not None else (e, _path(k.inner, node_id))
    raise AssertionError("a seen subquery is in no embedded key")


class _Keyer:
    """One walk of a plan: its key, data and parameters. Fields and aliases are numbered by
    name (``str`` keys hash in C; a ``Field`` hashes through its dataclass ``__hash__``)."""

    __slots__ = ("fields", "aliases", "params", "param_nodes", "data", "sources", "seen",
                 "own", "inner")

    def __init__(self) -> None:
        self.fields: dict[str, int] = {}
        self.aliases: dict[str, int] = {}
        self.params: list[Any] = []
        self.param_nodes: list[Immediate] = []
        self.data: list[Any] = []  # data values, in key order (a value read twice twice)
        self.sources: list[Any] = []  # where their classes come from (``classes_of``)
        self.seen: set[int] = set()  # ids of the subqueries met (embedded ones' included)
        self.own: dict[int, int] = {}  # ids of the subqueries this walk numbered
        self.inner: list[SubqueryKey] = []  # subquery keys embedded whole, in order

    def embed(self, node: Subquery) -> Any:
        """The key of subquery ``node`` as one token (its data and parameters taken in),
        or None when it shares a subquery with what this walk met already (then it is
        walked here, so the sharing shows in the key)."""
        sk = subquery_key(node)
        if not self.seen.isdisjoint(sk.ids):
            return None
        self.seen.update(sk.ids)
        self.inner.append(sk)
        self.take(sk, node)
        return sk.key

    def take(self, sk: SubqueryKey, node: Subquery) -> None:
        """Add the data and parameters of ``node``'s key ``sk`` to this walk's."""
        if sk.data is _OWN_DATA:
            self.data.append(node.arg.tns.val)
            self.sources.append(node)
        elif sk.data:
            self.data.extend(sk.data)
            self.sources.append(node)
        if sk.params:
            self.params.extend(sk.params)
            self.param_nodes.extend(sk.param_nodes)

    def again(self, node: Subquery) -> Any:
        """The name of subquery ``node`` met again: its alias number when this walk
        numbered it, else its path inside an embedded key."""
        if id(node) in self.own:
            return self.aliases.setdefault(node.lhs.name, len(self.aliases))
        return ("in", _path(self.inner, id(node)))

    def immediate(self, val: Any, *, as_param: bool) -> Any:
        if isinstance(val, Operator):
            return ("op", val.name, val.params)
        if _is_scalar(val):
            if as_param:
                self.params.append(val)
                return ("param", scalar_kind(val))
            return ("const", scalar_kind(val), _scalar_key(val))
        if data_key(val) is not None:  # its class is the plan key's (``classes_of``)
            self.data.append(val)
            self.sources.append(val)
            return _DATA
        if hasattr(val, "level_kinds") and hasattr(val, "mode_order"):  # FormatSpec
            return ("format", spec_key(val))
        return ("value", _scalar_key(val))

    def fields_key(self, idxs: tuple[Field, ...]) -> tuple[int, ...]:
        fields = self.fields
        return tuple([fields.setdefault(f.name, len(fields)) for f in idxs])

    def alias_key(self, alias: Alias) -> int:
        aliases = self.aliases
        return aliases.setdefault(alias.name, len(aliases))

    def key(self, root: LogicNode) -> tuple[Any, ...]:
        """The key of ``root``: its nodes in pre-order (children left to right, so
        parameters and data come in the order kernels read them) as one flat tuple of
        tokens. A node contributes its class, then what it holds (numbered fields and
        aliases, keys of immediates, child counts), then its children: the stream decodes
        to one plan up to renaming. A subquery under a ``Relabel`` is one token, its own
        key (``subquery_key``: computed once per node), unless it shares a subquery with
        what came before. An explicit stack, no recursion: this runs per call."""
        out: list[Any] = []
        emit = out.append
        stack: list[Any] = [root]
        pop, push = stack.pop, stack.append
        fields, aliases, seen = self.fields, self.aliases, self.seen
        steps, children = _KEY_STEPS, _Keyer._children
        while stack:
            node = pop()
            t = type(node)
            if t is Relabel or t is Reorder:
                emit(t)  # fields_key, inlined (the most frequent node)
                emit(tuple([fields.setdefault(f.name, len(fields)) for f in node.idxs]))
                arg = node.arg
                if t is Relabel and type(arg) is Subquery and type(arg.arg) is not Table \
                        and id(arg) not in seen:
                    whole = self.embed(arg)
                    if whole is not None:
                        emit(WHOLE_TOKEN)
                        emit(whole)
                        continue
                push(arg)
            elif t is Subquery:
                emit(t)
                if id(node) in seen:
                    # a shared subexpression is keyed once (a DAG never unfolds into a tree)
                    emit(self.again(node))
                    emit(_AGAIN)
                    continue
                emit(aliases.setdefault(node.lhs.name, len(aliases)))  # alias_key, inlined
                seen.add(id(node))
                self.own[id(node)] = aliases[node.lhs.name]
                if type(node.arg) is Table:
                    sk = subquery_key(node)
                    self.take(sk, node)
                    emit(_LEAF)
                    emit(sk.key)
                else:
                    push(node.arg)
            else:
                steps.get(t, children)(self, node, out, stack)
        return tuple(out)

    # the key of the other nodes, one step each (``key`` inlines relabels, reorders and
    # subqueries): the node's tokens appended to ``out`` (no tuple built), its children
    # pushed on ``stack``

    def _mapjoin(self, node: MapJoin, out: list[Any], stack: list[Any]) -> None:
        op = node.op.val
        out.append(MapJoin)
        out.append(("op", op.name, op.params) if type(op) is Operator else self.param(node.op))
        out.append(len(node.args))
        stack.extend(reversed(node.args))

    def _immediate(self, node: Immediate, out: list[Any], stack: list[Any]) -> None:
        out.append(self.param(node))

    def _aggregate(self, node: Aggregate, out: list[Any], stack: list[Any]) -> None:
        out.append(Aggregate)
        out.append(self.immediate(node.op.val, as_param=False))
        out.append(self.immediate(node.init.val, as_param=False))
        out.append(self.fields_key(node.idxs))
        stack.append(node.arg)

    def _table(self, node: Table, out: list[Any], stack: list[Any]) -> None:
        out.append(Table)
        out.append(self.param(node.tns))
        out.append(self.fields_key(node.idxs))

    def _field(self, node: Field, out: list[Any], stack: list[Any]) -> None:
        out.append(("field", self.fields_key((node,))[0]))

    def _alias(self, node: Alias, out: list[Any], stack: list[Any]) -> None:
        out.append(("alias", self.alias_key(node)))

    def _query(self, node: Query, out: list[Any], stack: list[Any]) -> None:
        out.append(Query)
        out.append(self.alias_key(node.lhs))
        stack.append(node.rhs)

    def _children(self, node: LogicNode, out: list[Any], stack: list[Any]) -> None:
        """Reformat, Plan, Produces and any other node: its children, counted."""
        children = node.children
        out.append(type(node))
        out.append(len(children))
        stack.extend(reversed(children))

    def param(self, node: Immediate) -> Any:
        """The key of an ``Immediate`` in pointwise position (a scalar is a parameter)."""
        n = len(self.params)
        out = self.immediate(node.val, as_param=True)
        if len(self.params) > n:
            self.param_nodes.append(node)
        return out


_KEY_STEPS: dict[type, Callable[[_Keyer, Any, list[Any], list[Any]], None]] = {
    MapJoin: _Keyer._mapjoin, Immediate: _Keyer._immediate, Aggregate: _Keyer._aggregate,
    Table: _Keyer._table, Field: _Keyer._field, Alias: _Keyer._alias, Query: _Keyer._query,
}

# markers in a key's token stream after a subquery's alias: a later use of a shared
# subquery, or a leaf whose body key follows as one token; after a relabel's fields: a
# subquery whose own key follows as one token
_AGAIN = "again"
_LEAF = "leaf"
WHOLE_TOKEN = "whole"
_DATA = ("data",)  # a data value in the structure: its class is in the key's second part


def structural_key(node: LogicNode) -> tuple[Any, ...]:
    """Hashable key of a plan or node: equal for plans that compile to the same code (its
    structure, then its data's signatures in key order)."""
    return key_data_and_parameter_nodes(node, data_key)[0]


def key_data_and_parameter_nodes(node: LogicNode, data_key_fn: Callable[[Any], Any]
                                 ) -> tuple[tuple[Any, ...], list[Any], tuple[Immediate, ...]]:
    """``(structure, classes)``: the data-free key of ``node`` and its data's classes by
    ``data_key_fn`` in key order (a module-level function: classes are kept per node and
    function); the data values in key order, and the ``Immediate`` nodes of its
    parameters in parameter order (a plan cache maps both to slots)."""
    found = _computing_plan_key(node, data_key_fn) if FAST_PATH else None
    if found is not None:
        return found
    k = _Keyer()
    key = k.key(node)
    return (key, classes_of(k.sources, data_key_fn)), k.data, tuple(k.param_nodes)


def _computing_plan_key(plan: LogicNode, data_key_fn: Callable[[Any], Any]
                        ) -> tuple[tuple[Any, ...], list[Any], tuple[Immediate, ...]] | None:
    """``key_data_and_parameter_nodes``' answer, token for token, for the plan a compute
    builds (``api.array.materialize.build_plan``: queries of relabeled uncomputed subqueries that
    share nothing, then ``Produces`` of their aliases), without a walker; None for any
    other plan."""
    if type(plan) is not Plan:
        return None
    bodies = plan.bodies
    out: list[Any] = [Plan, len(bodies)]
    fields: dict[str, int] = {}
    aliases: dict[str, int] = {}
    seen: set[int] = set()
    many = len(bodies) > 2
    data: list[Any] = []
    classes: tuple[Any, ...] = ()
    nodes: list[Immediate] = []
    for body in bodies[:-1]:
        rhs = body.rhs if type(body) is Query else None
        if type(rhs) is not Relabel or type(rhs.arg) is not Subquery or \
                type(rhs.arg.arg) is Table:
            return None
        node = rhs.arg
        sk = node.key_cache or subquery_key(node)
        if many:  # queries sharing a subquery are walked (one query: no set of its history)
            if not seen.isdisjoint(sk.ids):
                return None
            seen.update(sk.ids)
        nums = []
        for f in rhs.idxs:
            nums.append(fields.setdefault(f.name, len(fields)))
        out += (Query, aliases.setdefault(body.lhs.name, len(aliases)), Relabel, tuple(nums),
                WHOLE_TOKEN, sk.key)
        if sk.data:
            data += sk.data
            classes += node_classes(node, data_key_fn)
        nodes += sk.param_nodes
    last = bodies[-1] if bodies else None
    if type(last) is not Produces:
        return None
    out += (Produces, len(last.args))
    for a in last.args:
        if type(a) is not Alias:
            return None
        out.append(("alias", aliases.setdefault(a.name, len(aliases))))
    return (tuple(out), classes), data, tuple(nodes)


def plan_parameters(node: LogicNode) -> tuple[Any, ...]:
    """The scalar constants abstracted by :func:`structural_key`, in parameter order."""
    k = _Keyer()
    k.key(node)
    return tuple(k.params)
