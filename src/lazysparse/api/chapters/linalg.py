"""Array API linear algebra as lazy contractions: matmul, tensordot, vecdot,
matrix_transpose, and the lazy members of the ``linalg`` extension (outer, trace,
vector_norm, matrix_norm for 'fro'/1/inf orders, matrix_power for n >= 0).

Every contraction is one ``Aggregate(add, 0, MapJoin(multiply, a, b), contracted)``: the
operands are relabeled so that contracted axes share a field and batch axes broadcast with
fresh fields (``building.access``), so the optimizer sees the whole contraction and never
materializes the product. ``matrix_transpose`` is a relabel/reorder (no copy).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np

from lazysparse.api.array.lazy_array import LazyArray, operands_extent
from lazysparse.api.array.plan_nodes import (
    access,
    broadcast_shapes,
    fresh_field,
    fresh_fields,
    identify,
)
from lazysparse.api.building.elementwise import value_key
from lazysparse.api.building.lazy_plans import (
    astype,
    check_array,
    check_kind,
    lazy_map,
    lazy_reduce,
    normalize_axes,
    normalize_axis,
    op,
)
from lazysparse.api.chapters import dense_linalg as dense
from lazysparse.api.chapters.statistical import accumulation_dtype
from lazysparse.logic import dtypes as _dt
from lazysparse.logic.fields import getfields
from lazysparse.logic.nodes import Aggregate, Field, Immediate, LogicNode, MapJoin, Relabel, Reorder
from lazysparse.logic.operators import aggregate_fill, mapjoin_region


def contract(x1: LazyArray, f1: Sequence[Field], x2: LazyArray, f2: Sequence[Field] | None,
             reduced: Sequence[Field], out_fields: Sequence[Field],
             out_shape: tuple[int, ...], *, a1: LogicNode | None = None,
             a2: LogicNode | None = None) -> LazyArray:
    """``sum over reduced of x1[f1] * x2[f2]`` with result axes ``out_fields``.

    ``a1``/``a2`` override the plain ``Relabel(x.expr, f)`` accesses (broadcast views). The
    body is an Aggregate directly over the MapJoin; a Reorder is added only when the
    natural field order differs from ``out_fields``.
    """
    mul, add = op("multiply"), op("add")
    dtype, init, sum_fill = _sum_of_products(x1.dtype, x2.dtype)
    left = a1 if a1 is not None else Relabel(x1.expr, tuple(f1))
    right = a2 if a2 is not None else Relabel(x2.expr, tuple(f2 or ()))
    body: LogicNode = MapJoin(Immediate(mul), (left, right))
    fields = getfields(body)
    # a contracted axis of size 1 may have been dropped by both broadcast views: summing
    # over one element is the identity, so only fields the product still has are reduced
    reduced = [f for f in reduced if f in fields]
    if reduced:  # the fill is the sum's init (the product's fill is never asked)
        body = Aggregate(Immediate(add), Immediate(init), body, tuple(reduced))
        fill = sum_fill
        fields = tuple([f for f in fields if f not in reduced])  # the Aggregate's fields
    else:
        fill = mul.apply(x1.fill_value, x2.fill_value)
    if fields != tuple(out_fields):
        body = Reorder(body, tuple(out_fields))
    return LazyArray(identify(body), out_shape, dtype, fill, x1.device,
                     full=_product_full(mul, x1, x2),
                     extent=_contract_extent(x1, left, x2, right, body))


def _product_full(mul: Any, x1: LazyArray, x2: LazyArray) -> bool | None:
    """Whether a contraction has no implicit region, known at construction where both
    operands' regions are (``logic.inference``: a sum keeps its product's region, a product
    the fill rule's of its operands; their accesses are views of the arrays): a solver's
    lazy dot read by its next update asks it once, not by a walk of its history per use.
    None where an operand's fill is not known (the constructor's walk decides)."""
    f1, f2 = x1._fill_value, x2._fill_value
    if f1 is None or f2 is None:
        return None
    k1, k2 = value_key(f1), value_key(f2)
    if k1 is None or k2 is None:  # NaN or complex fills: no exact key, derived each time
        return mapjoin_region(mul, [f1, f2], [x1.full, x2.full])[1]
    key = (mul, k1, k2, x1.full, x2.full)
    known = _PRODUCT_FULL.get(key)
    if known is None:
        known = mapjoin_region(mul, [f1, f2], [key[3], key[4]])[1]
        if len(_PRODUCT_FULL) >= 1024:
            _PRODUCT_FULL.clear()
        _PRODUCT_FULL[key] = known
    return known


# ``_product_full`` by (product, exact fill keys as the elementwise facts cache makes them,
# fullness): the registry's region rule costs ~20 Python calls, and a loop builds the same
# contraction every iteration. Bounded: cleared when full.
_PRODUCT_FULL: dict[tuple[Any, ...], bool] = {}


def _access_nodes(node: LogicNode, x: LazyArray, seen: set[int]) -> int | None:
    """The plan nodes of an operand access (relabels and reorders down to ``x``'s
    expression), each field once (``seen``: the ids of those counted); None for an access
    of another form."""
    n = 0
    while type(node) is Relabel or type(node) is Reorder:
        n += 1
        for f in node.idxs:
            if id(f) not in seen:
                seen.add(id(f))
                n += 1
        node = node.arg
    return n if node is x._expr else None


def _contract_extent(x1: LazyArray, left: LogicNode, x2: LazyArray, right: LogicNode,
                     body: LogicNode) -> tuple[int, int, float] | None:
    """The history extent of a contraction, counted over the nodes ``contract`` made above
    its operands' accesses (``lazy_array.operands_extent``); None (the constructor walks)
    for an access of another form or operands on two devices (the walk raises)."""
    if x1._device != x2._device:
        return None
    seen: set[int] = set()
    a1, a2 = _access_nodes(left, x1, seen), _access_nodes(right, x2, seen)
    if a1 is None or a2 is None:
        return None
    added = a1 + a2 + 2  # the product's MapJoin and its operator
    top = body
    if type(top) is Reorder:
        added += 1 + sum(1 for f in top.idxs if id(f) not in seen)
        seen.update(id(f) for f in top.idxs)
        top = top.arg
    if type(top) is Aggregate:  # its reduced fields are the product's: counted
        added += 3 + sum(1 for f in top.idxs if id(f) not in seen)
    return operands_extent((x1, x2), added)


# per pair of operand dtypes: (the product's dtype, the sum's init, its fill), inferred
# once (issue 34: building a product infers nothing per call); the dtypes are finitely
# many, so the table stays small
_SUM_OF_PRODUCTS: dict[tuple[np.dtype, np.dtype], tuple[np.dtype, Any, Any]] = {}


def _sum_of_products(d1: np.dtype, d2: np.dtype) -> tuple[np.dtype, Any, Any]:
    """What a contraction of operands of dtypes ``d1`` and ``d2`` infers."""
    found = _SUM_OF_PRODUCTS.get((d1, d2))
    if found is None:
        mul, add = op("multiply"), op("add")
        dtype = mul.result_dtype(d1, d2)
        init = add.init_for(dtype)
        found = _SUM_OF_PRODUCTS[(d1, d2)] = (dtype, init, aggregate_fill(add, init, dtype))
    return found


def _numeric_pair(fname: str, x1: Any, x2: Any) -> tuple[LazyArray, LazyArray]:
    """The two operands of a product as lazysparse arrays. Every dtype is accepted: a bool
    operand is the number 0/1 (NumPy: ``bool @ float32`` is float32, ``bool @ bool`` is the
    bool "any of ands"); the result dtype is ``multiply``'s (``logic.dtypes``)."""
    x1 = check_array(x1, fname, "x1")
    x2 = check_array(x2, fname, "x2")
    return x1, x2


