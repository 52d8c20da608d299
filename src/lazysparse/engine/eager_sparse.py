"""The eager tier for large sparse operands: a plan run operation by operation over the
*stored* entries, with scipy.sparse's compiled routines and NumPy, never densifying a
sparse matrix.

It is the reference interpreter (``logic.interpreter``) with one more kind of value,
:class:`Stored`: a 2-d matrix kept as a canonical CSR matrix (sorted, no duplicates) whose
unstored entries are its fill. Elementwise maps over stored matrices gather every argument
on the union of their patterns and apply the interpreter's own fill rule there
(``fill_rule``), so union (add, maximum) and intersection (multiply, divide) follow from the
operators' annihilators, exactly as the dense reference computes them; products
(SpMV, Aᵀx, SpGEMM, sparse × dense) go to scipy where the fill rule is plain arithmetic
(fill 0, finite values, init 0; which rows of a product sum nothing is the table's degree
vector, kept once per tensor by ``formats.statistics``); reductions fold the stored values
per row with NumPy's ``reduceat`` and the fill once per row that has unstored entries.
Dense values (vectors, reduced results, dense tables) are the interpreter's, bounded by
``max_elements``.
Anything else — a sparse table whose fill is not 0, an n-d sparse value, a product with a
non-finite value, a map whose result would be dense over a sparse operand too large to
densify — raises :class:`NotEager`/``TooLarge``: the whole plan then waits for the
compiler.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from lazysparse.formats.config import check_allocation
from lazysparse.formats.dtypes import equals_fill, same_value
from lazysparse.formats.levels.registry import all_located
from lazysparse.formats.statistics import TensorStats, statistics
from lazysparse.formats.tensor import Tensor
from lazysparse.logic.dtypes import INDEX_DTYPE, scalar_as
from lazysparse.logic.fields import unique_fields
from lazysparse.logic.interpreter import (
    FieldRef,
    Interpreter,
    TooLarge,
    Value,
    align,
    fill_rule,
)
from lazysparse.logic.nodes import (
    Alias,
    Field,
    Immediate,
    LogicNode,
    MapJoin,
    Reformat,
    Relabel,
    Reorder,
    Table,
)
from lazysparse.logic.normal_form import epilogue_aggregate
from lazysparse.logic.operators import Operator, aggregate_dtype, mapjoin_region


class NotEager(ValueError):
    """A construct the stored-entry evaluator does not run (the compiled tier does)."""


@dataclass
class Stored:
    """A sparse 2-d intermediate: ``mat`` (scipy CSR or CSC, no duplicate entries) whose
    axes are ``fields``, its unstored entries ``fill``; ``spec`` is set by a Reformat,
    ``source`` is the table it was read from (returned as is when it is a query's
    result); ``borrowed``: its arrays may be a table's (a result copies them). A transpose
    is a view (CSR <-> CSC); :meth:`rowwise` converts once. ``stats``: the table's degree
    statistics (``formats.statistics``, computed once per tensor) when ``mat`` stores its
    entries as they are, ``axes`` the table axis of each matrix axis."""

    mat: sp.csr_array | sp.csc_array
    fields: tuple[Field, ...]
    fill: Any
    spec: Any = None
    source: Tensor | None = None
    borrowed: bool = False
    stats: TensorStats | None = field(default=None, repr=False, compare=False)
    axes: tuple[int, int] = (0, 1)
    _rowwise: sp.csr_array | None = field(default=None, repr=False, compare=False)

    @property
    def shape(self) -> tuple[int, int]:
        """The matrix shape, in ``fields`` order."""
        return self.mat.shape

    def transposed(self) -> Stored:
        """The same values with the fields swapped (a view of the transpose)."""
        return Stored(self.mat.T, self.fields[::-1], self.fill, borrowed=self.borrowed,
                      stats=self.stats, axes=self.axes[::-1])

    def row_counts(self, first: Field, m: Any) -> np.ndarray:
        """How many entries each row of ``m`` (``mat`` with ``first`` as axis 0) stores: the
        table's degree vector when it is one (no O(nnz) count per call of a loop), else
        counted."""
        if self.stats is not None:
            found = self.stats.degrees(self.axes[0 if self.fields[0] == first else 1])
            if found is not None:
                return found
        return _row_counts(m)

    def rowwise(self) -> sp.csr_array:
        """``mat`` as a canonical CSR array (sorted, unique), converted once."""
        if self._rowwise is None:
            m = self.mat
            self._rowwise = canonical(m.tocsr() if m.format != "csr" else m,
                                      owned=m.format != "csr")
        return self._rowwise

    def with_fields(self, fields: tuple[Field, ...], spec: Any = None) -> Stored:
        """The same matrix under other field names (or another result format)."""
        return replace(self, fields=fields, spec=spec, _rowwise=self._rowwise)


def canonical(m: Any, owned: bool = False) -> Any:
    """``m`` as a CSR or CSC array with sorted, unique indices (a copy unless ``owned``)."""
    if m.format not in ("csr", "csc") or not isinstance(m, sp.sparray):
        m = sp.csr_array(m) if m.format != "csc" else sp.csc_array(m)
        owned = True
    if not m.has_canonical_format:
        m = m if owned else m.copy()
        m.sum_duplicates()
    return m


def rows_of(m: sp.csr_array) -> np.ndarray:
    """The row of every stored entry (int64)."""
    return np.repeat(np.arange(m.shape[0], dtype=np.int64), np.diff(m.indptr))


def keys_of(m: sp.csr_array) -> np.ndarray:
    """Row-major linear positions of the stored entries (sorted, as ``m`` is canonical)."""
    if m.shape[0] * m.shape[1] >= 1 << 62:  # Python ints: no overflow in the check
        raise NotEager(f"positions of a {m.shape} matrix overflow int64")
    return rows_of(m) * np.int64(m.shape[1]) + m.indices.astype(np.int64)


def from_keys(keys: np.ndarray, values: np.ndarray, shape: tuple[int, int]) -> sp.csr_array:
    """A canonical CSR array from sorted unique row-major ``keys`` and their values."""
    rows, cols = np.divmod(keys, np.int64(max(shape[1], 1)))
    indptr = np.zeros(shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=shape[0]), out=indptr[1:])
    m = sp.csr_array((values, cols, indptr), shape=shape)
    m.has_sorted_indices = True
    m.has_canonical_format = True
    return m


def stored_table(tns: Any) -> Stored | None:
    """A 2-d sparse table with fill 0 as a :class:`Stored` (None: the interpreter reads it
    densely, bounded); a large sparse table with another fill is refused."""
    if not isinstance(tns, Tensor) or tns.ndim != 2 or tns.full:
        return None
    if not same_value(tns.fill_value, 0):
        raise NotEager(f"a sparse table with fill {tns.fill_value} (scipy has fill 0)")
    mat = canonical(tns.to_scipy())
    stats = statistics(tns)  # the plan cache's key read it already: degrees are kept there
    return Stored(mat, (), tns.dtype.type(0), None, tns, True,
                  stats=stats if stats.nnz == mat.nnz else None)  # no duplicates summed


def _held(tns: Any) -> int:
    """How many values a table's payload stores."""
    values = getattr(tns, "values", tns)
    return int(np.size(values))


