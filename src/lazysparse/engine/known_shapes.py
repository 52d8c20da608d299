"""A compute of a known shape without a plan: from the root subquery's key to its program.

``xp.compute(v + 0.5 * p)`` repeated builds two new nodes each call; everything else the
full path does (a ``Plan``, its key, the plan-cache lookup, the tier choice, the program's
binding) is a function of the root's :class:`~lazysparse.logic.structural_key.SubqueryKey`
(its hash-consed structure, data in slot order, constants in parameter order) and the
call's data classes. :func:`run_known` builds the plan-cache key of the one-array plan
``api.array.materialize.build_plan`` would make, token for token (``plan_key``'s answer,
tested), and runs the cached entry's program on the key's data and constants directly.
It answers None wherever that would not be the full path's own decision: no plain cached
entry (a miss, a shape cached by constant values, formats decided by exact counts, whose
verdicts are read per call), a shape not yet run compiled or not yet on disk, the eager
mode, another executor, or keys taken by the walk (``structural_key.FAST_PATH`` off).
"""

from __future__ import annotations

import importlib
from typing import Any

from lazysparse.engine import executors, plan_cache
from lazysparse.engine.plan_cache import (
    const_classes,
    input_key,
    known_entry,
    same_inputs,
)
from lazysparse.engine.tiers import compiled_again
from lazysparse.formats.config import get_densify_limit
from lazysparse.logic.nodes import Plan, Produces, Query, Relabel, Subquery, Table
from lazysparse.logic.structural_key import (
    WHOLE_TOKEN,
    SubqueryKey,
    node_classes,
    subquery_key,
)

# the module itself, for its ``FAST_PATH`` switch (``lazysparse.logic.structural_key`` is
# the package's function of that name)
SK = importlib.import_module("lazysparse.logic.structural_key")

# the numbered fields of a compute query's fresh fields (``build_plan``'s relabel), by ndim
_FIELD_NUMBERS = [tuple(range(n)) for n in range(33)]
_OUT = ("alias", 0)  # the produced alias's token: the query's (the root's, inside, is 1)


def known_key(node: Subquery, ndim: int) -> tuple[Any, SubqueryKey] | None:
    """The plan-cache key (``(device, plan_key(plan)[0])``, as :func:`plan_cache.lookup`
    makes it) of the plan computing uncomputed subquery ``node`` with ``ndim`` axes alone,
    from ``node``'s own key (which holds the plan's data and constants in slot order), and
    that key; None where keys are walked (``structural_key.FAST_PATH`` off)."""
    if not SK.FAST_PATH or type(node.arg) is Table:
        return None
    sk = node.key_cache or subquery_key(node)
    inputs = sk.data
    classes = node_classes(node, input_key) if inputs else ()
    # the one-query plan's structure, as ``structural_key._computing_plan_key`` makes it
    nums = _FIELD_NUMBERS[ndim] if ndim < len(_FIELD_NUMBERS) else tuple(range(ndim))
    tokens = (Plan, 2, Query, 0, Relabel, nums, WHOLE_TOKEN, sk.key, Produces, 1, _OUT)
    return ("cpu", ((tokens, classes), const_classes(sk.params), same_inputs(inputs),
                    get_densify_limit())), sk


def run_known(node: Subquery, ndim: int) -> tuple[Any, ...] | None:
    """The results of computing uncomputed subquery ``node`` (``ndim`` axes, cpu, no
    requested format, nothing memoized inside) alone, through its cached program; None
    where the full path must decide (module docstring)."""
    if executors.get_executor() is not executors.compiled_executor:
        return None
    found = known_key(node, ndim)
    if found is None:
        return None
    key, sk = found
    return run_entry(key, sk.data, sk.params)


def run_entry(key: Any, data: Any, params: tuple[Any, ...], counted: bool = False
              ) -> tuple[Any, ...] | None:
    """The results of the cached program under the full plan-cache ``key`` on ``data``
    (the plan's inputs in key order) and ``params`` (its constants in parameter order),
    as :func:`lookup` and the compiled tier would run them (with ``counted``, a shape
    whose formats exact counts decided too, found by the counts' verdicts on them, as
    :func:`lookup` finds it); None where the full path must decide: another executor, no
    cached entry, a shape cached by constant values, not yet run compiled or not yet on
    disk, the eager mode. A caller that derived the key of a plan it did not build
    (``api.array.replay``) runs it here."""
    if executors.get_executor() is not executors.compiled_executor:
        return None
    entry = known_entry(key, data if counted else None, params)
    if entry is None or not compiled_again(entry):
        return None
    plan_cache.STATS.bump("hits")
    return entry.program.rerun(data, params)
