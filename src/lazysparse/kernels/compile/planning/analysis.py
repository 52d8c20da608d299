"""Read a normal-form query into a kernel description: operands, pointwise tree, reduction.

Everything later passes need is here and nothing else: per-operand level properties and
capabilities (never level class names), dtypes, fill values, the loop order, the reduction
and the requested output format. Scalar constants become kernel arguments (``PConst.slot``),
so their values are not part of the structure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from lazysparse.formats.config import get_densify_limit
from lazysparse.formats.dtypes import fill_key, same_value
from lazysparse.formats.levels.base import LevelCapabilities, LevelProperties
from lazysparse.formats.levels.registry import (
    DENSE_KIND,
    PLAIN_KIND,
    writes_relabeled,
    written_kind,
)
from lazysparse.formats.specs import FormatSpec
from lazysparse.formats.tensor import Tensor
from lazysparse.logic.nodes import (
    Aggregate,
    Alias,
    Field,
    Immediate,
    MapJoin,
    Query,
    Reformat,
    Relabel,
    Reorder,
)
from lazysparse.logic.normal_form import epilogue_aggregate, result_reorder
from lazysparse.logic.operators import Operator, aggregate_dtype, mapjoin_region

INDEX_DTYPE = np.dtype(np.int64)


@dataclass(frozen=True)
class LevelInfo:
    """One operand level as code generation sees it: its field, properties, capabilities."""

    field: str
    props: LevelProperties
    caps: LevelCapabilities
    kind: str = PLAIN_KIND  # how its positions are walked (``compile.lowering.level_walks``)
    # a blocked (BSR) level's block shape: constants of the kernel (unrolled inner loops)
    block: tuple[int, int] | None = None

    @property
    def located(self) -> bool:
        """Full levels that can locate are addressed ``p * size + c``, never iterated."""
        return self.props.full and self.caps.locate

    @property
    def chained(self) -> bool:
        """Branchless levels continue their parent's position range (Chou et al. §5)."""
        return self.props.branchless


def iteration_properties(t: Tensor) -> tuple[LevelProperties, ...]:
    """Each level's properties as a loop sees them. A branchless level continues a
    non-unique parent's position range, so its coordinates repeat there whenever a deeper
    level follows (COO's middle singletons: ``(i, j, k)`` sorted repeats ``j`` across ``k``):
    such a level is iterated as non-unique; the last level of the chain stays unique."""
    out: list[LevelProperties] = []
    for k, lv in enumerate(t.levels):
        props = lv.properties
        if props.branchless and k > 0 and not out[k - 1].unique and k < len(t.levels) - 1:
            props = replace(props, unique=False)
        out.append(props)
    return tuple(out)


@dataclass(frozen=True)
class OperandInfo:
    """One ``Relabel(Alias, idxs)`` access: slot number, fields per level, dtype, fill."""

    slot: int
    alias: str
    axis_fields: tuple[str, ...]
    levels: tuple[LevelInfo, ...]
    dtype: np.dtype
    fill_key: Any

    def level_of(self, fld: str) -> int | None:
        """The level storing field ``fld`` or None."""
        for k, lv in enumerate(self.levels):
            if lv.field == fld:
                return k
        return None


class PNode:
    """Base of the pointwise tree nodes."""

    __slots__ = ()


@dataclass(frozen=True)
class PAccess(PNode):
    """The value of operand ``slot`` at the current coordinates."""

    slot: int
    dtype: np.dtype


@dataclass(frozen=True)
class PConst(PNode):
    """Scalar constant number ``slot`` (a kernel argument) of ``dtype``."""

    slot: int
    dtype: np.dtype


@dataclass(frozen=True)
class PField(PNode):
    """The loop index ``name`` used as a value (int64)."""

    name: str
    dtype: np.dtype = INDEX_DTYPE


@dataclass(frozen=True)
class PResult(PNode):
    """An epilogue's input: the reduction's value at one result entry (``acc_dtype``)."""

    dtype: np.dtype