def matmul(x1: Any, x2: Any, /) -> LazyArray:
    """Matrix product with the standard's 1-D promotion and batch broadcasting rules."""
    x1, x2 = _numeric_pair("matmul", x1, x2)
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError(f"matmul: operands must have at least one dimension, got shapes "
                         f"{x1.shape} and {x2.shape}")
    kdim1 = x1.shape[-1]
    kdim2 = x2.shape[0] if x2.ndim == 1 else x2.shape[-2]
    if kdim1 != kdim2:
        raise ValueError(f"matmul: contracted dimensions differ: x1 shape {x1.shape} has "
                         f"{kdim1} columns, x2 shape {x2.shape} has {kdim2} rows")
    b1 = x1.shape[:-2] if x1.ndim > 1 else ()
    b2 = x2.shape[:-2] if x2.ndim > 1 else ()
    try:
        bshape = broadcast_shapes(b1, b2)
    except ValueError:
        raise ValueError(f"matmul: batch dimensions of shapes {x1.shape} and {x2.shape} do "
                         f"not broadcast") from None
    batch = fresh_fields(len(bshape))
    k = fresh_field()
    out_fields: list[Field] = list(batch)
    out_shape: list[int] = list(bshape)
    if x1.ndim == 1:
        a1: LogicNode = Relabel(x1.expr, (k,))
    else:
        i = fresh_field()
        a1 = access(x1.expr, x1.shape, (*batch, i, k), (*bshape, x1.shape[-2], kdim1))
        out_fields.append(i)
        out_shape.append(x1.shape[-2])
    if x2.ndim == 1:
        a2: LogicNode = Relabel(x2.expr, (k,))
    else:
        j = fresh_field()
        a2 = access(x2.expr, x2.shape, (*batch, k, j), (*bshape, kdim2, x2.shape[-1]))
        out_fields.append(j)
        out_shape.append(x2.shape[-1])
    return contract(x1, (), x2, (), (k,), out_fields, tuple(out_shape), a1=a1, a2=a2)


