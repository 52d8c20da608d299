"""The Finch-Logic operators, registered: :mod:`.operator_registry` (the Operator class, the
registry, fills and dtype rules) filled by :mod:`.elementwise_ops` (the Array API
functions) and :mod:`.internal_ops` (where, astype, reductions, ...). Import operators from
here: every name is looked up in the full registry.
"""

from __future__ import annotations

from lazysparse.logic.elementwise_ops import ELEMENTWISE_FUNCTIONS, ElementwiseFunction
from lazysparse.logic.internal_ops import REDUCTIONS, astype_op
from lazysparse.logic.operator_registry import (
    OPERATORS,
    CodeForm,
    DtypeValue,
    Operator,
    Selection,
    aggregate_dtype,
    aggregate_fill,
    mapjoin_fill,
    mapjoin_region,
    register,
)


def get_operator(name: str) -> Operator:
    """The registered operator called ``name`` (KeyError naming close matches otherwise)."""
    try:
        return OPERATORS[name]
    except KeyError:
        import difflib  # the error path only

        close = difflib.get_close_matches(name, OPERATORS, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise KeyError(f"no operator named {name!r}{hint}") from None


__all__ = [
    "ELEMENTWISE_FUNCTIONS", "OPERATORS", "REDUCTIONS", "CodeForm", "DtypeValue",
    "ElementwiseFunction", "Operator", "Selection", "aggregate_dtype",
    "aggregate_fill", "astype_op", "get_operator", "mapjoin_fill", "mapjoin_region",
    "register",
]