@dataclass(frozen=True)
class PApply(PNode):
    """``op(args)`` with arguments cast to ``operand_dtypes``; result of ``dtype``.

    What each argument's *fill-time value* (where every sparse operand holds its fill,
    with this call's constants) does to the op: ``annihilates`` lists the arguments that
    are then the op's annihilator (``x * (A != 0)``), ``selects`` holds ``(i, j)`` when
    argument ``i`` makes the op return argument ``j`` (``where``'s condition; the registry's
    ``Operator.selections``), ``uniform`` is True when the op returns one of its arguments
    and every argument it may return has the same fill-time value (``where(c, A * B, 0)``
    is 0 where ``A`` is absent, whatever ``c``), ``absent_annihilated`` is False when an
    op with annihilating arguments is not its annihilator where no operand stores anything
    (``S0 * (Snan * 0.5)`` is ``0 * NaN`` there: a loop may not skip where ``S0`` is
    absent). All are structure: a constant decides them (``where(A != 0, ...)`` and
    ``where(A != 5, ...)`` iterate differently)."""

    op: Operator
    args: tuple[PNode, ...]
    operand_dtypes: tuple[np.dtype, ...]
    dtype: np.dtype
    annihilates: tuple[int, ...] = ()
    selects: tuple[tuple[int, int], ...] = ()
    uniform: bool = False
    absent_annihilated: bool = True


def walk_pointwise(node: PNode) -> list[PNode]:
    """Every node of a pointwise tree, root first."""
    out = [node]
    if isinstance(node, PApply):
        for a in node.args:
            out += walk_pointwise(a)
    return out


@dataclass(frozen=True)
class KernelInfo:
    """A normal-form query, reduced to what lowering needs (hashable: the kernel's structure)."""

    loop_order: tuple[str, ...]
    operands: tuple[OperandInfo, ...]
    expr: PNode
    reduce_op: Operator | None
    reduced: tuple[str, ...]
    out_fields: tuple[str, ...]  # result axes, axis order (= loop order minus reduced)
    out_spec: FormatSpec
    out_dtype: np.dtype
    acc_dtype: np.dtype
    fill_keys: tuple[Any, ...]  # fill value keys of the operands (also in operands)
    const_dtypes: tuple[np.dtype, ...]
    # the expression's fill-time value (``fill_time_value``, this call's constants) is the
    # reduction's identity: coordinates whose outside value needs a constant may be skipped
    # (``sum(where(M, x, 0.0))`` with a sparse output)
    fill_identity: bool = False
    # every reduced field has extent 1 in this call (the size-1 axes a broadcast dropped,
    # reduced with ``overwrite``): each result entry receives one value, ``op(init, v)``,
    # so a coordinate where that is ``init`` may be skipped whatever the op's identity
    unit_reduced: bool = False
    # loop fields too long in this call for a dense row workspace within the densify limit
    # or next to the operands' stored values (``wide_fields``): writes that scatter along
    # one of them sort instead
    wide: tuple[str, ...] = ()
    # a map of the reduction's value (``PResult``) applied once per result entry; its
    # operands are dense accesses by result fields, scalars and fields (out_dtype's source)
    epilogue: PNode | None = None
    # the requested layout when the kernel writes another (``written_spec``: hashed and
    # bytemap levels are written as compressed ones and relabeled by the host)
    stored_spec: FormatSpec | None = None

    @property
    def out_storage_fields(self) -> tuple[str, ...]:
        """Result fields in the output's storage (level) order."""
        return tuple(self.out_fields[m] for m in self.out_spec.mode_order)


@dataclass(frozen=True, init=False)
class QueryData:
    """The runtime side of a query: operand tensors, constants, init, result shape."""

    tensors: tuple[Any, ...]
    consts: tuple[Any, ...]
    init: Any
    extents: dict[str, int]
    out_shape: tuple[int, ...]
    out_fill: Any

    def __init__(self, tensors: tuple[Any, ...], consts: tuple[Any, ...], init: Any,
                 extents: dict[str, int], out_shape: tuple[int, ...], out_fill: Any) -> None:
        # the instance dict written directly: one is made per kernel call, and the frozen
        # dataclass's ``__init__`` pays ``object.__setattr__`` per field (as logic.nodes)
        d = self.__dict__
        d["tensors"] = tensors
        d["consts"] = consts
        d["init"] = init
        d["extents"] = extents
        d["out_shape"] = out_shape
        d["out_fill"] = out_fill


# the fill key of an operand whose every level is located (dense): its fill is unused
DENSE_FILL = (DENSE_KIND,)


