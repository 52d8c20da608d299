"""Structural keys: a plan with its data abstracted, the cache key of compiled kernels.

Data (``Table`` tensors) becomes its signature (format spec, dtype, fill value, ndim; a NumPy
array is ``("dense", dtype, ndim)``); scalar constants in pointwise position become
parameters that keep their dtype kind, numbered by their order in the walk (so ``x * 3`` and
``x * 4`` share a key, and :func:`plan_parameters` lists ``(3,)`` / ``(4,)`` in parameter
order for the kernel call); aliases and fields are renumbered in order of first appearance.
Aggregate inits stay in the key by value (they decide result fill values and formats). A
subquery shared by several uses is keyed once (later uses name its alias), and a leaf
subquery's key is cached by node, so a plan built from computed arrays keys only the nodes
it adds.
"""

from __future__ import annotations

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
    Query,
    Relabel,
    Reorder,
    Subquery,
    Table,
    _scalar_key,
)
from lazysparse.logic.operators import Operator


def _is_scalar(val: Any) -> bool:
    return isinstance(val, bool | int | float | complex | np.generic)


def scalar_kind(val: Any) -> str:
    """The parameter kind of a scalar: its dtype for NumPy scalars, ``py-<type>`` for Python's
    (weakly typed)."""
    if isinstance(val, np.generic):
        return val.dtype.str
    return f"py-{type(val).__name__}"


def data_key(val: Any) -> Any:
    """The key of data in a plan: a tensor's signature, a NumPy array's dtype and ndim
    (None for anything else)."""
    sig = getattr(val, "signature", None)
    if sig is not None and hasattr(val, "levels"):
        return ("data", sig)
    if isinstance(val, np.ndarray):
        return ("data", ("dense", val.dtype.str, val.ndim))
    return None


# Keys of subqueries by node identity (and data-key function): a subquery is a closed
# term (its fields are its own; only its alias is seen outside), so its key, data and
# parameters do not depend on where it is used. A plan built from computed arrays then
# keys only the nodes it adds. Entries leave with their node. Threads share it safely: it
# is only read, set and deleted one key at a time (never iterated), and a node's callback
# runs before its id can be reused, so ``_forget`` never drops a newer node's entry.
_SUBQUERY_KEYS: dict[tuple[int, int], tuple[Any, ...]] = {}


def _forget(wr: weakref.ref[Any], key: tuple[int, int]) -> None:
    entry = _SUBQUERY_KEYS.get(key)
    if entry is not None and entry[0] is wr:
        del _SUBQUERY_KEYS[key]


# a cache entry's data is its Table's own value: read from the node on a hit, not held, so
# the cache adds no reference to the tensor (in-place writes count references to decide
# whether an array owns its storage, api/setitem.py)
_OWN_DATA = object()


def _data_ref(node: Subquery, sub: _Keyer) -> Any:
    """What a cache entry keeps of a leaf's data: ``_OWN_DATA`` when it is the leaf
    table's value, else the data values themselves."""
    if len(sub.data) == 1 and sub.data[0] is node.arg.tns.val:
        return _OWN_DATA
    return tuple(sub.data)


