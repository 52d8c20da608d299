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
    Plan,
    Produces,
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
# keys only the nodes it adds. Entries leave with their node.
_SUBQUERY_KEYS: dict[tuple[int, int], tuple[Any, ...]] = {}


def _forget(wr: weakref.ref[Any], key: tuple[int, int]) -> None:
    entry = _SUBQUERY_KEYS.get(key)
    if entry is not None and entry[0] is wr:
        del _SUBQUERY_KEYS[key]


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

    def subquery(self, node: Subquery) -> Any:
        """The key of a subquery's body; a leaf's (a ``Table``: computed arrays, inputs)
        from the cache when this node was keyed before. Other subqueries are mostly new
        each call: keying them costs less than remembering them."""
        if type(node.arg) is not Table:
            return self.key(node.arg)
        ck = (id(node), id(self.data_key))
        entry = _SUBQUERY_KEYS.get(ck)
        if entry is None or entry[0]() is not node:
            sub = _Keyer(self.data_key)
            body = sub.key(node.arg)
            entry = (weakref.ref(node, lambda wr: _forget(wr, ck)), body, tuple(sub.data),
                     tuple(sub.params), tuple(sub.param_nodes))
            _SUBQUERY_KEYS[ck] = entry
        if entry[2]:
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

    def key(self, node: LogicNode) -> Any:
        """The key of ``node`` (explicit cases for the common nodes: this runs per call)."""
        t = type(node)
        if t is Relabel or t is Reorder:
            return (t.__name__, self.key(node.arg), self.fields_key(node.idxs))  # type: ignore[attr-defined]
        if t is Subquery:
            aliases = self.aliases
            alias = ("alias", aliases.setdefault(node.lhs.name, len(aliases)))  # type: ignore[attr-defined]
            if id(node) in self.seen:
                # a shared subexpression is keyed once (a DAG never unfolds into a tree)
                return ("Subquery-again", alias)
            self.seen.add(id(node))  # its alias is numbered above, for later sharing
            return ("Subquery", self.subquery(node))  # type: ignore[arg-type]
        if t is MapJoin:
            op = node.op.val  # type: ignore[attr-defined]
            return ("MapJoin", ("op", op.name, op.params) if type(op) is Operator
                    else self.key(node.op),  # type: ignore[attr-defined]
                    tuple([self.key(a) for a in node.args]))  # type: ignore[attr-defined]
        if t is Immediate:
            n = len(self.params)
            out = self.immediate(node.val, as_param=True)  # type: ignore[attr-defined]
            if len(self.params) > n:
                self.param_nodes.append(node)  # type: ignore[arg-type]
            return out
        if t is Table:
            return ("Table", self.key(node.tns), self.fields_key(node.idxs))  # type: ignore[attr-defined]
        if t is Field:
            fields = self.fields
            return ("field", fields.setdefault(node.name, len(fields)))  # type: ignore[attr-defined]
        if t is Alias:
            aliases = self.aliases
            return ("alias", aliases.setdefault(node.name, len(aliases)))  # type: ignore[attr-defined]
        if t is Aggregate:
            return ("Aggregate", self.key(node.op),  # type: ignore[attr-defined]
                    self.immediate(node.init.val, as_param=False),  # type: ignore[attr-defined]
                    self.key(node.arg), self.fields_key(node.idxs))  # type: ignore[attr-defined]
        if t is Query:
            return ("Query", self.key(node.lhs), self.key(node.rhs))  # type: ignore[attr-defined]
        if t is Plan or t is Produces:
            return (t.__name__, tuple([self.key(c) for c in node.children]))
        parts: list[Any] = [t.__name__]
        for name in node.__dataclass_fields__:  # type: ignore[attr-defined]
            v = getattr(node, name)
            if isinstance(v, tuple):
                parts.append(tuple([self.key(c) for c in v]))
            else:
                parts.append(self.key(v))
        return tuple(parts)


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
