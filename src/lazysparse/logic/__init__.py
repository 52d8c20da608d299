"""logic stage of lazysparse: Finch-Logic IR, operator registry, printer, structural keys,
normal-form checker, metadata inference and the reference interpreter (``interpret``,
imported on first use: computing never needs it)."""

import importlib
from typing import Any

from lazysparse.logic.fields import getfields
from lazysparse.logic.inference import ExprInfo, infer, infer_dtype, infer_fill, infer_shape
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
from lazysparse.logic.normal_form import NormalFormError, check_normal_form, is_normal_form
from lazysparse.logic.operators import (
    ELEMENTWISE_FUNCTIONS,
    OPERATORS,
    REDUCTIONS,
    Operator,
    astype_op,
    get_operator,
    mapjoin_fill,
)
from lazysparse.logic.printer import format_plan
from lazysparse.logic.structural_key import plan_parameters, structural_key


def __getattr__(name: str) -> Any:
    """``interpret``, from :mod:`.interpreter` on first use (PEP 562)."""
    if name == "interpret":
        return importlib.import_module("lazysparse.logic.interpreter").interpret
    raise AttributeError(f"module 'lazysparse.logic' has no attribute {name!r}")


__all__ = [
    "ELEMENTWISE_FUNCTIONS", "OPERATORS", "REDUCTIONS", "Aggregate", "Alias", "ExprInfo",
    "Field", "Immediate", "LogicNode", "MapJoin", "NormalFormError", "Operator", "Plan",
    "Produces", "Query", "Reformat", "Relabel", "Reorder", "Subquery", "Table", "astype_op",
    "check_normal_form", "format_plan", "get_operator", "getfields", "infer", "infer_dtype",
    "infer_fill", "infer_shape", "interpret", "is_normal_form", "mapjoin_fill",
    "plan_parameters", "structural_key",
]
