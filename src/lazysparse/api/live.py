"""Every live ``LazyArray`` by the alias name of its subquery.

Plan builders and the compute step get expressions, not arrays; this registry lets them find
the array an expression is the value of (its shape, its recorded region, the held values a
compute may keep) without importing the array class: ``LazyArray`` registers itself here
when it is built or takes another array's value (``lazy_array.py``).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lazysparse.api.lazy_array import LazyArray

# read with ``get`` and written with ``[]=`` only, never iterated: each is atomic across
# threads (a collected array's callback removes its entry in one C call while nothing
# iterates; ``list(BY_ALIAS.items())`` would not be: another thread may insert meanwhile).
# Keyed by the alias's name, which hashes in C (an ``Alias`` equals another by its name
# alone, so the two keys tell the same arrays apart), not by the ``Alias`` node, whose
# ``__hash__`` is Python code: a repeated expression looks arrays up a dozen times.
BY_ALIAS: weakref.WeakValueDictionary[str, LazyArray] = weakref.WeakValueDictionary()


def live_array(expr: Any) -> LazyArray | None:
    """The live array whose expression is ``expr`` (a subquery), if there is one."""
    lhs = getattr(expr, "lhs", None)
    arr = BY_ALIAS.get(lhs.name) if lhs is not None else None
    return arr if arr is not None and arr._expr is expr else None


def shape_of(expr: Any) -> tuple[int, ...] | None:
    """The shape of the live array whose expression is ``expr``, if there is one."""
    arr = live_array(expr)
    return None if arr is None else arr.shape
