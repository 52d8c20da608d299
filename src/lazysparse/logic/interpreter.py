"""Reference interpreter: runs any Finch-Logic plan densely with NumPy (the tests' oracle).

Values are dense arrays labelled by fields (axis order); ``mapjoin`` aligns its arguments by
field name and broadcasts (size-1 axes stretch), ``aggregate`` reduces named axes from
``init``, ``reorder`` permutes, drops size-1 fields and adds new size-1 ones, ``relabel``
renames positionally, ``subquery`` binds and caches. Fill values follow the registry
(``operators.mapjoin_region``, ``init``). Leaves are densified with ``Tensor.to_numpy()``
(so the formats layer's densify limit applies). A ``Field`` used as a value is its index
(int64), full like a dense array.

The interpreter follows the kernels' fill rule (docs/api.md): each value carries its
*implicit* mask (True where the entry is an unstored fill; None for dense data), and where
an implicit operand's fill annihilates an op at its position while another operand holds
data there, the result is the annihilator (``S / D`` is 0 wherever ``S`` stores nothing,
even where ``D`` is 0), as the compiled path, which never visits those entries, computes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from lazysparse.formats.conversion.numpy_arrays import stored_mask
from lazysparse.formats.dtypes import same_value
from lazysparse.formats.levels.registry import all_located
from lazysparse.formats.tensor import Tensor
from lazysparse.logic.dtypes import INDEX_DTYPE, is_python_scalar, scalar_as
from lazysparse.logic.fields import unique_fields
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
from lazysparse.logic.normal_form import epilogue_aggregate
from lazysparse.logic.operators import Operator, aggregate_dtype, mapjoin_region
from lazysparse.logic.plan_loop import run_statements


@dataclass
class Value:
    """A dense intermediate: ``data`` (ndarray, or a weak Python scalar when 0-d) whose axes
    are ``fields``, with fill value ``fill``; ``spec`` is set by a Reformat. ``implicit``
    marks the unstored (fill) entries: a bool array broadcastable to ``data`` (True for a
    scalar constant), or None when every entry is data (a dense array)."""

    data: Any
    fields: tuple[Field, ...]
    fill: Any
    spec: Any = None
    implicit: Any = None


class FieldRef:
    """A Field used as a value, materialized once its extent is known."""

    def __init__(self, field: Field) -> None:
        self.field = field


def _dense_of(tns: Any) -> tuple[np.ndarray, Any, np.ndarray | None]:
    """Dense data, fill value and implicit mask of a Table/Alias payload (Tensor or
    ndarray)."""
    if isinstance(tns, np.ndarray):
        return tns, tns.dtype.type(0), None
    if hasattr(tns, "to_numpy"):
        stored = stored_mask(tns)
        return np.asarray(tns.to_numpy()), tns.fill_value, None if stored is None else ~stored
    raise TypeError(f"table data must be a lazysparse Tensor or ndarray, got {type(tns)!r}")


class TooLarge(ValueError):
    """An evaluation bounded by ``max_elements`` met a larger dense intermediate."""


#: the longest Python-level fold of an operator NumPy cannot reduce, in a bounded evaluation
BOUNDED_FOLD = 4096


class Interpreter:
    """One dense evaluation of a plan (``engine.eager_sparse`` extends it over stored
    sparse matrices)."""

    def __init__(self, max_elements: int | None = None) -> None:
        self.max_elements = max_elements  # None: unbounded (the oracle)
        self.env: dict[Alias, Any] = {}
        self.values: dict[Alias, Value] = {}  # query results with their implicit masks
        self.sub: dict[Alias, Value] = {}
        self.sizes: dict[Field, int] = {}
        # aggregates a dense query maps (fused epilogues): evaluated without a region
        self.full_aggregates: set[int] = set()

    # -- statements ---------------------------------------------------------------------
    def run(self, node: LogicNode) -> tuple[Any, ...] | None:
        """Run a plan (or one statement) into :attr:`env` (the one plan loop,
        ``logic.plan_loop``); the values its ``Produces`` names, None without one."""
        if isinstance(node, Query | Produces):
            node = Plan((node,))
        if not isinstance(node, Plan):
            raise TypeError(f"interpret: expected a Plan, Query or Produces, got {node!r}")
        return run_statements(node, self.env, self.query)

    def query(self, q: Query, env: dict[Alias, Any]) -> Any:
        """One query's value as a tensor (its dense value, with its implicit mask, kept
        in :attr:`values`)."""
        self.sizes = {}
        v = self.epilogue_axes(q.rhs, self.eval(q.rhs))
        self.values[q.lhs] = v
        return self.to_tensor(v)

    def epilogue_axes(self, rhs: LogicNode, v: Value) -> Value:
        """A query whose body maps an aggregate (an EPILOGUE of the normal form) has the
        aggregate's result axes, in its loop order, whatever order the map's operands give."""
        body = rhs.arg if isinstance(rhs, Reformat) else rhs
        agg = epilogue_aggregate(body)
        if agg is None or not isinstance(agg.arg, Reorder):
            return v
        axes = tuple(f for f in agg.arg.idxs if f not in agg.idxs)
        if set(axes) != set(v.fields):
            return v
        r = self.reorder(v, axes)
        return Value(r.data, axes, v.fill, v.spec, r.implicit)

    def to_tensor(self, v: Value) -> Any:
        data = np.asarray(v.data)
        fill = np.asarray(v.fill).astype(data.dtype)[()]
        if v.spec is None:
            # a result with implicit entries is sparse, as the compiled path stores it
            sparse = data.ndim and v.implicit is not None and not isinstance(v.implicit, bool)
            fmt = ("csr" if data.ndim == 2 else "coo") if sparse else "dense"
            return Tensor.from_numpy(data, fmt, fill)
        if getattr(v.spec, "keeps_fills", False) and data.ndim and v.implicit is not None \
                and not isinstance(v.implicit, bool):
            # every reached entry stored, a reached fill (a sum that cancels) included: the
            # compiled kernels' ``keeps_fills`` layout, which later reads tell apart
            stored = ~np.broadcast_to(v.implicit, data.shape)
            return Tensor.from_coords(np.nonzero(stored), data[stored], data.shape,
                                      format=v.spec.layout, fill_value=fill)
        return Tensor.from_numpy(data, v.spec, fill)

    # -- expressions --------------------------------------------------------------------
    def record(self, v: Value) -> Value:
        for f, n in zip(v.fields, np.shape(v.data), strict=True):
            if n != 1 or f not in self.sizes:
                self.sizes[f] = n
        return v

    def bound(self, size: int, what: str) -> None:
        """Refuse a dense intermediate of ``size`` entries above ``max_elements``."""
        if self.max_elements is not None and size > self.max_elements:
            raise TooLarge(f"{what} of {size} dense entries exceeds {self.max_elements}")

    def eval(self, node: LogicNode) -> Value:
        match node:
            case Immediate(val=val):
                if isinstance(val, Operator) or not (is_python_scalar(val) or np.ndim(val) == 0):
                    raise ValueError(f"immediate {val!r} is not a scalar value")
                return Value(val, (), val, None, True)
            case Table(tns=Immediate(val=tns), idxs=idxs):
                self.bound(math.prod(np.shape(tns)), "a table")
                data, fill, imp = _dense_of(tns)
                return self.record(Value(data, self._check_idxs(idxs, data.ndim, "table"), fill,
                                         None, imp))
            case Alias():
                raise ValueError(f"bare {node!r} in an expression: wrap it in relabel(...)")
            case Relabel(arg=arg, idxs=idxs):
                if isinstance(arg, Alias):
                    v = self.alias_value(arg)
                else:
                    v = self.eval(arg)
                # a value computed into a layout keeping fills (a kept held value:
                # ``api.array.held_regions``) keeps it when its query returns it
                spec = v.spec if getattr(v.spec, "keeps_fills", False) else None
                return self.record(Value(v.data, self._check_idxs(idxs, np.ndim(v.data),
                                                                  "relabel"), v.fill, spec,
                                         v.implicit))
            case Reorder(arg=arg, idxs=idxs):
                return self.record(self.reorder(self.eval(arg), idxs))
            case MapJoin(op=Immediate(val=op), args=args):
                return self.record(self.mapjoin(op, args))
            case Aggregate(op=Immediate(val=op), init=Immediate(val=init), arg=arg, idxs=idxs):
                fast = self.contract(op, init, arg, idxs) if self.max_elements else None
                v = fast if fast is not None else self.aggregate(op, init, self.eval(arg), idxs)
                return self.record(self.without_region(v) if id(node) in
                                   self.full_aggregates else v)
            case Reformat(tns=Immediate(val=spec), arg=arg):
                spec = getattr(spec, "spec", spec)  # a prototype Tensor gives its spec
                self.note_dense_epilogue(spec, arg)
                v = self.eval(arg)
                dense = all_located(getattr(spec, "level_kinds", ()))
                return Value(v.data, v.fields, v.fill, spec, None if dense else v.implicit)
            case Subquery(lhs=lhs, arg=arg):
                if lhs not in self.sub:
                    v = self.eval(arg)
                    self.sub[lhs] = v
                    self.env[lhs] = self.to_tensor(v)
                return self.record(self.sub[lhs])
            case Field():
                raise ValueError(f"{node!r} used as a value outside a mapjoin")
        raise TypeError(f"interpret: not an expression node: {node!r}")

    def note_dense_epilogue(self, spec: Any, body: LogicNode) -> None:
        """Mark the aggregate a query of dense ``spec`` maps (an EPILOGUE, fused by
        ``optimizer.epilogue``) to be evaluated without an implicit region: the fusion keeps
        a dense result only over an aggregate stored dense (``sum(S, axis=0)``, dense as in
        NumPy) or one whose region decides nothing, and the kernel maps every entry, the
        init where nothing was reached (``sum(S, axis=0) * Dinf`` is NaN at an empty
        column, not an annihilated 0)."""
        if not all_located(getattr(spec, "level_kinds", ())):
            return
        while isinstance(body, Reorder):
            body = body.arg
        agg = epilogue_aggregate(body) if isinstance(body, MapJoin) else None
        if agg is not None:
            self.full_aggregates.add(id(agg))

    def without_region(self, v: Any) -> Any:
        """``v`` with no implicit entry, its fill kept (a dense-stored aggregate's value:
        ``implicit`` False, so the map's fill is still ``op(init, ...)``, the kernel's)."""
        return Value(v.data, v.fields, v.fill, v.spec, False)

    def contract(self, op: Operator, init: Any, arg: LogicNode,
                 idxs: tuple[Field, ...]) -> Value | None:
        """``sum over idxs of a * b`` by ``np.einsum``, never making the product over every
        field (a bounded evaluation's matrix products); None when ``arg`` is not such a
        product. Where the fill rule could differ from plain arithmetic (a sparse operand
        whose fill is not 0, non-finite values, a broadcast axis, a nonzero init, booleans)
        the general evaluation runs on the operands already evaluated."""
        order = None
        if isinstance(arg, Reorder):  # the loop order the optimizer chose: a permutation
            order, arg = arg.idxs, arg.arg
        if not (op.name == "add" and isinstance(arg, MapJoin) and len(arg.args) == 2
                and isinstance(arg.op, Immediate) and getattr(arg.op.val, "name", "") ==
                "multiply" and not any(isinstance(a, Field) for a in arg.args)):
            return None
        mul = arg.op.val
        va, vb = self.eval(arg.args[0]), self.eval(arg.args[1])
        fields = unique_fields([va.fields, vb.fields])
        sizes = dict(zip(va.fields, np.shape(va.data), strict=True))
        broadcast = any(sizes.setdefault(f, n) != n
                        for f, n in zip(vb.fields, np.shape(vb.data), strict=True))
        if broadcast or not _contractible(va, vb, init, idxs) or order is not None and (
                set(order) != set(fields) or len(order) != len(fields)):
            product = self.record(self.mapjoin(mul, arg.args, {0: va, 1: vb}))
            if order is not None:
                product = self.record(self.reorder(product, order))
            return self.aggregate(op, init, product, idxs)
        if order is not None:
            fields = tuple(order)
        keep = tuple(f for f in fields if f not in idxs)
        self.bound(math.prod(sizes[f] for f in keep), "a contraction's result")
        opds = mul.operand_dtypes(va.data.dtype, vb.data.dtype)
        letters = {f: chr(97 + k) for k, f in enumerate(fields)}
        spec = (f"{''.join(letters[f] for f in va.fields)},"
                f"{''.join(letters[f] for f in vb.fields)}->{''.join(letters[f] for f in keep)}")
        prod_dt = np.result_type(*opds)
        res_dt = aggregate_dtype(op, init, prod_dt)
        with np.errstate(all="ignore"):
            part = np.einsum(spec, va.data.astype(opds[0]), vb.data.astype(opds[1]))
            out = np.asarray(op.apply(np.asarray(scalar_as(init, res_dt)), part)).astype(res_dt)
        implicit = None
        if va.implicit is not None or vb.implicit is not None:
            sa = np.ones(np.shape(va.data)) if va.implicit is None else \
                (~np.broadcast_to(va.implicit, np.shape(va.data))).astype(np.float64)
            sb = np.ones(np.shape(vb.data)) if vb.implicit is None else \
                (~np.broadcast_to(vb.implicit, np.shape(vb.data))).astype(np.float64)
            implicit = np.einsum(spec, sa, sb) == 0  # no k with both entries stored
            out[implicit] = scalar_as(init, res_dt)  # what a kernel that skips them holds
        fill = scalar_as(init, res_dt)
        if not keep:
            return Value(out[()], (), fill, None, None if implicit is None else bool(implicit))
        return Value(out, keep, fill, None, implicit)

    def alias_value(self, a: Alias) -> Value:
        if a not in self.env:
            raise ValueError(f"{a!r} is used before it is defined")
        if a in self.values:
            v = self.values[a]
            imp = None if v.implicit is None else np.broadcast_to(v.implicit, np.shape(v.data))
            return Value(np.asarray(v.data), (), v.fill, None, imp)
        data, fill, imp = _dense_of(self.env[a])
        return Value(data, (), fill, None, imp)

    @staticmethod
    def _check_idxs(idxs: tuple[Field, ...], ndim: int, what: str) -> tuple[Field, ...]:
        if len(idxs) != ndim:
            raise ValueError(f"{what} gives {len(idxs)} field(s) {idxs} for {ndim}-d data")
        if len(set(idxs)) != len(idxs):
            raise ValueError(f"{what} repeats a field: {idxs}")
        return idxs

    def reorder(self, v: Value, idxs: tuple[Field, ...]) -> Value:
        if len(set(idxs)) != len(idxs):
            raise ValueError(f"reorder repeats a field: {idxs}")
        data = np.asarray(v.data) if not is_python_scalar(v.data) else v.data
        shape = np.shape(data)
        drop = [k for k, f in enumerate(v.fields) if f not in idxs]
        for k in drop:
            if shape[k] != 1:
                raise ValueError(f"reorder drops field {v.fields[k].name} of size {shape[k]} "
                                 "(only size-1 fields may be dropped)")
        if drop:
            data = np.squeeze(data, axis=tuple(drop))
        kept = tuple(f for f in v.fields if f in idxs)
        imp = v.implicit
        if imp is not None and not isinstance(imp, bool):
            imp = np.broadcast_to(imp, shape)
            if drop:
                imp = np.squeeze(imp, axis=tuple(drop))
        if not idxs:
            return Value(data, (), v.fill, None, _scalar_mask(imp))
        data = np.asarray(data)
        present = [f for f in idxs if f in kept]
        perm = [kept.index(f) for f in present]
        data = np.transpose(data, perm)
        new_shape = [data.shape[present.index(f)] if f in present else 1 for f in idxs]
        if imp is not None and not isinstance(imp, bool):
            imp = np.transpose(imp, perm).reshape(new_shape)
        return Value(data.reshape(new_shape), idxs, v.fill, None, imp)

    def mapjoin(self, op: Operator, args: tuple[LogicNode, ...],
                pre: dict[int, Value] | None = None) -> Value:
        if not isinstance(op, Operator):
            raise TypeError(f"mapjoin op must be an Operator, got {op!r}")
        # Arguments that read data go first, so sub-expressions built only from fields used
        # as values (``where(equal(j - i, k), x, 0)``) learn their fields' extents.
        order = sorted(range(len(args)), key=lambda k: not _reads_data(args[k]))
        evaluated: dict[int, Value | FieldRef] = {}
        for k in order:
            a = args[k]
            x = (pre[k] if pre and k in pre else
                 FieldRef(a) if isinstance(a, Field) else self.eval(a))
            if isinstance(x, Value):
                for f, n in zip(x.fields, np.shape(x.data), strict=True):
                    if n != 1 or f not in self.sizes:
                        self.sizes[f] = n
            evaluated[k] = x
        vals: list[Value | FieldRef] = [evaluated[k] for k in range(len(args))]
        fields = unique_fields([(x.field,) if isinstance(x, FieldRef) else x.fields
                                for x in vals])
        sizes: dict[Field, int] = {}
        for x in vals:
            if isinstance(x, Value):
                for f, n in zip(x.fields, np.shape(x.data), strict=True):
                    if f in sizes and n != sizes[f] and 1 not in (n, sizes[f]):
                        raise ValueError(f"mapjoin({op.name}): field {f.name} has sizes "
                                         f"{sizes[f]} and {n}")
                    sizes[f] = max(sizes.get(f, n), n) if n != 0 and sizes.get(f) != 0 else 0
        shape = []
        for f in fields:
            if f not in sizes:
                if f not in self.sizes:
                    raise ValueError(f"field {f.name} used as a value has no known extent")
                sizes[f] = self.sizes[f]
            shape.append(sizes[f])
        self.bound(math.prod(shape), f"mapjoin({op.name})")
        aligned, fills, masks = [], [], []
        for x in vals:
            if isinstance(x, FieldRef):
                k = fields.index(x.field)
                idx = np.arange(sizes[x.field], dtype=INDEX_DTYPE)
                aligned.append(idx.reshape([-1 if j == k else 1 for j in range(len(fields))]))
                fills.append(INDEX_DTYPE.type(0))
                masks.append(None)
            else:
                aligned.append(align(x, fields))
                fills.append(x.fill)
                masks.append(x.implicit if x.implicit is None or isinstance(x.implicit, bool)
                             else align(Value(x.implicit, x.fields, False), fields))
        out = op.apply(*aligned)
        out = np.broadcast_to(np.asarray(out), shape).copy() if fields else np.asarray(out)[()]
        fill, full = mapjoin_region(op, fills, [m is None for m in masks])
        out, implicit = fill_rule(op, aligned, fills, masks, out, fill, full, tuple(shape))
        return Value(out, fields, fill, None, implicit)

    def aggregate(self, op: Operator, init: Any, v: Value, idxs: tuple[Field, ...]) -> Value:
        if not isinstance(op, Operator):
            raise TypeError(f"aggregate op must be an Operator, got {op!r}")
        missing = [f.name for f in idxs if f not in v.fields]
        if missing:
            raise ValueError(f"aggregate reduces field(s) {missing} that its argument lacks "
                             f"(it has {[f.name for f in v.fields]})")
        data = np.asarray(v.data)
        res_dt = aggregate_dtype(op, init, data.dtype)
        keep = [k for k, f in enumerate(v.fields) if f not in idxs]
        red = [k for k, f in enumerate(v.fields) if f in idxs]
        moved = np.transpose(data, keep + red)
        out_shape = moved.shape[: len(keep)]
        n = int(np.prod(moved.shape[len(keep):], dtype=np.int64))
        flat = moved.reshape((*out_shape, n))
        acc = np.full(out_shape, scalar_as(init, res_dt), dtype=res_dt)
        ufunc = op.numpy if isinstance(op.numpy, np.ufunc) else None
        if n == 0:
            pass
        elif ufunc is not None and op.associative and op.commutative and ufunc.nin == 2:
            operand = op.operand_dtypes(res_dt, data.dtype)[1]
            with np.errstate(all="ignore"):
                part = ufunc.reduce(flat.astype(operand), axis=-1)
            acc = np.asarray(op.apply(acc, part)).astype(res_dt)
        else:
            if self.max_elements is not None and n > BOUNDED_FOLD:
                raise TooLarge(f"a fold of {op.name} over {n} entries in Python")
            for k in range(n):
                acc = np.asarray(op.apply(acc, flat[..., k])).astype(res_dt)
        fields = tuple(v.fields[k] for k in keep)
        result = acc if fields else acc[()]
        fill = scalar_as(init, res_dt)
        return Value(result, fields, fill, None,
                     _reduced_mask(op, fill, v, keep, red, data.shape))


def _contractible(va: Value, vb: Value, init: Any, idxs: tuple[Field, ...]) -> bool:
    """Whether ``sum(a * b)`` over ``idxs`` is plain arithmetic under the fill rule: both
    operands arrays of numbers, each dense or with fill 0 (which annihilates a product of
    finite values exactly as arithmetic does), every value finite, the init 0, every reduced
    field present."""
    for v in (va, vb):
        if not isinstance(v.data, np.ndarray) or v.data.ndim == 0 or \
                v.data.dtype.kind not in "iufc":
            return False
        if v.implicit is not None and not same_value(v.fill, v.data.dtype.type(0)):
            return False
        if v.data.dtype.kind in "fc" and not np.isfinite(v.data).all():
            return False
    if np.ndim(init) or isinstance(init, bool | np.bool_) or complex(init) != 0:
        return False
    return all(f in va.fields or f in vb.fields for f in idxs)


def _scalar_mask(imp: Any) -> Any:
    """A 0-d implicit mask as a Python bool (or None)."""
    return imp if imp is None or isinstance(imp, bool) else bool(np.asarray(imp))


def fill_rule(op: Operator, args: list[Any], fills: list[Any], masks: list[Any], out: Any,
               fill: Any, full: bool, shape: tuple[int, ...]) -> tuple[Any, Any]:
    """``out`` with the fill rule applied, and its implicit mask: where argument ``i`` is
    implicit, its fill annihilates the op at position ``i`` and some argument holds data,
    the value is the annihilator (implicit fills annihilate, as in scipy); the result is
    implicit where every argument is, or an annihilating or selecting argument is and the
    value there is the result's fill. None for a full result."""
    if all(m is None for m in masks):
        return out, None
    rd = np.asarray(out).dtype
    opds = op.operand_dtypes(*[a if not isinstance(a, np.ndarray) else a.dtype for a in args])
    dense_shape = shape if shape else ()
    every = np.ones(dense_shape, dtype=bool)
    all_imp = every.copy()
    for m in masks:
        all_imp &= False if m is None else m
    implicit = all_imp.copy()
    for i, m in enumerate(masks):
        if m is None or m is False:
            continue
        fi = scalar_as(fills[i], opds[i])
        z = op.annihilator_at(i, opds[i])
        # a scalar holds its value everywhere: it never annihilates data (``D * 0`` is NaN
        # where ``D`` holds inf, ``S * 0`` where ``S`` stores inf, as NumPy and the kernels)
        if z is not None and same_value(fi, z) and np.ndim(args[i]) == 0:
            continue
        if z is not None and same_value(fi, z):
            zr = scalar_as(z, rd)
            hit = np.broadcast_to(m, dense_shape) & ~all_imp
            if np.ndim(out) == 0:
                out = zr if bool(hit) else out
            else:
                out[hit] = zr
            if same_value(zr, fill):
                implicit |= np.broadcast_to(m, dense_shape)
            continue
        j = op.selected_by(i, fi)
        if j is not None and masks[j] is not None and same_value(
                scalar_as(scalar_as(fills[j], opds[j]), rd), fill):
            implicit |= np.broadcast_to(m, dense_shape) & np.broadcast_to(masks[j], dense_shape)
    if full:
        return out, None
    return out, implicit if dense_shape else bool(implicit)


def _reduced_mask(op: Operator, fill: Any, v: Value, keep: list[int], red: list[int],
                  shape: tuple[int, ...]) -> Any:
    """The implicit mask of ``aggregate(op, fill, v)``: where every reduced entry of ``v``
    is implicit and folding its fill keeps the init (``op(init, fill) == init``)."""
    if v.implicit is None:
        return None
    try:
        keeps = same_value(op.apply(fill, v.fill), fill)
    except (TypeError, ValueError):
        keeps = False
    if not keeps:
        return None
    imp = np.broadcast_to(v.implicit, shape)
    n = int(np.prod([shape[k] for k in red], dtype=np.int64))
    imp = np.all(np.transpose(imp, keep + red).reshape(
        (*[shape[k] for k in keep], n)), axis=-1) if red else np.transpose(imp, keep)
    return imp if keep else bool(imp)


def _reads_data(node: LogicNode) -> bool:
    """Whether ``node`` reads a table or alias (else it is built from fields and constants)."""
    if isinstance(node, Table | Alias):
        return True
    return any(_reads_data(c) for c in node.children)


def align(v: Value, fields: tuple[Field, ...]) -> Any:
    """``v.data`` transposed to ``fields`` order with size-1 axes for missing fields."""
    if not v.fields:
        return v.data
    data = np.asarray(v.data)
    order = sorted(range(len(v.fields)), key=lambda k: fields.index(v.fields[k]))
    data = np.transpose(data, order)
    shape = [data.shape[[v.fields[o] for o in order].index(f)] if f in v.fields else 1
             for f in fields]
    return data.reshape(shape)


def interpret(plan: LogicNode, *, max_elements: int | None = None) -> tuple[Any, ...]:
    """Run ``plan`` densely with NumPy; one ``formats.Tensor`` per alias it produces.
    With ``max_elements``, a dense table or intermediate larger than that raises
    :class:`TooLarge` before it is made (the eager tier's bound)."""
    out = Interpreter(max_elements).run(plan)
    if out is None:
        raise ValueError("plan has no produces(...) statement")
    return out


def evaluate(expr: LogicNode, env: dict[Alias, Any] | None = None) -> Value:
    """Evaluate one expression (aliases bound by ``env``) to a dense :class:`Value`."""
    it = Interpreter()
    it.env.update(env or {})
    return it.eval(expr)