def _finite(data: np.ndarray, seen: dict[int, tuple[np.ndarray, bool]] | None = None) -> bool:
    """Whether every value of ``data`` is finite; ``seen``: the answers of this plan run by
    array (each kept alive there, so an id is never another array's), so an operand checked
    for a contraction is not scanned again."""
    if data.dtype.kind not in "fc":
        return True
    hit = seen.get(id(data)) if seen is not None else None
    if hit is not None and hit[0] is data:
        return hit[1]
    ok = bool(np.isfinite(data).all())
    if seen is not None:
        seen[id(data)] = (data, ok)
    return ok


def _one_signed(data: np.ndarray) -> bool:
    """Whether every value is nonzero with one sign (a sum of their products never cancels)."""
    if data.dtype.kind not in "iuf":
        return False
    return data.size == 0 or bool((data > 0).all()) or bool((data < 0).all())


def _indicator(m: Any) -> Any:
    """``m`` (CSR or CSC) with value 1 everywhere it stores an entry."""
    return m.__class__((np.ones(m.nnz), m.indices, m.indptr), shape=m.shape)


def _row_counts(m: Any) -> np.ndarray:
    """How many entries each row of ``m`` (CSR or CSC) stores."""
    if m.format == "csr":
        return np.diff(m.indptr)
    return np.bincount(m.indices, minlength=m.shape[0])