def _tensordot_axes(axes: Any, x1: LazyArray, x2: LazyArray) -> tuple[list[int], list[int]]:
    if isinstance(axes, int | np.integer) and not isinstance(axes, bool):
        n = operator.index(axes)
        if n < 0:
            raise ValueError(f"tensordot: axes must be non-negative, got {n}")
        if n > x1.ndim or n > x2.ndim:
            raise ValueError(f"tensordot: cannot contract {n} axes of arrays with "
                             f"{x1.ndim} and {x2.ndim} dimensions")
        return list(range(x1.ndim - n, x1.ndim)), list(range(n))
    if not isinstance(axes, tuple | list) or len(axes) != 2:
        raise TypeError("tensordot: axes must be an int or a pair of sequences of ints, "
                        f"got {axes!r}")
    ax1 = [axes[0]] if isinstance(axes[0], int | np.integer) else list(axes[0])
    ax2 = [axes[1]] if isinstance(axes[1], int | np.integer) else list(axes[1])
    if len(ax1) != len(ax2):
        raise ValueError(f"tensordot: axes sequences differ in length: {ax1} and {ax2}")
    ax1 = [normalize_axis(a, x1.ndim, "tensordot") for a in ax1]
    ax2 = [normalize_axis(a, x2.ndim, "tensordot") for a in ax2]
    if len(set(ax1)) != len(ax1) or len(set(ax2)) != len(ax2):
        raise ValueError(f"tensordot: repeated axis in {axes!r}")
    return ax1, ax2


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> LazyArray:
    """Contract ``axes`` of ``x1`` with ``axes`` of ``x2`` (an int N or a pair of sequences)."""
    x1, x2 = _numeric_pair("tensordot", x1, x2)
    ax1, ax2 = _tensordot_axes(axes, x1, x2)
    for a, b in zip(ax1, ax2, strict=True):
        if x1.shape[a] != x2.shape[b]:
            raise ValueError(f"tensordot: axis {a} of x1 (size {x1.shape[a]}) does not match "
                             f"axis {b} of x2 (size {x2.shape[b]})")
    f1 = fresh_fields(x1.ndim)
    f2 = list(fresh_fields(x2.ndim))
    for a, b in zip(ax1, ax2, strict=True):
        f2[b] = f1[a]
    free1 = [k for k in range(x1.ndim) if k not in ax1]
    free2 = [k for k in range(x2.ndim) if k not in ax2]
    out_fields = [f1[k] for k in free1] + [f2[k] for k in free2]
    out_shape = tuple(x1.shape[k] for k in free1) + tuple(x2.shape[k] for k in free2)
    return contract(x1, f1, x2, f2, [f1[a] for a in ax1], out_fields, out_shape)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> LazyArray:
    """``sum(conj(x1) * x2, axis)`` with broadcasting over the other axes (lazy)."""
    x1, x2 = _numeric_pair("vecdot", x1, x2)
    nmin = min(x1.ndim, x2.ndim)
    if nmin == 0:
        raise ValueError("vecdot: operands must have at least one dimension")
    if isinstance(axis, bool) or not isinstance(axis, int | np.integer):
        raise TypeError(f"vecdot: axis must be an int, got {type(axis).__name__}")
    if not -nmin <= axis < 0:
        raise np.exceptions.AxisError(
            f"vecdot: axis must be a negative integer in [-{nmin}, -1], got {axis}")
    if x1.shape[axis] != x2.shape[axis]:
        raise ValueError(f"vecdot: axis {axis} has size {x1.shape[axis]} in x1 and "
                         f"{x2.shape[axis]} in x2")
    try:
        shape = broadcast_shapes(x1.shape, x2.shape)
    except ValueError:
        raise ValueError(f"vecdot: shapes {x1.shape} and {x2.shape} do not broadcast") from None
    if _dt.isdtype(x1.dtype, "complex floating"):
        x1 = lazy_map(op("conj"), x1)
    fields = fresh_fields(len(shape))
    ax = len(shape) + axis
    out_fields = [f for k, f in enumerate(fields) if k != ax]
    out_shape = tuple(d for k, d in enumerate(shape) if k != ax)
    return contract(x1, (), x2, (), (fields[ax],), out_fields, out_shape,
                    a1=access(x1.expr, x1.shape, fields, shape),
                    a2=access(x2.expr, x2.shape, fields, shape))