def _unwrap_query(query: Query) -> tuple[FormatSpec, Any]:
    if not isinstance(query, Query):
        raise TypeError(f"compile_query expects a Query, got {type(query).__name__}")
    rhs = query.rhs
    if not (isinstance(rhs, Reformat) and isinstance(rhs.tns, Immediate)
            and isinstance(rhs.tns.val, FormatSpec)):
        raise ValueError(
            "not a normal-form compute query: expected Query(alias, Reformat("
            f"Immediate(FormatSpec), ...)), got rhs {type(rhs).__name__}")
    return rhs.tns.val, rhs.arg


def written_spec(spec: FormatSpec) -> FormatSpec:
    """The layout a kernel writes for the requested ``spec``: a hashed level is appended as
    a compressed one (unordered when it is the last level: a row workspace drains it
    unsorted), a bytemap as a compressed one; the host then builds the table or mask
    (``formats.layouts.relabel_layout``). Other specs are written as they are."""
    kinds = spec.level_kinds
    if not writes_relabeled(kinds):
        return spec
    last = len(kinds) - 1
    out = tuple(written_kind(k, m == last) for m, k in enumerate(kinds))
    return FormatSpec(spec.name, out, spec.mode_order, spec.keeps_fills)


@dataclass(frozen=True)
class _Shape:
    """A normal-form body taken apart: the pointwise body, an epilogue around the
    reduction (or None), the reduction, the loop order and the result axes."""

    body: Any  # the pointwise expression (``Reorder``'s argument)
    epilogue: Any  # the ``MapJoin`` mapping the reduced value, or None
    reduce_op: Operator | None
    init: Any
    reduced: tuple[str, ...]
    loop_order: tuple[str, ...]
    out_fields: tuple[str, ...]


def _reduction(body: Any) -> tuple[Operator | None, Any, tuple[str, ...], Any]:
    """``(op, init, reduced fields, argument)`` of an ``Aggregate`` body, else no reduction."""
    if not isinstance(body, Aggregate):
        return None, None, (), body
    if not (isinstance(body.op, Immediate) and isinstance(body.op.val, Operator)):
        raise TypeError(f"Aggregate.op must be Immediate(Operator), got {body.op!r}")
    reduce_op, init = body.op.val, body.init.val
    if reduce_op.nargs != 2:
        raise ValueError(f"reduction operator {reduce_op.name} is not binary")
    return reduce_op, init, tuple(f.name for f in body.idxs), body.arg


def _result_fields(loop_order: tuple[str, ...], reduced: tuple[str, ...], axes: Any,
                   spec: FormatSpec) -> tuple[str, ...]:
    """The result's axes: the loop order less the reduced fields, or a RESULT reorder's."""
    for r in reduced:
        if r not in loop_order:
            raise ValueError(f"reduced field {r!r} is not in the loop order {loop_order}")
    out_fields = tuple(f for f in loop_order if f not in reduced)
    if axes is not None:  # a RESULT reorder: the result's axes in another order
        if sorted(f.name for f in axes) != sorted(out_fields):
            raise ValueError(f"result axes {tuple(f.name for f in axes)} are not a "
                             f"permutation of the loop's {out_fields}")
        out_fields = tuple(f.name for f in axes)
    if spec.ndim != len(out_fields):
        raise ValueError(f"output format {spec} has {spec.ndim} levels but the query has "
                         f"{len(out_fields)} result axes {out_fields}")
    return out_fields


def _shape(spec: FormatSpec, body: Any) -> _Shape:
    """Take a normal-form body apart (see :class:`_Shape`), checking its form."""
    body, axes = result_reorder(body)
    epi_body: Any = None
    if isinstance(body, MapJoin) and epilogue_aggregate(body) is not None:
        epi_body, body = body, epilogue_aggregate(body)
    reduce_op, init, reduced, body = _reduction(body)
    if not isinstance(body, Reorder):
        raise ValueError(f"normal form needs Reorder(pointwise, loop_order), got {body!r}")
    loop_order = tuple(f.name for f in body.idxs)
    if len(set(loop_order)) != len(loop_order):
        raise ValueError(f"loop order {loop_order} repeats a field")
    out_fields = _result_fields(loop_order, reduced, axes, spec)
    return _Shape(body.arg, epi_body, reduce_op, init, reduced, loop_order, out_fields)


