"""Plan-rewriting helpers shared by the optimizer passes (no pass logic here): accesses,
alias uses, fresh names. Generic traversal (``map_children``, ``postwalk``, ``walk``) is
``logic.traversal``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

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
)
from lazysparse.logic.traversal import postwalk, walk


def accesses(expr: LogicNode) -> list[Relabel]:
    """The ``Relabel(Alias, idxs)`` leaves of an expression, in order of appearance."""
    out: list[Relabel] = []

    def visit(n: LogicNode) -> None:
        if isinstance(n, Relabel) and isinstance(n.arg, Alias):
            out.append(n)
            return
        if isinstance(n, MapJoin):
            for a in n.args:
                visit(a)
        elif isinstance(n, Aggregate | Reorder | Relabel | Reformat | Subquery):
            visit(n.arg)

    visit(expr)
    return out


def alias_uses(plan: Plan) -> Counter[Alias]:
    """How often each alias is read: by query right-hand sides and by ``Produces``."""
    uses: Counter[Alias] = Counter()
    for body in plan.bodies:
        if isinstance(body, Query):
            for acc in accesses(body.rhs):
                uses[acc.arg] += 1  # type: ignore[index]
        elif isinstance(body, Produces):
            for a in body.args:
                if isinstance(a, Alias):
                    uses[a] += 1
    return uses


def produced(plan: Plan) -> set[Alias]:
    """Aliases named by the plan's ``Produces``."""
    out: set[Alias] = set()
    for body in plan.bodies:
        if isinstance(body, Produces):
            out.update(a for a in body.args if isinstance(a, Alias))
    return out


def substitute_access(expr: LogicNode, fn: Callable[[Relabel], LogicNode | None]) -> LogicNode:
    """Replace each ``Relabel(Alias, idxs)`` leaf by ``fn(leaf)`` (None keeps it)."""

    def rule(n: LogicNode) -> LogicNode:
        if isinstance(n, Relabel) and isinstance(n.arg, Alias):
            r = fn(n)
            return n if r is None else r
        return n

    return postwalk(expr, rule)


def expr_fields(expr: LogicNode) -> tuple[Field, ...]:
    """Every field an expression mentions (accesses, Field values, reduced), first-seen order."""
    seen: dict[Field, None] = {}
    for n in walk(expr):
        if isinstance(n, Field):
            seen.setdefault(n, None)
        elif isinstance(n, Relabel | Reorder | Table | Aggregate):
            for f in n.idxs:
                seen.setdefault(f, None)
    return tuple(seen)


class Namer:
    """Fresh alias and field names that clash with nothing already in a plan."""

    def __init__(self, plan: LogicNode, field_prefix: str = "f", alias_prefix: str = "Q") -> None:
        self.plan = plan
        self._used: set[str] | None = None
        self.counters: dict[str, int] = {}
        self.field_prefix = field_prefix
        self.alias_prefix = alias_prefix

    @property
    def used(self) -> set[str]:
        """Names taken: the plan's (walked on the first fresh name; most passes ask none)."""
        if self._used is None:
            self._used = {n.name for n in walk(self.plan) if isinstance(n, Field | Alias)}
        return self._used

    def _fresh(self, prefix: str) -> str:
        while True:
            n = self.counters.get(prefix, 0)
            self.counters[prefix] = n + 1
            name = f"{prefix}{n}"
            if name not in self.used:
                self.used.add(name)
                return name

    def field(self) -> Field:
        """A fresh field."""
        return Field(self._fresh(self.field_prefix))

    def alias(self) -> Alias:
        """A fresh alias."""
        return Alias(self._fresh(self.alias_prefix))


def is_pointwise(expr: LogicNode) -> bool:
    """True when ``expr`` has no Aggregate, Reformat, Table or Subquery (fusable as a map)."""
    for n in walk(expr):
        if isinstance(n, Aggregate | Reformat | Table | Subquery | Query):
            return False
    return True


def is_immediate_scalar(node: LogicNode) -> bool:
    """An Immediate holding a scalar value (not an operator, not data)."""
    return isinstance(node, Immediate) and not hasattr(node.val, "levels")


def subsequence(seq: tuple[Field, ...] | list[Field], of: tuple[Field, ...]) -> bool:
    """Is ``seq`` (consecutive repeats collapsed) a subsequence of ``of``?"""
    it = iter(of)
    prev = None
    for f in seq:
        if f == prev:
            continue
        prev = f
        if not any(g == f for g in it):
            return False
    return True
