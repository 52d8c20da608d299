"""Every live ``LazyArray`` by the alias name of its subquery.

Plan builders and the compute step get expressions, not arrays; this registry lets them find
the array an expression is the value of (its shape, its recorded region, the held values a
compute may keep) without importing the array class: ``LazyArray`` registers itself here
when it is built or takes another array's value (``lazy_array.py``).
"""

from __future__ import annotations

import weakref
from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lazysparse.api.array.lazy_array import LazyArray

# A weak reference to each live array by its alias's name: read with ``get`` and written
# with ``[]=`` only, never iterated, so each is atomic across threads (a collected array's
# callback removes its entry while nothing iterates; ``list(BY_ALIAS.items())`` would not
# be: another thread may insert meanwhile). A plain dict of ``weakref.ref`` s, not a
# ``WeakValueDictionary``, whose ``get`` and ``[]=`` are Python code: building and
# computing one operation registers two arrays and looks arrays up a dozen times. Keyed
# by the alias's name, which hashes in C (an ``Alias`` equals another by its name alone).
BY_ALIAS: dict[str, weakref.ref[LazyArray]] = {}


def _drop(name: str, ref: weakref.ref[LazyArray]) -> None:
    """The array of ``ref`` was collected: forget its entry, unless ``name`` names another
    array now (``register`` again: ``LazyArray.replace_with``). A racing ``register`` of
    the same name on another thread may lose its entry: the array is then not found, which
    only costs a walk of its history (every reader treats a missing array so)."""
    if BY_ALIAS.get(name) is ref:
        BY_ALIAS.pop(name, None)


def register(name: str, arr: LazyArray) -> None:
    """Make ``arr`` the live array of the alias ``name`` while it lives."""
    BY_ALIAS[name] = weakref.ref(arr, partial(_drop, name))


def live_array(expr: Any) -> LazyArray | None:
    """The live array whose expression is ``expr`` (a subquery), if there is one."""
    lhs = getattr(expr, "lhs", None)
    ref = BY_ALIAS.get(lhs.name) if lhs is not None else None
    arr = ref() if ref is not None else None
    return arr if arr is not None and arr._expr is expr else None


def shape_of(expr: Any) -> tuple[int, ...] | None:
    """The shape of the live array whose expression is ``expr``, if there is one."""
    arr = live_array(expr)
    return None if arr is None else arr.shape
