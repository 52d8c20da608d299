"""Computed results of uncomputed subqueries, for the plans that still read them.

When an array is computed its expression becomes a leaf ``Table`` of the result; an
expression built *before* that still holds the old ``Subquery`` and reads its value here
(``execution.substitute_memoized``) instead of running its history again.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lazysparse.formats import Tensor
    from lazysparse.logic.nodes import Alias, Subquery

# Results by the alias of the uncomputed subquery they are the value of, kept while that
# subquery node lives: an expression built before the compute still reads it (even after
# the computed array is gone: a natural loop rebinds its variables), and nothing holds the
# tensor once no expression can read it. Aliases are fresh per array (``setitem``
# installs a new one), so an entry never stands for another value.
_MEMO: dict[Alias, Tensor] = {}

# How many results were memoized so far: an expression whose uncomputed history was all
# built at the current epoch holds no subquery computed since, so nothing to substitute.
EPOCH = 0


def memoized(alias: Alias) -> Tensor | None:
    """The computed value of the subquery named ``alias``, if one is kept."""
    return _MEMO.get(alias)


def memoize(node: Subquery, tensor: Tensor) -> None:
    """Remember ``tensor`` as the value of the uncomputed subquery ``node`` for later plans,
    while ``node`` lives."""
    global EPOCH
    _MEMO[node.lhs] = tensor
    weakref.finalize(node, _MEMO.pop, node.lhs, None)
    EPOCH += 1