class StoredInterpreter(Interpreter):
    """The reference interpreter over :class:`Stored` matrices as well as dense values."""

    def __init__(self, max_elements: int) -> None:
        super().__init__(max_elements)
        self.memo: dict[int, Any] = {}  # operands a contraction evaluated, read once more
        self.held = 0  # the most values a table of the plan stores
        self.finite: dict[int, tuple[np.ndarray, bool]] = {}  # ``_finite``'s answers

    # -- values -------------------------------------------------------------------------
    def record(self, v: Any) -> Any:
        if isinstance(v, Stored):
            self.sizes.update(zip(v.fields, v.shape, strict=True))
            return v
        return super().record(v)

    def to_tensor(self, v: Any) -> Any:
        if not isinstance(v, Stored):
            return super().to_tensor(v)
        if v.source is not None and v.spec is None:
            return v.source
        return stored_result(v)

    def alias_value(self, a: Alias) -> Any:
        v = self.values.get(a)
        if isinstance(v, Stored):
            return v.with_fields(())
        return super().alias_value(a)

    def densified(self, v: Stored, masked: bool = True) -> Value:
        """``v`` as the interpreter's dense value, with its implicit mask unless not
        ``masked`` (bounded)."""
        self.bound(math.prod(v.shape), "a densified sparse matrix")
        # the densify limit as the compiled host applies it to a dense result: refused past
        # the limit unless no larger than an operand's stored values
        check_allocation(math.prod(v.shape), v.mat.dtype, "a dense result", within=self.held,
                         shape=v.shape)
        if same_value(v.fill, 0):
            data = v.mat.toarray()
        else:
            data = np.full(v.shape, v.fill, dtype=v.mat.dtype)
            r = v.rowwise()
            data[rows_of(r), r.indices] = r.data
        implicit = ~_indicator(v.mat).toarray().astype(bool) if masked else None
        return Value(data, v.fields, v.fill, None, implicit)

    # -- expressions --------------------------------------------------------------------
    def eval(self, node: LogicNode) -> Any:
        hit = self.memo.pop(id(node), None)
        if hit is not None:
            return hit
        match node:
            case Table(tns=Immediate(val=tns), idxs=idxs):
                self.held = max(self.held, _held(tns))
                st = stored_table(tns)
                if st is None:
                    return super().eval(node)
                st.fields = self._check_idxs(idxs, 2, "table")
                return self.record(st)
            case Relabel(arg=arg, idxs=idxs):
                v = self.alias_value(arg) if isinstance(arg, Alias) else self.eval(arg)
                if isinstance(v, Stored):
                    return self.record(v.with_fields(self._check_idxs(idxs, 2, "relabel")))
                return self.record(Value(v.data, self._check_idxs(idxs, np.ndim(v.data),
                                                                  "relabel"), v.fill, None,
                                         v.implicit))
            case Reformat(tns=Immediate(val=spec), arg=arg):
                spec = getattr(spec, "spec", spec)
                self.note_dense_epilogue(spec, arg)
                return self.reformat(spec, self.eval(arg))
        return super().eval(node)

    def without_region(self, v: Any) -> Any:
        if isinstance(v, Stored):  # a fused epilogue's dense-stored sparse product
            v = self.densified(v, masked=False)
        return super().without_region(v)

    def reformat(self, spec: Any, v: Any) -> Any:
        """``v`` with the result format ``spec``; a dense spec makes every entry data (a
        stored matrix is densified, bounded, as the interpreter's dense value)."""
        dense = all_located(getattr(spec, "level_kinds", ()))
        if isinstance(v, Stored):
            if not dense:
                return v.with_fields(v.fields, spec)
            v = self.densified(v, masked=False)
        return Value(v.data, v.fields, v.fill, spec, None if dense else v.implicit)

    def epilogue_axes(self, rhs: LogicNode, v: Any) -> Any:
        if not isinstance(v, Stored):
            return super().epilogue_axes(rhs, v)
        agg = epilogue_aggregate(rhs.arg if isinstance(rhs, Reformat) else rhs)
        if agg is None or not isinstance(agg.arg, Reorder):
            return v
        axes = tuple(f for f in agg.arg.idxs if f not in agg.idxs)
        if set(axes) != set(v.fields):
            return v
        r = self.reorder(v, axes)
        return r.with_fields(r.fields, v.spec)

    def reorder(self, v: Any, idxs: tuple[Field, ...]) -> Any:
        if not isinstance(v, Stored):
            return super().reorder(v, idxs)
        if len(idxs) != 2 or set(idxs) != set(v.fields):
            raise NotEager(f"reorder of a sparse matrix to {idxs}")
        return v if tuple(idxs) == v.fields else v.transposed()

    def mapjoin(self, op: Operator, args: tuple[LogicNode, ...],
                pre: dict[int, Value] | None = None) -> Any:
        vals = [pre[k] if pre and k in pre else FieldRef(a) if isinstance(a, Field)
                else self.eval(a) for k, a in enumerate(args)]
        if not any(isinstance(x, Stored) for x in vals):
            return super().mapjoin(op, args, {k: x for k, x in enumerate(vals)
                                              if isinstance(x, Value)})
        out = stored_mapjoin(op, vals)
        if out is not None:
            return out
        dense = {k: self.densified(x) if isinstance(x, Stored) else x
                 for k, x in enumerate(vals) if not isinstance(x, FieldRef)}
        return super().mapjoin(op, args, dense)

    def aggregate(self, op: Operator, init: Any, v: Any, idxs: tuple[Field, ...]) -> Any:
        if not isinstance(v, Stored):
            return super().aggregate(op, init, v, idxs)
        missing = [f.name for f in idxs if f not in v.fields]
        if missing:
            raise ValueError(f"aggregate reduces field(s) {missing} that its argument lacks")
        return reduce_stored(op, init, v, idxs)

    def contract(self, op: Operator, init: Any, arg: LogicNode,
                 idxs: tuple[Field, ...]) -> Value | None:
        order, body = (arg.idxs, arg.arg) if isinstance(arg, Reorder) else (None, arg)
        factors = _factors(body)
        if factors is None:
            return None
        vals = [self.eval(f) for f in factors]
        if any(isinstance(v, Stored) for v in vals):
            out = self.contract_stored(op, init, body.op.val, factors, vals, idxs, order)
            if out is not None:
                return out
        self.memo.update({id(f): v for f, v in zip(factors, vals, strict=True)})
        if any(isinstance(v, Stored) for v in vals):
            return None  # the general evaluation: the product, then the reduction
        return super().contract(op, init, arg, idxs)

    def contract_stored(self, op: Operator, init: Any, mul: Operator,
                        factors: list[LogicNode], vals: list[Any], idxs: tuple[Field, ...],
                        order: tuple[Field, ...] | None) -> Any:
        """``sum over idxs`` of a product whose two factors over the reduced field are
        contracted by scipy (dense factors over it multiplied together first:
        ``sum_k a_ik (p_k q_k)``); the factors over kept fields only (``sum_k a_ik b_kj
        d_ij``) multiply the contraction after (plain arithmetic: finite values, fills 0)."""
        if not all(_plain(v, self.finite) or _finite_scalar(v) for v in vals):
            return None
        inner = [k for k, v in enumerate(vals) if set(idxs) & set(v.fields)]
        dense = [k for k in inner if not isinstance(vals[k], Stored)]
        if len(inner) > 2 and len(inner) - len(dense) == 1:
            w = vals[dense[0]]
            for k in dense[1:]:  # factor nodes stand in for the arguments given in ``pre``
                w = self.record(self.mapjoin(mul, (factors[dense[0]], factors[k]),
                                             {0: w, 1: vals[k]}))
            pair = (next(vals[k] for k in inner if k not in dense), w)
        elif len(inner) == 2:
            pair = (vals[inner[0]], vals[inner[1]])
        else:
            return None
        fields = tuple(order) if order is not None else unique_fields(
            [v.fields for v in vals])
        out = stored_contract(op, mul, init, *pair, idxs, fields, self.finite)
        if out is None:
            return None
        for k, v in enumerate(vals):
            if k not in inner:
                out = self.record(self.mapjoin(mul, (factors[0], factors[k]), {0: out, 1: v}))
        return self.reorder(out, tuple(f for f in fields if f not in idxs))


