"""Computed results of uncomputed subqueries, for the plans that still read them.

When an array is computed its expression becomes a leaf ``Table`` of the result; an
expression built *before* that still holds the old ``Subquery`` and reads its value here
(``execution.substitute_memoized``) instead of running its history again.
"""

from __future__ import annotations

import threading
import weakref
from functools import partial
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lazysparse.formats import Tensor
    from lazysparse.logic.nodes import Alias, Subquery

# Results by the alias of the uncomputed subquery they are the value of, kept while that
# subquery node lives: an expression built before the compute still reads it (even after
# the computed array is gone: a natural loop rebinds its variables), and nothing holds the
# tensor once no expression can read it. Aliases are fresh per array (``setitem``
# installs a new one), so an entry never stands for another value. Keyed by the alias's
# name (a ``str`` hashes in C; an ``Alias``, equal to another by its name, in Python).
_MEMO: dict[str, Tensor] = {}

_WATCH: dict[str, weakref.ref[Subquery]] = {}


def _forget(name: str, _ref: object = None) -> None:
    """The subquery of alias ``name`` is gone: no plan can read its value any more."""
    _MEMO.pop(name, None)
    _WATCH.pop(name, None)


# How many results were memoized so far: an expression whose uncomputed history was all
# built at the current epoch holds no subquery computed since, so nothing to substitute.
# It only grows: threads memoizing side by side count under ``_LOCK`` (a lost ``+= 1`` could
# move it back, and an array built in between would miss a value memoized since).
EPOCH = 0
_LOCK = threading.Lock()


def memoized(alias: Alias) -> Tensor | None:
    """The computed value of the subquery named ``alias``, if one is kept."""
    return _MEMO.get(alias.name)


def memoize(node: Subquery, tensor: Tensor) -> None:
    """Remember ``tensor`` as the value of the uncomputed subquery ``node`` for later plans,
    while ``node`` lives."""
    global EPOCH
    name = node.lhs.name
    _MEMO[name] = tensor  # before the epoch moves: a reader of the new epoch sees it
    # a weak reference whose callback drops the entry (held in ``_WATCH`` so it fires):
    # cheaper than ``weakref.finalize``, which a compute paid per result
    _WATCH[name] = weakref.ref(node, partial(_forget, name))
    with _LOCK:
        EPOCH += 1