def _operand_levels(t: Tensor, names: tuple[str, ...]) -> tuple[LevelInfo, ...]:
    """Each level of operand ``t`` (relabelled with ``names``) as code generation sees it."""
    return tuple(
        LevelInfo(names[t.mode_order[k]], props, lv.capabilities, lv.kind,
                  getattr(lv, "block", None))
        for k, (lv, props) in enumerate(zip(t.levels, iteration_properties(t), strict=True)))


class _Reader:
    """Reads a pointwise tree into :class:`PNode` s, collecting the operands (one slot per
    distinct access), their tensors, the scalar constants and every field's extent."""

    def __init__(self, env: dict[Alias, Any], loop_order: tuple[str, ...]) -> None:
        self.env = env
        self.loop_order = loop_order
        self.operands: list[OperandInfo] = []
        self.tensors: list[Any] = []
        self.consts: list[Any] = []
        self.const_dtypes: list[np.dtype] = []
        self.extents: dict[str, int] = {}
        self.seen: dict[tuple[Alias, tuple[Field, ...]], PAccess] = {}
        self.result: PResult | None = None  # what an epilogue's Aggregate reads

    def note_extent(self, fld: str, n: int, what: str) -> None:
        """Record field ``fld``'s extent ``n`` (from ``what``); all must agree."""
        if self.extents.setdefault(fld, n) != n:
            raise ValueError(f"field {fld!r} has extent {self.extents[fld]} but {what} "
                             f"gives {n}")

    def walk(self, node: Any) -> PNode:
        """The pointwise tree of ``node``."""
        match node:
            case Relabel(arg=Alias() as alias, idxs=idxs) if (alias, idxs) in self.seen:
                # the same access read twice (``where(S != 0, x, 0) * S``) is one operand:
                # one driver instead of a merge of a level with itself
                return self.seen[(alias, idxs)]
            case Relabel(arg=Alias() as alias, idxs=idxs):
                return self.access(alias, idxs)
            case Immediate(val=val):
                return self.constant(val)
            case Field(name=name):
                if name not in self.loop_order:
                    raise ValueError(f"field {name!r} used as a value is not in the loop order")
                return PField(name)
            case Aggregate() if self.result is not None:
                return self.result
            case MapJoin(op=Immediate(val=Operator() as op), args=args):
                return self.apply(node, op, args)
        raise ValueError(f"not a normal-form pointwise expression: {node!r}")

    def _tensor(self, alias: Alias, idxs: tuple[Field, ...]) -> tuple[Any, tuple[str, ...]]:
        """The tensor bound to ``alias`` and its access's field names, checked."""
        if alias not in self.env:
            raise ValueError(f"alias {alias.name!r} is not bound in the environment")
        t = self.env[alias]
        if not (hasattr(t, "levels") and hasattr(t, "mode_order")):
            raise TypeError(f"alias {alias.name!r} is bound to a "
                            f"{type(t).__name__}, expected a lazysparse Tensor")
        names = tuple(f.name for f in idxs)
        if len(names) != t.ndim:
            raise ValueError(f"{alias.name} has ndim {t.ndim}, relabelled with {names}")
        for ax, fld in enumerate(names):
            if fld not in self.loop_order:
                raise ValueError(f"field {fld!r} of {alias.name} is not in the loop "
                                 f"order {self.loop_order}")
            self.note_extent(fld, t.shape[ax], f"axis {ax} of {alias.name}")
        return t, names

    def access(self, alias: Alias, idxs: tuple[Field, ...]) -> PAccess:
        """A new operand: ``alias`` read at ``idxs``."""
        t, names = self._tensor(alias, idxs)
        lvls = _operand_levels(t, names)
        pos = [self.loop_order.index(lv.field) for lv in lvls]
        if pos != sorted(pos):
            raise ValueError(
                f"access {alias.name}{names} is not concordant: its storage order "
                f"{tuple(lv.field for lv in lvls)} is not a subsequence of the loop "
                f"order {self.loop_order}")
        slot = len(self.operands)
        # a fully dense operand's fill value is never read by a kernel: leaving it out of
        # the structure lets dense iterates whose fill drifts with constants
        # (``r + beta * p``) share one kernel
        fkey = DENSE_FILL if all(lv.located for lv in lvls) else fill_key(t.fill_value)
        self.operands.append(OperandInfo(slot, alias.name, names, lvls, np.dtype(t.dtype),
                                         fkey))
        self.tensors.append(t)
        self.seen[(alias, idxs)] = PAccess(slot, np.dtype(t.dtype))
        return self.seen[(alias, idxs)]

    def constant(self, val: Any) -> PConst:
        """A scalar constant: the next kernel argument."""
        if isinstance(val, Operator):
            raise ValueError("an operator Immediate cannot be a pointwise value")
        arr = np.asarray(val)
        if arr.ndim != 0 or arr.dtype.kind not in "biufc":
            raise TypeError(f"pointwise Immediate must be a numeric scalar, got {val!r}")
        self.consts.append(val)
        self.const_dtypes.append(arr.dtype)
        return PConst(len(self.consts) - 1, arr.dtype)

    def apply(self, node: MapJoin, op: Operator, args: tuple[Any, ...]) -> PNode:
        """``op`` of its arguments' trees, with its fill-time algebra."""
        if op.nargs == 2 and len(args) > 2 and op.associative:
            # n-ary mapjoin of an associative binary op: fold left
            return self.walk(MapJoin(node.op, (MapJoin(node.op, tuple(args[:-1])), args[-1])))
        kids = tuple(self.walk(a) for a in args)
        dts = tuple(_value_dtype(k, self.consts) for k in kids)
        opds = tuple(np.dtype(d) for d in op.operand_dtypes(*dts))
        ann, sel = _fill_algebra(op, kids, opds, self.tensors, self.consts)
        rdt = np.dtype(op.result_dtype(*dts))
        return PApply(op, kids, opds, rdt, ann, sel,
                      _uniform_selection(op, kids, opds, self.tensors, self.consts),
                      _absent_annihilated(op, kids, opds, rdt, ann, self.tensors, self.consts))