def _factors(node: LogicNode) -> list[LogicNode] | None:
    """The factors of a tree of binary ``multiply`` maps (None: ``node`` is not one)."""
    if not (isinstance(node, MapJoin) and len(node.args) == 2 and
            isinstance(node.op, Immediate) and getattr(node.op.val, "name", "") == "multiply"):
        return None
    out: list[LogicNode] = []
    for a in node.args:
        if isinstance(a, Field):
            return None
        sub = _factors(a)
        out.extend(sub if sub is not None else [a])
    return out


# -- elementwise maps -------------------------------------------------------------------
def _oriented(vals: list[Any], fields: tuple[Field, ...]) -> tuple[list[Any], tuple[int, int]]:
    """The arguments with every stored matrix in ``fields`` order, and its shape."""
    out, shape = [], None
    for x in vals:
        if isinstance(x, Stored):
            x = x if x.fields == fields else x.transposed()
            if shape is not None and x.shape != shape:
                raise NotEager(f"sparse operands of shapes {shape} and {x.shape}")
            shape = x.shape
        out.append(x)
    assert shape is not None
    return out, shape


def _dtype_or_scalar(x: Any) -> Any:
    """What the fill rule passes for an operand's dtype: an array's dtype, a scalar itself."""
    if isinstance(x, FieldRef):
        return INDEX_DTYPE
    data = x.mat.data if isinstance(x, Stored) else x.data
    return data.dtype if isinstance(data, np.ndarray) else data


