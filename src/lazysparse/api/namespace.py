"""The user-facing namespace: every public name of ``import lazysparse as xp``.

Collected here from the api modules (elementwise functions are generated from the operator
registry); ``lazysparse/__init__.py`` re-exports ``NAMESPACE``. The computational modules
(statistical, searching, sorting, sets, utility, linalg, fft, einsum) contribute their
``__all__``.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import numpy as np

from lazysparse.api.array import array_operators
from lazysparse.api.array.array_operators import ArrayFunctions
from lazysparse.api.array.devices import CPU, Device
from lazysparse.api.array.lazy_array import LazyArray, install_assign
from lazysparse.api.array.operands import is_operand
from lazysparse.api.building import elementwise
from lazysparse.api.chapters import (
    creation,
    data_types,
    einsum,
    fft,
    indexing,
    info,
    interop,
    linalg,
    manipulation,
    searching,
    setitem,
    sets,
    sorting,
    statistical,
    utility,
)
from lazysparse.api.chapters.compute import compute
from lazysparse.api.protocols import numpy_dispatch
from lazysparse.logic.operators import OPERATORS

DTYPES = {name: np.dtype(name) for name in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128")}

CONSTANTS = {"e": math.e, "inf": math.inf, "nan": math.nan, "pi": math.pi, "newaxis": None}

CREATION = ("arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full",
            "full_like", "linspace", "logspace", "meshgrid", "ones", "ones_like", "tril",
            "triu", "zeros", "zeros_like", "random")
MANIPULATION = ("broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip",
                "moveaxis", "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack",
                "tile", "unstack", "matrix_transpose", "transpose")
INDEXING = ("take", "take_along_axis")
DATA_TYPES = ("can_cast", "finfo", "iinfo", "isdtype", "result_type")
INTEROP = ("asformat", "to_scipy", "to_numpy", "to_cupyx")

# api-compute's modules and the sub-namespaces (extensions) they may provide
COMPUTE_MODULES = (statistical, searching, sorting, sets, utility, linalg, fft, einsum)


def _public(module: ModuleType) -> dict[str, Any]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")
                 and callable(getattr(module, n))
                 and getattr(getattr(module, n), "__module__", "") == module.__name__]
    return {n: getattr(module, n) for n in names}


def build_namespace() -> dict[str, Any]:
    """Every public name, by name."""
    ns: dict[str, Any] = {}
    ns.update(DTYPES)
    ns.update(CONSTANTS)
    ns.update({n: getattr(creation, n) for n in CREATION})
    ns.update(elementwise.FUNCTIONS)
    ns["astype"] = elementwise.astype
    ns.update({n: getattr(manipulation, n) for n in MANIPULATION})
    ns.update({n: getattr(indexing, n) for n in INDEXING})
    ns.update({n: getattr(data_types, n) for n in DATA_TYPES})
    ns.update({n: getattr(interop, n) for n in INTEROP})
    ns["__array_namespace_info__"] = info.__array_namespace_info__
    ns["compute"] = compute
    ns["LazyArray"] = LazyArray
    ns["Device"] = Device
    ns["CPU"] = CPU
    for module in COMPUTE_MODULES:
        name = module.__name__.rsplit(".", 1)[-1]
        for key, val in _public(module).items():
            if key in ("linalg", "fft") and isinstance(val, ModuleType):
                ns[key] = val
            elif key not in ns or name in ("searching",) and key == "where":
                ns[key] = val
        extension = getattr(module, "EXTENSION", None)
        if extension is not None:
            ns[name] = extension
    return ns


NAMESPACE = build_namespace()
# np.exp(x), np.sum(x, axis=0), np.concatenate(...) map to these functions
numpy_dispatch.install(NAMESPACE, OPERATORS, is_operand)
# LazyArray's operators, indexing and transposes build their results with these
array_operators.install(ArrayFunctions(
    apply_operator=elementwise.apply_operator, astype=elementwise.astype,
    is_operand=is_operand, getitem=indexing.getitem, setitem=indexing.setitem,
    permute_dims=manipulation.permute_dims, matrix_transpose=manipulation.matrix_transpose,
    matmul=linalg.matmul))
# a write into a view is repeated up its chain with this assignment (docs/api.md)
install_assign(indexing.assign, setitem.write_region)