def analyze_query(query: Query, env: dict[Alias, Any]) -> tuple[KernelInfo, QueryData]:
    """Split a normal-form compute query into its structure and its runtime data."""
    spec, body = _unwrap_query(query)
    shape = _shape(spec, body)
    rd = _Reader(env, shape.loop_order)
    expr = rd.walk(shape.body)
    for fld in shape.loop_order:
        # a loop field no access indexes (an axis added by expand_dims/keepdims) has
        # extent 1 (docs/architecture.md, normal form); which fields these are is part of
        # the structure (operands' axis fields), so the cache key already tells them apart
        rd.extents.setdefault(fld, 1)
    val_dtype = np.dtype(expr.dtype)  # type: ignore[attr-defined]
    if shape.reduce_op is not None:
        acc_dtype = np.dtype(aggregate_dtype(shape.reduce_op, shape.init, val_dtype))
        out_fill = np.asarray(shape.init).astype(acc_dtype)[()]
    else:
        acc_dtype = val_dtype
        out_fill = eval_fill(expr, rd.tensors, rd.consts)
    epilogue, out_dtype, out_fill = _epilogue(rd, shape, acc_dtype, out_fill)
    extents = rd.extents
    info = KernelInfo(
        loop_order=shape.loop_order, operands=tuple(rd.operands), expr=expr,
        reduce_op=shape.reduce_op, reduced=shape.reduced, out_fields=shape.out_fields,
        out_spec=written_spec(spec), stored_spec=None if written_spec(spec) == spec else spec,
        out_dtype=out_dtype, acc_dtype=acc_dtype,
        fill_keys=tuple(o.fill_key for o in rd.operands),
        const_dtypes=tuple(rd.const_dtypes), epilogue=epilogue,
        fill_identity=_fill_identity(expr, shape.reduce_op, acc_dtype, rd.tensors, rd.consts,
                                     _unit_init(shape, extents)),
        unit_reduced=bool(shape.reduced) and all(extents[f] == 1 for f in shape.reduced),
        wide=wide_fields(extents, shape.loop_order, acc_dtype,
                         sum(int(t.values.shape[0]) for t in rd.tensors)))
    data = QueryData(tuple(rd.tensors), tuple(rd.consts), shape.init, extents,
                     tuple(extents[f] for f in shape.out_fields), out_fill)
    return info, data