def _outside_implicit(op: Operator, vals: list[Any], fills: list[Any]) -> bool:
    """Whether every position no stored matrix stores is implicit, holding the result's
    fill: no other argument holds data there, or a stored matrix's fill annihilates the op
    (``S * D``, ``S / D``) or selects another stored matrix."""
    if all(isinstance(x, Stored) or (isinstance(x, Value) and x.implicit is True)
           for x in vals):
        return True
    opds = op.operand_dtypes(*[_dtype_or_scalar(x) for x in vals])
    for i, x in enumerate(vals):
        if not isinstance(x, Stored):
            continue
        fi = scalar_as(fills[i], opds[i])
        z = op.annihilator_at(i, opds[i])
        if z is not None and same_value(fi, z):
            return True
        j = op.selected_by(i, fi)
        if j is not None and isinstance(vals[j], Stored):
            return True
    return False


class _Positions:
    """The positions a map visits: the union of the stored matrices' patterns (canonical
    CSR), with their rows, columns and row-major keys computed once, when needed."""

    def __init__(self, stored: list[Stored]) -> None:
        union = stored[0].rowwise()
        for s in stored[1:]:
            if not same_pattern(union, s.rowwise()):
                union = canonical(_indicator(union) + _indicator(s.rowwise()), owned=True)
        self.pattern = union

    @cached_property
    def rows(self) -> np.ndarray:
        return rows_of(self.pattern)

    @cached_property
    def cols(self) -> np.ndarray:
        return self.pattern.indices.astype(np.int64)

    @cached_property
    def keys(self) -> np.ndarray:
        return keys_of(self.pattern)

    def gather(self, x: Any, fields: tuple[Field, ...]) -> tuple[Any, Any, Any]:
        """Argument ``x`` at these positions: its values, fill and implicit mask."""
        n = self.pattern.nnz
        if isinstance(x, FieldRef):
            return (self.rows if x.field == fields[0] else self.cols).astype(INDEX_DTYPE), \
                INDEX_DTYPE.type(0), None
        if isinstance(x, Stored):
            m = x.rowwise()
            if same_pattern(m, self.pattern):
                return m.data, x.fill, np.zeros(n, dtype=bool)
            pos = np.searchsorted(self.keys, keys_of(m))
            data = np.full(n, x.fill, dtype=m.dtype)
            data[pos] = m.data
            mask = np.ones(n, dtype=bool)
            mask[pos] = False
            return data, x.fill, mask
        if not x.fields:
            return x.data, x.fill, x.implicit
        dense = align(x, fields)
        at = (self.rows if dense.shape[0] > 1 else 0, self.cols if dense.shape[1] > 1 else 0)
        mask = x.implicit
        if mask is not None and not isinstance(mask, bool):
            mask = np.broadcast_to(align(Value(mask, x.fields, False), fields),
                                   dense.shape)[at]
        return dense[at], x.fill, mask

    def kept(self, values: np.ndarray, keep: np.ndarray) -> sp.csr_array:
        """The CSR matrix of ``values`` at the positions where ``keep`` holds."""
        p = self.pattern
        m = _without(sp.csr_array((values, p.indices, p.indptr), shape=p.shape), keep)
        m.has_sorted_indices = True
        return m