def matrix_transpose(x: Any, /) -> LazyArray:
    """Swap the last two axes: a relabel/reorder of ``x``'s expression (no data movement)."""
    x = check_array(x, "matrix_transpose")
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: x must have at least 2 dimensions, got {x.ndim}")
    f = fresh_fields(x.ndim)
    perm = (*f[:-2], f[-1], f[-2])
    shape = (*x.shape[:-2], x.shape[-1], x.shape[-2])
    return LazyArray(identify(Reorder(Relabel(x.expr, f), perm)), shape, x.dtype,
                     x.fill_value, x.device)


def outer(x1: Any, x2: Any, /) -> LazyArray:
    """Outer product of two vectors: ``MapJoin(multiply, x1[i], x2[j])``."""
    x1, x2 = _numeric_pair("outer", x1, x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"outer: operands must be 1-D, got shapes {x1.shape} and {x2.shape}")
    i, j = fresh_fields(2)
    return contract(x1, (i,), x2, (j,), (), (i, j), (x1.shape[0], x2.shape[0]))


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> LazyArray:
    """Sum of the ``offset`` diagonal of the last two axes, lazily:
    ``sum over (i, j) of where(j - i == offset, x[..., i, j], 0)``."""
    x = check_array(x, "trace")
    check_kind(x, "numeric", "trace")
    if x.ndim < 2:
        raise ValueError(f"trace: x must have at least 2 dimensions, got {x.ndim}")
    if isinstance(offset, bool) or not isinstance(offset, int | np.integer):
        raise TypeError(f"trace: offset must be an int, got {type(offset).__name__}")
    acc = accumulation_dtype(x.dtype, dtype, "trace")
    xa = astype(x, acc)
    fields = fresh_fields(x.ndim)
    i, j = fields[-2], fields[-1]
    idx = _dt.INDEX_DTYPE
    on_diag = MapJoin(Immediate(op("equal")), (
        MapJoin(Immediate(op("subtract")), (j, i)), Immediate(idx.type(offset))))
    masked = MapJoin(Immediate(op("where")), (on_diag, Relabel(xa.expr, fields),
                                              Immediate(acc.type(0))))
    add = op("add")
    init = add.init_for(acc)
    body = Aggregate(Immediate(add), Immediate(init), masked, (i, j))
    return LazyArray(identify(body), x.shape[:-2], acc, aggregate_fill(add, init, acc),
                     x.device)


def _norm_input(x: Any, fname: str) -> LazyArray:
    x = check_array(x, fname)
    check_kind(x, "numeric", fname)
    if _dt.isdtype(x.dtype, "integral"):
        x = astype(x, _dt.DEFAULT_FLOAT)
    return x


def _abs_power_sum(x: LazyArray, axes: tuple[int, ...], keepdims: bool, p: float) -> LazyArray:
    a = lazy_map(op("abs"), x)
    rdt = a.dtype
    if p == 2:
        return lazy_map(op("sqrt"), lazy_reduce(op("add"), lazy_map(op("multiply"), a, a),
                                                axes, keepdims))
    if p == 1:
        return lazy_reduce(op("add"), a, axes, keepdims)
    if p == 0:
        nz = astype(lazy_map(op("not_equal"), a, 0), rdt)
        return lazy_reduce(op("add"), nz, axes, keepdims)
    s = lazy_reduce(op("add"), lazy_map(op("pow"), a, p), axes, keepdims)
    return lazy_map(op("pow"), s, 1.0 / p)


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False,
                ord: int | float = 2) -> LazyArray:  # noqa: A002
    """Vector p-norm over ``axis`` (all axes by default), built from lazy reductions."""
    x = _norm_input(x, "vector_norm")
    axes = normalize_axes(axis, x.ndim, "vector_norm")
    if isinstance(ord, bool) or not isinstance(ord, int | float | np.number):
        raise TypeError(f"vector_norm: ord must be a number, got {ord!r}")
    if ord in (np.inf, -np.inf):
        if any(x.shape[a] == 0 for a in axes):
            raise ValueError("vector_norm: ord=±inf of an empty reduction has no identity")
        name = "maximum" if ord > 0 else "minimum"
        return lazy_reduce(op(name), lazy_map(op("abs"), x), axes, keepdims)
    return _abs_power_sum(x, axes, keepdims, float(ord))