def _epilogue(rd: _Reader, shape: _Shape, acc_dtype: np.dtype, out_fill: Any
              ) -> tuple[PNode | None, np.dtype, Any]:
    """The epilogue's tree (its operands join ``rd`` after the body's), the result dtype
    and the result fill; without an epilogue, the accumulator's."""
    if shape.epilogue is None:
        return None, acc_dtype, out_fill
    n_body = len(rd.operands)
    rd.result = PResult(acc_dtype)
    epilogue = rd.walk(shape.epilogue)
    if any(not lv.located for op in rd.operands[n_body:] for lv in op.levels):
        raise ValueError("an epilogue's operands must be stored dense (the kernel locates "
                         "them by result coordinates)")
    out_dtype = np.dtype(epilogue.dtype)  # type: ignore[attr-defined]
    return epilogue, out_dtype, eval_fill(epilogue, rd.tensors, rd.consts, out_fill)


# a dense row workspace up to this many bytes is kept whatever the data (it is cheap next
# to compiling and sorting); past it, only while the operands store at least one value
# per WORKSPACE_RATIO coordinates of the scattered field
WORKSPACE_MIN_BYTES = 64 << 20
WORKSPACE_RATIO = 64


def wide_fields(extents: dict[str, int], loop_order: tuple[str, ...],
                acc_dtype: np.dtype, stored: int) -> tuple[str, ...]:
    """Loop fields whose dense row workspace (a mark, a list entry and a value per
    coordinate) would pass the densify limit, or be large and far longer than the
    ``stored`` values of the operands: ``sum(A, axis=0)`` of a 1e9 x 1e9 matrix with 3
    entries must not allocate 17 GB of workspace for a 2-entry result, nor 1.7 GB at 1e8."""
    limit = get_densify_limit()
    per = 1 + 8 + acc_dtype.itemsize

    def wide(n: int) -> bool:
        if limit is not None and n * per > limit:
            return True
        return n * per > WORKSPACE_MIN_BYTES and n > WORKSPACE_RATIO * stored

    return tuple(f for f in loop_order if wide(extents[f]))


def _value_dtype(node: PNode, consts: list[Any]) -> Any:
    """The dtype used for promotion: Python scalar constants stay weak."""
    if isinstance(node, PConst):
        v = consts[node.slot]
        return v if isinstance(v, bool | int | float | complex) else node.dtype
    return node.dtype  # type: ignore[attr-defined]


def _fill_algebra(op: Operator, kids: tuple[PNode, ...], opds: tuple[np.dtype, ...],
                  tensors: list[Any], consts: list[Any]
                  ) -> tuple[tuple[int, ...], tuple[tuple[int, int], ...]]:
    """The arguments whose fill-time value annihilates the op, and ``(i, j)`` for each
    argument ``i`` whose fill-time value selects argument ``j`` (see :class:`PApply`)."""
    if op.nargs < 2 or (not op.selections and op.annihilator is None):
        return (), ()
    ann: list[int] = []
    sel: list[tuple[int, int]] = []
    for i, (kid, od) in enumerate(zip(kids, opds, strict=True)):
        if not isinstance(kid, PAccess | PApply):
            continue
        v = fill_time_value(kid, tensors, consts)
        if v is None:  # needs a value that is neither a fill nor a constant
            continue
        v = np.asarray(v).astype(od)[()]
        z = op.annihilator_at(i, od)
        if z is not None and same_value(v, z):
            ann.append(i)
        j = op.selected_by(i, v)
        if j is not None:
            sel.append((i, j))
    return tuple(ann), tuple(sel)


def _absent_annihilated(op: Operator, kids: tuple[PNode, ...], opds: tuple[np.dtype, ...],
                        dtype: np.dtype, ann: tuple[int, ...], tensors: list[Any],
                        consts: list[Any]) -> bool:
    """Whether the op its arguments ``ann`` annihilate is that annihilator also where no
    operand stores anything (their fill-time values, this call's constants; a dense operand
    holds data, so the annihilator wins): ``S0 * (Snan * 0.5)`` is ``0 * NaN = NaN`` there,
    so co-iteration may not skip where ``S0`` is absent (``coiterate._annihilates_below``
    reads this when the value needs the constants)."""
    if not ann:
        return True
    vals = [fill_time_value(k, tensors, consts) for k in kids]
    if any(v is None for v in vals):
        return True
    return same_in(apply_to_values(op, vals, opds), op.annihilator_at(ann[0], opds[ann[0]]),
                   dtype)