def same_pattern(a: sp.csr_array, b: sp.csr_array) -> bool:
    """Whether two canonical CSR matrices store the same positions."""
    if a.indices is b.indices and a.indptr is b.indptr:
        return True
    return a.nnz == b.nnz and np.array_equal(a.indptr, b.indptr) and \
        np.array_equal(a.indices, b.indices)


def stored_mapjoin(op: Operator, vals: list[Any]) -> Stored | None:
    """``mapjoin(op, vals)`` over the union of the stored matrices' patterns, under the
    interpreter's fill rule; None where the result holds data outside that union (a dense
    result: the caller densifies, bounded)."""
    fields = unique_fields([(x.field,) if isinstance(x, FieldRef) else x.fields
                            for x in vals])
    if len(fields) != 2:
        raise NotEager(f"mapjoin({op.name}) over fields {fields} with a sparse operand")
    vals, shape = _oriented(vals, fields)
    for x in vals:
        if isinstance(x, Value) and x.fields and any(
                n not in (1, shape[fields.index(f)])
                for f, n in zip(x.fields, np.shape(x.data), strict=True)):
            raise ValueError(f"mapjoin({op.name}): operand of shape {np.shape(x.data)} "
                             f"against a sparse matrix of shape {shape}")
    fills = [INDEX_DTYPE.type(0) if isinstance(x, FieldRef) else x.fill for x in vals]
    full = [isinstance(x, FieldRef) or (isinstance(x, Value) and x.implicit is None)
            for x in vals]
    fill, is_full = mapjoin_region(op, fills, full)
    if is_full or not _outside_implicit(op, vals, fills):
        return None
    at = _Positions([x for x in vals if isinstance(x, Stored)])
    n = at.pattern.nnz
    parts = [at.gather(x, fields) for x in vals]
    args = [p[0] for p in parts]
    out = np.broadcast_to(np.asarray(op.apply(*args)), (n,)).copy()
    out, implicit = fill_rule(op, args, [p[1] for p in parts], [p[2] for p in parts], out,
                              fill, False, (n,))
    return Stored(at.kept(out, ~np.broadcast_to(implicit, (n,))), fields, fill,
                  borrowed=True)  # its index arrays may be an operand's


# -- reductions -------------------------------------------------------------------------
def _fold_fill(op: Operator, part: np.ndarray, fill: Any, missing: np.ndarray) -> np.ndarray:
    """``part`` folded with ``missing`` copies of ``fill`` (once for an idempotent op)."""
    some = missing > 0
    if not some.any() or (op.name == "add" and same_value(fill, 0)):
        return part
    value = np.asarray(scalar_as(fill, part.dtype))
    if op.idempotent:
        part[some] = op.numpy(part[some], value)
        return part
    if op.repeat is None:
        raise NotEager(f"a reduction by {op.name} over unstored entries")
    rep = op.repeat(value, missing[some].astype(np.int64))
    part[some] = op.numpy(part[some], np.asarray(rep).astype(part.dtype))
    return part


def _reduce_rows(op: Operator, data: np.ndarray, indptr: np.ndarray, ncols: int,
                 fill: Any, dtype: np.dtype) -> np.ndarray:
    """``op`` over each row of a CSR layout of ``ncols`` columns (at least one), its
    unstored entries counting as ``fill``."""
    counts = np.diff(indptr)
    nonempty = counts > 0
    part = np.full(counts.size, scalar_as(fill, dtype), dtype=dtype)
    with np.errstate(all="ignore"):
        if data.size:
            part[nonempty] = op.numpy.reduceat(data.astype(dtype), indptr[:-1][nonempty])
        # an empty row starts from one fill: ncols - 1 more to fold
        missing = np.where(nonempty, ncols - counts, ncols - 1)
        return _fold_fill(op, part, fill, missing)


