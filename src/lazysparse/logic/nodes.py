"""Finch-Logic IR nodes: immutable, structurally compared plan language (Finch paper §6.5).

Conventions (lazysparse, not Finch.jl):
- Field lists are in *axis order* (row-major, like NumPy): the first field is axis 0.
- A loop order is written outermost-first: ``Reorder(arg, (i, j))`` loops ``i`` outside ``j``.
- ``Table.tns`` is an :class:`Immediate` holding data (a ``formats.Tensor``); data compares
  by identity, scalars by type and value (NaN equals NaN), so plans hash cheaply.

Nodes are frozen dataclasses whose constructors write the instance dict directly: the
generated frozen ``__init__`` goes through ``object.__setattr__`` once per field, about
1.6x the cost, and every operation builds several nodes (issue 34).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from lazysparse.logic.printer import format_value


def _scalar_key(val: Any) -> Any:
    """Hashable identity of an immediate value: scalars by (type, value), NaN-safe; data by id."""
    if isinstance(val, bool | int | str | type(None)):
        return (type(val).__name__, val)
    if isinstance(val, float | complex) or (
        hasattr(val, "dtype") and getattr(val, "ndim", None) == 0
    ):
        try:
            c = complex(val)
        except (TypeError, ValueError):
            return ("id", id(val))
        dt = getattr(val, "dtype", None)
        # ``dtype.str`` ("<f8"): ``str(dtype)`` runs Python code on every key
        tag = type(val).__name__ if dt is None else getattr(dt, "str", None) or str(dt)
        re, im = c.real, c.imag  # no generator: keys are made per operation and compute
        return (tag, ("nan" if math.isnan(re) else re, "nan" if math.isnan(im) else im))
    if isinstance(val, tuple):
        return ("tuple", tuple(_scalar_key(v) for v in val))
    try:
        hash(val)
    except TypeError:
        return ("id", id(val))
    if hasattr(val, "__array__") or hasattr(val, "levels"):
        return ("id", id(val))
    return (type(val).__qualname__, val)


class LogicNode:
    """Base of every Finch-Logic node."""

    __slots__ = ()

    @property
    def children(self) -> tuple[LogicNode, ...]:
        """The node's child nodes, in field order."""
        return ()

    def expr_text(self) -> str:
        """One-line text of the node as an expression (``mapjoin(add, A0, A1)``)."""
        raise NotImplementedError(type(self).__name__)

    def plan_text(self) -> str:
        """Text of the node; statements one per line (``A = expr``, ``return A, B``)."""
        return self.expr_text()

    def __str__(self) -> str:
        return self.plan_text()


def _fields(idxs: tuple[Field, ...]) -> str:
    """``", i, j"`` after an argument (nothing without fields)."""
    return "".join(f", {f.name}" for f in idxs)


@dataclass(frozen=True, eq=False, repr=False, init=False)
class Immediate(LogicNode):
    """A literal: a scalar constant, an operator, or data (inside ``Table``)."""

    val: Any

    def __init__(self, val: Any) -> None:
        d = self.__dict__
        d["val"] = val

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Immediate) and _scalar_key(self.val) == _scalar_key(other.val)

    def __hash__(self) -> int:
        return hash(("Immediate", _scalar_key(self.val)))

    def __repr__(self) -> str:
        return f"Immediate({self.val!r})"

    def expr_text(self) -> str:
        return format_value(self.val)


@dataclass(frozen=True, repr=False, init=False)
class Field(LogicNode):
    """A named index (a dimension)."""

    name: str

    def __init__(self, name: str) -> None:
        d = self.__dict__
        d["name"] = name

    def __repr__(self) -> str:
        return f"Field({self.name!r})"

    def __hash__(self) -> int:  # the name's (C) hash: aliases key the live-array registry
        return hash(self.name)

    def expr_text(self) -> str:
        return self.name


@dataclass(frozen=True, repr=False, init=False)
class Alias(LogicNode):
    """A named tensor: the result of a ``Query`` or ``Subquery``."""

    name: str

    def __init__(self, name: str) -> None:
        d = self.__dict__
        d["name"] = name

    def __repr__(self) -> str:
        return f"Alias({self.name!r})"

    def __hash__(self) -> int:  # the name's (C) hash: aliases key the live-array registry
        return hash(self.name)

    def expr_text(self) -> str:
        return self.name


@dataclass(frozen=True, init=False)
class Table(LogicNode):
    """Concrete data ``tns`` (an Immediate holding a Tensor) indexed by ``idxs``."""

    tns: Immediate
    idxs: tuple[Field, ...]

    def __init__(self, tns: Immediate, idxs: tuple[Field, ...]) -> None:
        d = self.__dict__
        d["tns"] = tns
        d["idxs"] = idxs

    @property
    def children(self) -> tuple[LogicNode, ...]:
        return (self.tns, *self.idxs)

    def expr_text(self) -> str:
        return f"table({self.tns.expr_text()}{_fields(self.idxs)})"


@dataclass(frozen=True, init=False)
class MapJoin(LogicNode):
    """Pointwise ``op`` over ``args``; same-named fields join, others broadcast."""

    op: Immediate
    args: tuple[LogicNode, ...]

    def __init__(self, op: Immediate, args: tuple[LogicNode, ...]) -> None:
        d = self.__dict__
        d["op"] = op
        d["args"] = args

    @property
    def children(self) -> tuple[LogicNode, ...]:
        return (self.op, *self.args)

    def expr_text(self) -> str:
        return f"mapjoin({', '.join(a.expr_text() for a in (self.op, *self.args))})"