def matrix_norm(x: Any, /, *, keepdims: bool = False,
                ord: int | float | str = "fro") -> LazyArray:  # noqa: A002
    """Matrix norm of the last two axes: 'fro', 1, -1, inf, -inf lazily; 2, -2, 'nuc'
    from singular values (computed, see ``dense_linalg``)."""
    x = _norm_input(x, "matrix_norm")
    if x.ndim < 2:
        raise ValueError(f"matrix_norm: x must have at least 2 dimensions, got {x.ndim}")
    axes = (x.ndim - 2, x.ndim - 1)
    if ord == "fro":
        return _abs_power_sum(x, axes, keepdims, 2.0)
    if ord in (1, -1, np.inf, -np.inf) and not isinstance(ord, bool):
        summed = x.ndim - 2 if ord in (1, -1) else x.ndim - 1
        other = x.ndim - 1 if ord in (1, -1) else x.ndim - 2
        if x.shape[other] == 0:
            raise ValueError(f"matrix_norm: ord={ord} of an empty matrix has no identity")
        s = lazy_reduce(op("add"), lazy_map(op("abs"), x), (summed,), keepdims=True)
        name = "maximum" if ord > 0 else "minimum"
        r = lazy_reduce(op(name), s, (other,), keepdims=True)
        return r if keepdims else _drop_last_two(r)
    if ord in (2, -2, "nuc"):
        return dense.singular_value_norm(x, ord, keepdims)
    raise ValueError(f"matrix_norm: unsupported ord {ord!r} (use 'fro', 'nuc', ±1, ±2, ±inf)")


def _drop_last_two(x: LazyArray) -> LazyArray:
    """``x`` (last two axes of size 1) without those axes: a Reorder that drops them."""
    f = fresh_fields(x.ndim)
    return LazyArray(identify(Reorder(Relabel(x.expr, f), f[:-2])), x.shape[:-2], x.dtype,
                     x.fill_value, x.device)


def matrix_power(x: Any, n: int, /) -> LazyArray:
    """``x`` multiplied by itself ``n`` times: lazy repeated squaring of matmuls for
    ``n >= 1``; identity for ``n == 0``; the inverse's power for ``n < 0`` (computed)."""
    x = check_array(x, "matrix_power")
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"matrix_power: x must be a stack of square matrices, got {x.shape}")
    if isinstance(n, bool) or not isinstance(n, int | np.integer):
        raise TypeError(f"matrix_power: n must be an int, got {type(n).__name__}")
    n = operator.index(n)
    if n <= 0:
        if n == 0:
            return dense.identity_like(x)
        x, n = dense.inv(x), -n
    result: LazyArray | None = None
    base = x
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    assert result is not None
    return result


def _extension() -> ModuleType:
    """The ``linalg`` extension namespace (``xp.linalg``): lazy contractions from here, the
    factorizations from ``dense_linalg``."""
    ext = ModuleType("lazysparse.linalg", "The Array API linalg extension of lazysparse.")
    funcs: dict[str, Any] = {
        "matmul": matmul, "tensordot": tensordot, "vecdot": vecdot,
        "matrix_transpose": matrix_transpose, "outer": outer, "trace": trace,
        "vector_norm": vector_norm, "matrix_norm": matrix_norm, "matrix_power": matrix_power,
    }
    for name in ("cholesky", "cross", "det", "diagonal", "eig", "eigh", "eigvals",
                 "eigvalsh", "inv", "matrix_rank", "pinv", "qr", "slogdet", "solve", "svd",
                 "svdvals"):
        funcs[name] = getattr(dense, name)
    vars(ext).update(funcs)
    ext.__all__ = sorted(funcs)  # type: ignore[attr-defined]
    return ext


EXTENSION = _extension()

__all__ = ["matmul", "matrix_transpose", "tensordot", "vecdot"]