def reduce_stored(op: Operator, init: Any, v: Stored, idxs: tuple[Field, ...]) -> Value:
    """``aggregate(op, init, v, idxs)``: the stored values folded per kept coordinate with
    NumPy, the fill folded where a row has unstored entries; the interpreter's dtypes and
    implicit mask (an empty row is implicit where folding the fill keeps the init)."""
    ufunc = op.numpy if isinstance(op.numpy, np.ufunc) else None
    if ufunc is None or not (op.associative and op.commutative and ufunc.nin == 2):
        raise NotEager(f"a reduction by {op.name} over a sparse matrix")
    dt = v.mat.dtype
    res_dt = aggregate_dtype(op, init, dt)
    operand = np.dtype(op.operand_dtypes(res_dt, dt)[1])
    keep = tuple(f for f in v.fields if f not in idxs)
    m = v.rowwise() if not keep or keep[0] == v.fields[0] else v.transposed().rowwise()
    if keep:
        data, indptr, n = m.data, m.indptr, m.shape[1]
    else:  # every entry: one row of all of them
        data, indptr, n = m.data, np.array([0, m.nnz]), math.prod(m.shape)
    acc = np.full(indptr.size - 1, scalar_as(init, res_dt), dtype=res_dt)
    if n:
        part = _reduce_rows(op, data, indptr, n, v.fill, operand)
        with np.errstate(all="ignore"):
            acc = np.asarray(op.apply(acc, part)).astype(res_dt)
    fill = scalar_as(init, res_dt)
    try:
        keeps = same_value(op.apply(fill, v.fill), fill)
    except (TypeError, ValueError):
        keeps = False
    implicit = (np.diff(indptr) == 0) if keeps else None
    if not keep:
        return Value(acc[0], (), fill, None, None if implicit is None else bool(implicit[0]))
    return Value(acc, keep, fill, None, implicit)


# -- products ---------------------------------------------------------------------------
def _plain(v: Any, seen: dict[int, tuple[np.ndarray, bool]] | None = None) -> bool:
    """Whether ``v``'s implicit entries are arithmetic zeros: numbers, fill 0, all finite."""
    data = v.mat.data if isinstance(v, Stored) else v.data
    if not isinstance(data, np.ndarray) or data.dtype.kind not in "iufc":
        return False
    if (isinstance(v, Stored) or v.implicit is not None) and not same_value(v.fill, 0):
        return False
    return _finite(data, seen)


def _finite_scalar(v: Any) -> bool:
    """Whether ``v`` is a finite number without fields (a constant factor)."""
    return isinstance(v, Value) and not v.fields and np.ndim(v.data) == 0 and \
        np.asarray(v.data).dtype.kind in "iuf" and bool(np.isfinite(v.data))


def _as_matrix(v: Any, first: Field) -> Any:
    """``v`` (a stored matrix or a dense array of 1 or 2 fields) with ``first`` as axis 0."""
    if isinstance(v, Stored):
        return v.mat if v.fields[0] == first else v.mat.T
    data = np.asarray(v.data)
    return data if v.fields[0] == first else data.T