class _Keyer:
    """One walk of a plan: its key, data and parameters. Fields and aliases are numbered by
    name (``str`` keys hash in C; a ``Field`` hashes through its dataclass ``__hash__``)."""

    __slots__ = ("fields", "aliases", "params", "param_nodes", "data", "seen", "data_key")

    def __init__(self, data_key_fn: Callable[[Any], Any] | None = None) -> None:
        self.fields: dict[str, int] = {}
        self.aliases: dict[str, int] = {}
        self.params: list[Any] = []
        self.param_nodes: list[Immediate] = []
        self.data: list[Any] = []  # data values, in key order (a value read twice twice)
        self.seen: set[int] = set()
        self.data_key = data_key_fn or data_key

    def leaf(self, node: Subquery) -> Any:
        """The key of a leaf subquery's ``Table`` (computed arrays, inputs), from the cache
        when this node was keyed before. Other subqueries are mostly new each call: keying
        them costs less than remembering them."""
        ck = (id(node), id(self.data_key))
        entry = _SUBQUERY_KEYS.get(ck)
        if entry is None or entry[0]() is not node:
            sub = _Keyer(self.data_key)
            body = sub.key(node.arg)
            entry = (weakref.ref(node, lambda wr: _forget(wr, ck)), body, _data_ref(node, sub),
                     tuple(sub.params), tuple(sub.param_nodes))
            _SUBQUERY_KEYS[ck] = entry
        if entry[2] is _OWN_DATA:
            self.data.append(node.arg.tns.val)
        elif entry[2]:
            self.data.extend(entry[2])
        if entry[3]:
            self.params.extend(entry[3])
            self.param_nodes.extend(entry[4])
        return entry[1]

    def immediate(self, val: Any, *, as_param: bool) -> Any:
        if isinstance(val, Operator):
            return ("op", val.name, val.params)
        if _is_scalar(val):
            if as_param:
                self.params.append(val)
                return ("param", scalar_kind(val))
            return ("const", scalar_kind(val), _scalar_key(val))
        data = self.data_key(val)
        if data is not None:
            self.data.append(val)
            return data
        if hasattr(val, "level_kinds") and hasattr(val, "mode_order"):  # FormatSpec
            return ("format", val)
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
        to one plan up to renaming. An explicit stack, no recursion: this runs per call."""
        out: list[Any] = []
        emit = out.append
        stack: list[Any] = [root]
        pop, push = stack.pop, stack.append
        fields, aliases, seen = self.fields, self.aliases, self.seen
        while stack:
            node = pop()
            t = type(node)
            if t is Relabel or t is Reorder:
                emit(t)  # fields_key, inlined (the most frequent node)
                emit(tuple([fields.setdefault(f.name, len(fields)) for f in node.idxs]))
                push(node.arg)
            elif t is Subquery:
                emit(t)
                emit(aliases.setdefault(node.lhs.name, len(aliases)))  # alias_key, inlined
                if id(node) in seen:
                    # a shared subexpression is keyed once (a DAG never unfolds into a tree)
                    emit(_AGAIN)
                    continue
                seen.add(id(node))
                if type(node.arg) is Table:
                    emit(_LEAF)
                    emit(self.leaf(node))
                else:
                    push(node.arg)
            elif t is MapJoin:
                emit(t)
                op = node.op.val
                emit(("op", op.name, op.params) if type(op) is Operator else self.param(node.op))
                emit(len(node.args))
                stack.extend(reversed(node.args))
            elif t is Immediate:
                emit(self.param(node))
            elif t is Aggregate:
                emit(t)
                emit(self.immediate(node.op.val, as_param=False))
                emit(self.immediate(node.init.val, as_param=False))
                emit(self.fields_key(node.idxs))
                push(node.arg)
            elif t is Table:
                emit(t)
                emit(self.param(node.tns))
                emit(self.fields_key(node.idxs))
            elif t is Field:
                emit(("field", self.fields_key((node,))[0]))
            elif t is Alias:
                emit(("alias", self.alias_key(node)))
            elif t is Query:
                emit(t)
                emit(self.alias_key(node.lhs))
                push(node.rhs)
            else:  # Reformat, Plan, Produces and any other node: its children, counted
                children = node.children
                emit(t)
                emit(len(children))
                stack.extend(reversed(children))
        return tuple(out)

    def param(self, node: Immediate) -> Any:
        """The key of an ``Immediate`` in pointwise position (a scalar is a parameter)."""
        n = len(self.params)
        out = self.immediate(node.val, as_param=True)
        if len(self.params) > n:
            self.param_nodes.append(node)
        return out


# markers in a key's token stream after a subquery's alias: a later use of a shared
# subquery, or a leaf whose body key follows as one token
_AGAIN = "again"
_LEAF = "leaf"


def structural_key(node: LogicNode) -> tuple[Any, ...]:
    """Hashable key of a plan or node: equal for plans that compile to the same code."""
    return _Keyer().key(node)


def key_data_and_parameter_nodes(node: LogicNode, data_key: Callable[[Any], Any]
                                 ) -> tuple[tuple[Any, ...], list[Any], tuple[Immediate, ...]]:
    """:func:`structural_key` with data keyed by ``data_key`` (a module-level function:
    subquery keys are cached per function), the data values in key order, and the
    ``Immediate`` nodes of its parameters in parameter order (a plan cache maps both to
    slots)."""
    k = _Keyer(data_key)
    key = k.key(node)
    return key, k.data, tuple(k.param_nodes)


def plan_parameters(node: LogicNode) -> tuple[Any, ...]:
    """The scalar constants abstracted by :func:`structural_key`, in parameter order."""
    k = _Keyer()
    k.key(node)
    return tuple(k.params)