def apply_to_values(op: Operator, vals: Sequence[Any], opds: Sequence[np.dtype]) -> Any:
    """``op`` of scalar values, each cast to its operand dtype first, with IEEE's results
    and no warnings (``0 * inf`` is NaN): the fill algebra's one evaluation."""
    with np.errstate(all="ignore"):
        return op.apply(*(np.asarray(x).astype(od)[()]  # type: ignore[attr-defined]
                          for x, od in zip(vals, opds, strict=True)))


def same_in(a: Any, b: Any, dtype: np.dtype) -> bool:
    """Whether ``a`` and ``b`` are the same value once cast to ``dtype`` (``same_value``)."""
    return bool(same_value(np.asarray(a).astype(dtype)[()], np.asarray(b).astype(dtype)[()]))


def _uniform_selection(op: Operator, kids: tuple[PNode, ...], opds: tuple[np.dtype, ...],
                       tensors: list[Any], consts: list[Any]) -> bool:
    """Whether ``op`` returns one of its arguments and all it may return have one fill-time
    value (see :class:`PApply`)."""
    if not op.selections or not op.selects_only_arguments:
        return False
    vals = []
    for r in sorted({s.result for s in op.selections}):
        v = fill_time_value(kids[r], tensors, consts)
        if v is None:
            return False
        vals.append(np.asarray(v).astype(opds[r])[()])
    return all(same_value(v, vals[0]) for v in vals[1:])


def const_decided(info: KernelInfo) -> bool:
    """Whether the decisions analysis took from this call's fills and constants
    (``PApply.annihilates``/``selects``, ``fill_identity``) depend on the constants' values,
    so a kernel reused with other constants must check them (:func:`decisions_hold`): only
    with a sparse operand (co-iteration never reads them otherwise) and a constant inside a
    decided argument (``where(A != 0, ...)``) or the reduced expression."""
    if not info.const_dtypes or all(lv.located for op in info.operands for lv in op.levels):
        return False
    return _const_in_decisions(info.expr) or (info.reduce_op is not None
                                              and _has_const(info.expr))


def decisions_hold(info: KernelInfo, tensors: Any, consts: Any, init: Any = None) -> bool:
    """Whether ``info``'s fill-time decisions are the same for these tensors, constants and
    reduction init."""
    def same(node: PNode) -> bool:
        if not isinstance(node, PApply):
            return True
        return (all(same(a) for a in node.args) and _fill_algebra(
            node.op, node.args, node.operand_dtypes, tensors, consts) == (node.annihilates,
                                                                           node.selects)
            and _uniform_selection(node.op, node.args, node.operand_dtypes, tensors,
                                   consts) == node.uniform
            and _absent_annihilated(node.op, node.args, node.operand_dtypes, node.dtype,
                                    node.annihilates, tensors, consts)
            == node.absent_annihilated)

    unit = init if info.unit_reduced else None
    return same(info.expr) and info.fill_identity == _fill_identity(
        info.expr, info.reduce_op, info.acc_dtype, tensors, consts, unit)


def _has_const(node: PNode) -> bool:
    if isinstance(node, PApply):
        return any(_has_const(a) for a in node.args)
    return isinstance(node, PConst)


def _const_in_decisions(node: PNode) -> bool:
    if not isinstance(node, PApply):
        return False
    decided = node.op.nargs >= 2 and bool(node.op.selections or node.op.annihilator)
    return (any(_const_in_decisions(a) for a in node.args)
            or decided and any(_has_const(a) if isinstance(a, PApply) else
                               isinstance(a, PConst) and bool(node.op.selections)
                               for a in node.args))


def _fill_identity(expr: PNode, rop: Operator | None, acc_dtype: np.dtype,
                   tensors: list[Any], consts: list[Any], unit_init: Any = None) -> bool:
    """Whether the reduced expression's fill-time value is the reduction's identity, or,
    given ``unit_init`` (the init, when every reduced field has extent 1: each entry
    receives ``op(init, v)`` once, then any epilogue, whose value at the init is the result
    fill), leaves it unchanged: the sum over a size-1 axis, ``overwrite(0.0, 0.0 + A)``,
    skips A's unstored coordinates."""
    if rop is None:
        return False
    v = fill_time_value(expr, tensors, consts)
    if v is None:
        return False
    ident = rop.identity_for(acc_dtype)
    if ident is not None and same_value(np.asarray(v).astype(acc_dtype)[()], ident):
        return True
    if unit_init is None:
        return False
    init = np.asarray(unit_init).astype(acc_dtype)[()]
    with np.errstate(all="ignore"):
        got = np.asarray(rop.apply(init, v)).astype(acc_dtype)[()]
    return same_value(got, init)