def stored_contract(op: Operator, mul: Operator, init: Any, va: Any, vb: Any,
                    idxs: tuple[Field, ...], fields: tuple[Field, ...],
                    seen: dict[int, tuple[np.ndarray, bool]] | None = None) -> Any:
    """``sum over k of a * b`` for one shared reduced field ``k`` by scipy (SpMV, Aᵀx,
    SpGEMM, sparse × dense), where the fill rule is plain arithmetic; None otherwise (the
    general evaluation: the product, then the reduction). ``seen``: ``_finite``'s answers."""
    if not isinstance(va, Stored):
        va, vb = vb, va
    shared = set(va.fields) & set(vb.fields)
    if (op.name != "add" or len(idxs) != 1 or shared != set(idxs) or
            not isinstance(vb, Stored | Value) or not vb.fields or len(vb.fields) > 2 or
            np.ndim(init) or isinstance(init, bool | np.bool_) or complex(init) != 0 or
            not _plain(va, seen) or not _plain(vb, seen)):
        return None
    (k,) = idxs
    other = next(f for f in va.fields if f != k)
    left = _as_matrix(va, other)
    right = _as_matrix(vb, k)
    if left.shape[1] != right.shape[0]:
        return None
    ldt = va.mat.dtype
    rdt = vb.mat.dtype if isinstance(vb, Stored) else np.asarray(vb.data).dtype
    opds = mul.operand_dtypes(ldt, rdt)
    res_dt = aggregate_dtype(op, init, np.result_type(*opds))
    out_fields = (other, *[f for f in vb.fields if f != k])
    left, right = left.astype(opds[0], copy=False), right.astype(opds[1], copy=False)
    fill = scalar_as(init, res_dt)
    if isinstance(vb, Stored):
        return Stored(_spgemm(left, right, res_dt), out_fields, fill)
    with np.errstate(all="ignore"):
        prod = np.asarray(left @ right).astype(res_dt)
    stored = None if vb.implicit is None else ~np.broadcast_to(vb.implicit, np.shape(vb.data))
    if stored is None:  # a row of ``left`` with no stored entry sums nothing
        implicit = (va.row_counts(other, left) == 0).reshape((-1,) + (1,) * (prod.ndim - 1))
    else:
        rs = stored.astype(np.float64) if vb.fields[0] == k else stored.T.astype(np.float64)
        implicit = np.asarray(_indicator(left) @ rs) == 0
    return Value(prod, out_fields, fill, None, np.broadcast_to(implicit, prod.shape))


def _spgemm(left: Any, right: Any, dtype: np.dtype) -> Any:
    """``left @ right`` storing every structurally reached entry, a cancelled sum as a
    stored 0 (scipy drops those; the interpreter keeps them as data)."""
    with np.errstate(all="ignore"):
        prod = (left @ right).astype(dtype, copy=False)
    if _one_signed(left.data) and _one_signed(right.data):
        return prod  # no sum of these products is 0
    struct = canonical(_indicator(left) @ _indicator(right), owned=True).tocsr()
    prod = canonical(prod.tocsr(), owned=True)
    keys = keys_of(struct)
    values = np.zeros(keys.size, dtype=dtype)
    values[np.searchsorted(keys, keys_of(prod))] = prod.data
    return from_keys(keys, values, struct.shape)


# -- results ----------------------------------------------------------------------------
def stored_result(v: Stored) -> Tensor:
    """A query's result tensor from a stored matrix: in its Reformat's sparse format (csr
    without one; a dense format made it a dense value before), no fill-valued entry
    stored unless that format keeps fills (``FormatSpec.keeps_fills``)."""
    m = v.mat
    fill = np.asarray(v.fill).astype(m.dtype)[()]
    spec = v.spec
    if same_value(fill, 0):
        c = canonical(m)
        # a layout keeping fills stores every reached entry (a cancelled sum's stored 0)
        kept = c if getattr(spec, "keeps_fills", False) else _without(c, c.data != 0)
        t = Tensor.from_scipy(kept.copy() if v.borrowed and kept is m else kept)
        spec = getattr(spec, "layout", spec)
        return t if spec is None or spec == t.spec else t.asformat(spec)
    r = v.rowwise()
    keep = ~np.asarray(equals_fill(r.data, fill), dtype=bool)
    coords = (rows_of(r)[keep], r.indices[keep].astype(np.int64))
    return Tensor.from_coords(coords, r.data[keep], r.shape,
                              format=spec if spec is not None else "csr", fill_value=fill)


def _without(m: Any, keep: np.ndarray) -> Any:
    """Canonical CSR/CSC ``m`` with only the entries where ``keep`` holds."""
    if keep.all():
        return m
    before = np.concatenate([[0], np.cumsum(keep)])
    out = m.__class__((m.data[keep], m.indices[keep], before[m.indptr]), shape=m.shape)
    out.has_sorted_indices = True
    return out


def interpret_stored(plan: LogicNode, *, max_elements: int) -> tuple[Any, ...]:
    """Run ``plan`` over the stored entries of its sparse tables (see the module
    docstring); a dense value over ``max_elements`` raises ``TooLarge``, a construct it
    does not run :class:`NotEager`."""
    out = StoredInterpreter(max_elements).run(plan)
    if out is None:
        raise ValueError("plan has no produces(...) statement")
    return out


__all__ = ["NotEager", "Stored", "StoredInterpreter", "TooLarge", "interpret_stored"]
