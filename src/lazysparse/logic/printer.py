"""Readable text of any Finch-Logic node or plan (what ``str(node)`` shows): the node
classes write their own shape (``logic/nodes.py``), this module the values they hold.

``A2 = reformat(<csr>, aggregate(add, 0.0, reorder(mapjoin(multiply, relabel(A0, i, j),
relabel(A1, j, k)), i, j, k), j))``; tables show their data as
``table(<csr 100x100 float64 nnz=500>, i, j)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from lazysparse.logic.operators import Operator

if TYPE_CHECKING:
    from lazysparse.logic.nodes import LogicNode


def format_value(val: Any) -> str:
    """Short text of an Immediate's value: operator name, data summary, format, scalar."""
    if isinstance(val, Operator):
        return repr(val)
    if hasattr(val, "levels") and hasattr(val, "shape"):  # a formats.Tensor
        shape = "x".join(str(n) for n in val.shape) or "scalar"
        fv = val.fill_value
        fill = "" if _is_zero(fv) else f" fill={getattr(fv, 'item', lambda: fv)()!r}"
        unordered = "" if val.spec.ordered else " unordered"
        return f"<{val.format}{unordered} {shape} {val.dtype} nnz={val.nnz}{fill}>"
    if isinstance(val, np.ndarray):
        shape = "x".join(str(n) for n in val.shape) or "scalar"
        return f"<ndarray {shape} {val.dtype}>"
    if hasattr(val, "level_kinds") and hasattr(val, "mode_order"):  # a FormatSpec
        order = tuple(val.mode_order)
        natural = order == tuple(range(len(order)))
        name = val.name if val.ordered else f"{val.name} unordered"
        name += " keeps fills" if getattr(val, "keeps_fills", False) else ""
        return f"<{name}>" if natural or val.name in ("csr", "csc") else f"<{name} {order}>"
    return _scalar_text(val)


def _is_zero(v: Any) -> bool:
    try:
        return bool(v == 0)
    except (TypeError, ValueError):
        return False


def _scalar_text(v: Any) -> str:
    if isinstance(v, np.generic):
        return f"{v.item()!r}:{v.dtype}"
    return repr(v)


def format_plan(node: LogicNode) -> str:
    """Text of any node; statements one per line (``A = expr``, ``return A, B``). Each
    node class writes its own (``LogicNode.expr_text``, ``plan_text``)."""
    return node.plan_text()