@dataclass(frozen=True, init=False)
class Aggregate(LogicNode):
    """Reduce ``arg`` over ``idxs`` with ``op`` starting from ``init``."""

    op: Immediate
    init: Immediate
    arg: LogicNode
    idxs: tuple[Field, ...]

    def __init__(self, op: Immediate, init: Immediate, arg: LogicNode,
                 idxs: tuple[Field, ...]) -> None:
        d = self.__dict__
        d["op"] = op
        d["init"] = init
        d["arg"] = arg
        d["idxs"] = idxs

    @property
    def children(self) -> tuple[LogicNode, ...]:
        return (self.op, self.init, self.arg, *self.idxs)

    def expr_text(self) -> str:
        return (f"aggregate({self.op.expr_text()}, {self.init.expr_text()}, "
                f"{self.arg.expr_text()}{_fields(self.idxs)})")


@dataclass(frozen=True, init=False)
class Reorder(LogicNode):
    """Permute ``arg``'s fields to ``idxs``; drops size-1 fields, adds broadcast ones."""

    arg: LogicNode
    idxs: tuple[Field, ...]

    def __init__(self, arg: LogicNode, idxs: tuple[Field, ...]) -> None:
        d = self.__dict__
        d["arg"] = arg
        d["idxs"] = idxs

    @property
    def children(self) -> tuple[LogicNode, ...]:
        return (self.arg, *self.idxs)

    def expr_text(self) -> str:
        return f"reorder({self.arg.expr_text()}{_fields(self.idxs)})"


@dataclass(frozen=True, init=False)
class Relabel(LogicNode):
    """Rename ``arg``'s fields positionally to ``idxs`` (no data movement)."""

    arg: LogicNode
    idxs: tuple[Field, ...]

    def __init__(self, arg: LogicNode, idxs: tuple[Field, ...]) -> None:
        d = self.__dict__
        d["arg"] = arg
        d["idxs"] = idxs

    @property
    def children(self) -> tuple[LogicNode, ...]:
        return (self.arg, *self.idxs)

    def expr_text(self) -> str:
        return f"relabel({self.arg.expr_text()}{_fields(self.idxs)})"


@dataclass(frozen=True, init=False)
class Reformat(LogicNode):
    """Materialize ``arg`` in the storage format described by ``tns`` (an Immediate)."""

    tns: Immediate
    arg: LogicNode

    def __init__(self, tns: Immediate, arg: LogicNode) -> None:
        d = self.__dict__
        d["tns"] = tns
        d["arg"] = arg

    @property
    def children(self) -> tuple[LogicNode, ...]:
        return (self.tns, self.arg)

    def expr_text(self) -> str:
        return f"reformat({self.tns.expr_text()}, {self.arg.expr_text()})"


@dataclass(frozen=True, init=False)
class Subquery(LogicNode):
    """Evaluate ``arg``, bind it to ``lhs``, and return it (an inline let, keeps DAG identity)."""

    lhs: Alias
    arg: LogicNode

    def __init__(self, lhs: Alias, arg: LogicNode) -> None:
        d = self.__dict__
        d["lhs"] = lhs
        d["arg"] = arg
        # this node's structural key (``structural_key.subquery_key`` sets it): derived
        # once, kept with the node, no part of its value (equality, hash, pickles and
        # copies leave it out: a key names the nodes inside by identity)
        d["key_cache"] = None

    @property
    def children(self) -> tuple[LogicNode, ...]:
        return (self.lhs, self.arg)

    def __getstate__(self) -> dict[str, Any]:
        return {"lhs": self.lhs, "arg": self.arg}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["lhs"], state["arg"])  # type: ignore[misc]

    def expr_text(self) -> str:
        return f"({self.lhs.name} = {self.arg.expr_text()})"


@dataclass(frozen=True, init=False)
class Query(LogicNode):
    """Statement: evaluate ``rhs`` and bind the result to ``lhs``."""

    lhs: Alias
    rhs: LogicNode

    def __init__(self, lhs: Alias, rhs: LogicNode) -> None:
        d = self.__dict__
        d["lhs"] = lhs
        d["rhs"] = rhs

    @property
    def children(self) -> tuple[LogicNode, ...]:
        return (self.lhs, self.rhs)

    def expr_text(self) -> str:
        return f"{self.lhs.name} = {self.rhs.expr_text()}"


@dataclass(frozen=True, init=False)
class Produces(LogicNode):
    """Statement: return ``args`` (aliases) from the plan."""

    args: tuple[LogicNode, ...]

    def __init__(self, args: tuple[LogicNode, ...]) -> None:
        d = self.__dict__
        d["args"] = args

    @property
    def children(self) -> tuple[LogicNode, ...]:
        return self.args

    def expr_text(self) -> str:
        return "return " + ", ".join(a.expr_text() for a in self.args)


@dataclass(frozen=True, init=False)
class Plan(LogicNode):
    """A sequence of statements (queries, then one ``Produces``)."""

    bodies: tuple[LogicNode, ...]

    def __init__(self, bodies: tuple[LogicNode, ...]) -> None:
        d = self.__dict__
        d["bodies"] = bodies

    @property
    def children(self) -> tuple[LogicNode, ...]:
        return self.bodies

    def expr_text(self) -> str:
        return "\n".join(b.plan_text() for b in self.bodies)


EXPRESSION_NODES = (Immediate, Field, Alias, Table, MapJoin, Aggregate, Reorder, Relabel,
                    Reformat, Subquery)
STATEMENT_NODES = (Query, Produces, Plan)