def _unit_init(shape: _Shape, extents: dict[str, int]) -> Any:
    """The init when each result entry receives one value (every reduced field of extent
    1), else None (``_fill_identity``)."""
    if shape.reduce_op is None or not shape.reduced:
        return None
    return shape.init if all(extents[f] == 1 for f in shape.reduced) else None


def has_implicit(t: Any) -> bool:
    """Whether tensor ``t`` has an implicit region (``Tensor.full`` is False): a dense or
    0-d tensor stores every entry, so its nominal fill value never decides anything."""
    return not getattr(t, "full", True)


def fill_time_value(node: PNode, tensors: Any, consts: Any) -> Any:
    """The value of ``node`` where every sparse operand holds its fill, as co-iteration
    sees it (``coiterate.region_of``): an annihilated op is its annihilator ``z``
    (``op(z, x) == z``: implicit fills annihilate, as in scipy) and a decided selection is
    the selected argument. None where it needs a value that is not a fill or a constant (a
    dense operand's entries, a field used as a value)."""
    match node:
        case PAccess(slot=s, dtype=d):
            t = tensors[s]
            return np.asarray(t.fill_value).astype(d)[()] if has_implicit(t) else None
        case PConst(slot=s):
            return consts[s]
        case PField() | PResult():
            return None
    assert isinstance(node, PApply)
    op = node.op
    with np.errstate(all="ignore"):
        if node.annihilates:
            v = _annihilated_fill(node, tensors, consts)
        elif node.selects:
            v = fill_time_value(node.args[node.selects[0][1]], tensors, consts)
        else:
            vals = [fill_time_value(a, tensors, consts) for a in node.args]
            v = None if any(x is None for x in vals) else op.apply(*vals)
        return None if v is None else np.asarray(v).astype(node.dtype)[()]


def _annihilated_fill(node: PApply, tensors: Any, consts: Any) -> Any:
    """The fill-time value of an op an implicit argument annihilates: the annihilator ``z``
    where another argument holds data, but ``op(fills)`` where every argument is a known
    fill (``0 * NaN`` is NaN for two implicit fills 0 and NaN), as ``coiterate.region_of``
    and the lowering's ``_annihilated`` see it."""
    i = node.annihilates[0]
    vals = [fill_time_value(a, tensors, consts) for a in node.args]
    if any(v is None for v in vals):
        return node.op.annihilator_at(i, node.operand_dtypes[i])
    return apply_to_values(node.op, vals, node.operand_dtypes)


def eval_fill(expr: PNode, tensors: list[Any], consts: list[Any], result: Any = None) -> Any:
    """The result fill: the pointwise tree on the operands' fill values by the registry's
    fill rule (``logic.operators.mapjoin_region``: a dense operand has no implicit region,
    so its nominal fill decides nothing); 0 of the result dtype where the result has no
    implicit region. An epilogue's ``PResult`` is the reduction's fill ``result``."""
    v, full = _fill_region(expr, tensors, consts, result)
    return np.asarray(v).astype(expr.dtype)[()] if full else v  # type: ignore[attr-defined]


def _fill_region(expr: PNode, tensors: list[Any], consts: list[Any],
                 result: Any) -> tuple[Any, bool]:
    """``(fill, full)`` of a pointwise tree (see :func:`eval_fill`)."""
    match expr:
        case PResult():
            return result, False
        case PAccess(slot=s, dtype=d):
            t = tensors[s]
            return np.asarray(t.fill_value).astype(d)[()], not has_implicit(t)
        case PConst(slot=s):
            return consts[s], False
        case PField():
            return np.int64(0), True
        case PApply(op=op, args=args):
            parts = [_fill_region(a, tensors, consts, result) for a in args]
            with np.errstate(all="ignore"):
                return mapjoin_region(op, [v for v, _ in parts], [f for _, f in parts])
