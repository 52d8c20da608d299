"""Which fields (indices) an expression ranges over, in axis order."""

from __future__ import annotations

from lazysparse.logic.nodes import (
    Aggregate,
    Alias,
    Field,
    Immediate,
    LogicNode,
    MapJoin,
    Reformat,
    Relabel,
    Reorder,
    Subquery,
    Table,
)


def unique_fields(seqs: list[tuple[Field, ...]]) -> tuple[Field, ...]:
    """Concatenate field lists, keeping the first occurrence of each field."""
    seen: dict[Field, None] = {}
    for seq in seqs:
        for f in seq:
            seen.setdefault(f, None)
    return tuple(seen)


def getfields(node: LogicNode) -> tuple[Field, ...]:
    """The fields of an expression, in axis order (Finch's ``getfields``).

    ``MapJoin`` takes the unique concatenation of its arguments' fields, ``Aggregate`` drops
    the reduced ones, ``Reorder``/``Relabel``/``Table`` state theirs. A ``Field`` used as a
    value ranges over itself. A bare ``Alias`` has no known fields: wrap it in ``Relabel``.
    """
    match node:
        case Table(idxs=idxs) | Reorder(idxs=idxs) | Relabel(idxs=idxs):
            return idxs
        case MapJoin(args=args):
            return unique_fields([getfields(a) for a in args])
        case Aggregate(arg=arg, idxs=idxs):
            return tuple(f for f in getfields(arg) if f not in idxs)
        case Reformat(arg=arg) | Subquery(arg=arg):
            return getfields(arg)
        case Field():
            return (node,)
        case Immediate():
            return ()
        case Alias():
            raise ValueError(f"fields of bare {node!r} are unknown; wrap it in Relabel")
    raise TypeError(f"getfields: not an expression node: {node!r}")
