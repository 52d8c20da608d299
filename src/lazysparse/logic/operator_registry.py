"""Scalar operators of Finch-Logic: NumPy/Numba/CUDA forms, dtype rules and algebra (the
:class:`Operator` class and the registry; :mod:`.operators` is the registry filled).

An :class:`Operator` is what ``MapJoin.op`` / ``Aggregate.op`` hold (inside an Immediate).
Everything the other stages derive from an operator (fill values, result dtypes, whether an
op annihilates and so keeps a result sparse, default reduction inits, generated code) comes
from here, never from special cases elsewhere. See docs/logic.md for how to add one.

Code-form conventions:
- ``numba`` / ``cuda`` are ``str.format`` templates over the argument expressions
  (``"({0} + {1})"``) or callables ``(operand_dtypes) -> template`` when the form depends on
  the dtypes. Arguments are already cast to :meth:`Operator.operand_dtypes`; the kernel casts
  the value to :meth:`Operator.result_dtype`.
- Numba forms may use the names in ``backends.numba.codegen.NUMBA_GLOBALS`` (``np``,
  ``math``, ``cmath``, ``lsops`` = :mod:`lazysparse.kernels.backends.numba.ops`) and assume
  ``njit(error_model="numpy")``.
- CUDA forms may use the ``__device__`` helpers of
  :data:`lazysparse.kernels.backends.cuda.ops.CUDA_PRELUDE`.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lazysparse.logic.dtypes import (
    BOOL,
    accepts_kind,
    as_dtype,
    bool_pair_operands,
    dtype_of,
    floating_dtype,
    is_python_scalar,
    isdtype,
    real_dtype,
    result_type,
    scalar_as,
)

DtypeValue = Callable[[np.dtype], Any]
CodeForm = str | Callable[[tuple[np.dtype, ...]], str]

# operand/result dtypes by (operator, what, argument dtype signature): the dtype rules are
# pure functions of the arguments' dtypes, and every plan and kernel asks them again
_DTYPE_MEMO: dict[tuple[Any, ...], Any] = {}
_PY_SCALARS = (bool, int, float, complex)


def _dtype_signature(op: Any, args: tuple[Any, ...], what: str) -> tuple[Any, ...] | None:
    """A hashable key of ``args``' dtypes (Python scalars by type), or None when an argument
    is of a kind the memo does not know."""
    sig: list[Any] = [op.name, op.params, what]
    for a in args:
        t = type(a)
        if t in _PY_SCALARS:
            sig.append(t)
        elif t is np.dtype or isinstance(a, np.dtype):
            sig.append(a)
        elif isinstance(a, np.ndarray | np.generic):
            sig.append(a.dtype)
        else:
            return None
    return tuple(sig)


@dataclass(frozen=True)
class Selection:
    """``op(args) == args[result]`` whenever ``args[arg] == value`` (at its operand dtype).

    ``where(c, a, b)``: a False condition selects ``b``, a True one ``a``. A sparse operand
    whose fill selects an argument decides the value wherever it is absent, as a mask does.
    """

    arg: int
    value: bool | int | float
    result: int


DTYPE_RULES = ("promote", "float", "compare", "logical", "to_real", "where", "first_arg",
               "cast", "coalesce")


@dataclass(frozen=True, eq=False)
class Operator:
    """A scalar function with its code forms, dtype rule and algebraic properties.

    ``numpy`` is called on NumPy arrays/scalars already cast to the operand dtypes.
    ``identity``/``annihilator``/``init`` map a dtype to a value (or None); read them with
    :meth:`identity_for`, :meth:`annihilator_for`, :meth:`init_for`.
    ``arg_kinds`` names the dtype kind (see ``dtypes.isdtype``) each argument must have;
    one entry applies to all arguments. Equality and hashing use ``(name, params)``.
    """

    name: str
    nargs: int
    numpy: Callable[..., Any]
    numba: CodeForm
    cuda: CodeForm
    dtype_rule: str
    arg_kinds: tuple[str, ...] = ("any",)
    identity: DtypeValue | None = None
    annihilator: DtypeValue | None = None
    commutative: bool = False
    associative: bool = False
    idempotent: bool = False
    init: DtypeValue | None = None
    params: tuple[Any, ...] = ()
    # the annihilator holds for every operand (False for float multiply: 0 * inf is NaN)
    strict_annihilator_for_floats: bool = True
    # the argument positions at which the annihilator annihilates (None: every position);
    # ``divide`` has ``(0,)``: ``0 / x`` is 0, ``x / 0`` is not
    annihilates_at: tuple[int, ...] | None = None
    # the annihilator holds for every finite operand (False for ``divide``: 0 / 0 is NaN):
    # where not, a dense-stored 0 it meets differs from an implicit one with finite data
    finite_annihilator: bool = True
    # finite operands always give a finite result (no pole, no overflow: ``abs``,
    # ``maximum``, ``sin``); False where finite data may give ±inf or NaN (``exp``, ``/``, ``*``)
    keeps_finite: bool = False
    # NumPy form of ``x (+) x (+) ... (+) x`` (``m`` copies, ``m >= 1`` an int64 array) at
    # ``x``'s dtype, for non-idempotent associative ops (add: ``x * m``, multiply: ``x ** m``)
    repeat: Callable[[Any, Any], Any] | None = None
    # arguments whose value picks which argument is the result (``where``'s condition)
    selections: tuple[Selection, ...] = ()
    doc: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.dtype_rule not in DTYPE_RULES:
            raise ValueError(f"operator {self.name}: unknown dtype rule {self.dtype_rule!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle by name (code forms are closures): another process rebuilds the operator
        from the registry or its parametrized family (``astype``); others refuse."""
        if OPERATORS.get(self.name) is not self and self.name not in FAMILIES:
            raise pickle.PicklingError(f"operator {self.name!r} is not registered")
        return (operator_from, (self.name, self.params))

    # -- identity ---------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        return isinstance(other, Operator) and (self.name, self.params) == (
            other.name, other.params)

    def __hash__(self) -> int:
        return hash(("Operator", self.name, self.params))

    def __repr__(self) -> str:
        if self.params:
            return f"{self.name}[{', '.join(str(p) for p in self.params)}]"
        return self.name

    # -- dtypes -----------------------------------------------------------------------
    def _check_arity(self, args: tuple[Any, ...]) -> None:
        if len(args) != self.nargs:
            raise TypeError(f"{self.name} takes {self.nargs} argument(s), got {len(args)}")

    def _kind_of(self, i: int) -> str:
        return self.arg_kinds[i] if len(self.arg_kinds) > 1 else self.arg_kinds[0]

    def check_args(self, *args: Any) -> None:
        """Raise TypeError if an argument's dtype (or Python scalar) has the wrong kind (a
        bool fits a binary function's numeric kind as 0/1: ``dtypes.accepts_kind``)."""
        self._check_arity(args)
        for i, a in enumerate(args):
            d = dtype_of(a) if not is_python_scalar(a) else result_type(a)
            kind = self._kind_of(i)
            if not accepts_kind(d, kind, self.nargs):
                what = (f"is a Python {type(a).__name__}" if is_python_scalar(a)
                        else f"has dtype {d}")
                raise TypeError(f"{self.name}: argument {i + 1} {what}, expected "
                                f"{_kind_text(kind)}")

    def operand_dtypes(self, *args: Any) -> tuple[np.dtype, ...]:
        """The dtypes kernels cast each argument to before applying the op (checks kinds).

        ``args`` are dtypes, arrays, NumPy scalars or weak Python scalars. Memoized by the
        arguments' dtypes (Python scalars by their type: only that decides promotion).
        """
        key = _dtype_signature(self, args, "operands")
        if key is None:
            return self._operand_dtypes(*args)
        out = _DTYPE_MEMO.get(key)
        if out is None:
            out = _DTYPE_MEMO[key] = self._operand_dtypes(*args)
        return out

    def _operand_dtypes(self, *args: Any) -> tuple[np.dtype, ...]:
        self.check_args(*args)
        rule = self.dtype_rule
        if rule == "logical":
            return (BOOL,) * self.nargs
        if rule == "cast":
            return tuple(result_type(a) for a in args)
        if rule == "where":
            p = result_type(args[1], args[2])
            return (BOOL, p, p)
        if rule == "coalesce":
            p = result_type(args[0], args[1])
            return (p, p, p)
        if rule == "first_arg":
            p = result_type(args[0])
        else:
            p = result_type(*args)
        if rule == "float":
            p = floating_dtype(p)
        elif p == BOOL and not isdtype(p, self.arg_kinds[0]) and accepts_kind(
                p, self.arg_kinds[0], self.nargs):
            # two bools in a numeric function: NumPy's loop (bool or int8) or its TypeError
            return (bool_pair_operands(self.name),) * self.nargs
        if rule in ("promote", "coalesce") or len(self.arg_kinds) == 1:
            kind = self.arg_kinds[0]
            if not isdtype(p, kind):
                raise TypeError(f"{self.name}: arguments promote to {p}, expected "
                                f"{_kind_text(kind)}")
        return (p,) * self.nargs

    def result_dtype(self, *args: Any) -> np.dtype:
        """The dtype of ``op(args...)`` (args as for :meth:`operand_dtypes`)."""
        key = _dtype_signature(self, args, "result")
        if key is None:
            return self._result_dtype(*args)
        out = _DTYPE_MEMO.get(key)
        if out is None:
            out = _DTYPE_MEMO[key] = self._result_dtype(*args)
        return out

    def _result_dtype(self, *args: Any) -> np.dtype:
        ops = self.operand_dtypes(*args)
        match self.dtype_rule:
            case "compare" | "logical":
                return BOOL
            case "to_real":
                return real_dtype(ops[0])
            case "cast":
                return as_dtype(self.params[0])
            case "where":
                return ops[1]
            case _:
                return ops[0]

    # -- evaluation -------------------------------------------------------------------
    def __call__(self, *args: Any) -> Any:
        return self.apply(*args)

    def apply(self, *args: Any) -> Any:
        """Evaluate with NumPy: cast args to the operand dtypes, apply, cast to the result
        dtype. Returns a NumPy array, or a NumPy scalar when every argument is 0-d."""
        out = self.apply_as(self.operand_dtypes(*args), self.result_dtype(*args), *args)
        if all(np.ndim(a) == 0 for a in args):
            return np.asarray(out)[()]
        return out

    def apply_as(self, operand_dtypes: tuple[np.dtype, ...], result_dtype: np.dtype,
                 *args: Any) -> Any:
        """:meth:`apply` at dtypes already decided (a kernel's analysis holds them): cast
        the args to ``operand_dtypes``, apply, cast to ``result_dtype``; no rule runs."""
        with np.errstate(all="ignore"):
            return self.apply_quiet(operand_dtypes, result_dtype, *args)

    def apply_quiet(self, operand_dtypes: tuple[np.dtype, ...], result_dtype: np.dtype,
                    *args: Any) -> Any:
        """:meth:`apply_as` for a caller that already silences floating-point warnings
        (``np.errstate(all="ignore")`` around a whole tree: one context, not one per node)."""
        cast = [_cast(a, d) for a, d in zip(args, operand_dtypes, strict=True)]
        return _cast(self.numpy(*cast), result_dtype)

    # -- code forms -------------------------------------------------------------------
    def numba_template(self, *dtypes: Any) -> str:
        """The Numba template for these operand dtypes (see :meth:`operand_dtypes`)."""
        return _form(self.numba, dtypes)

    def numba_expr(self, args: tuple[str, ...] | list[str], dtypes: tuple[Any, ...]) -> str:
        """Numba source applying the op to argument expressions of the given operand dtypes."""
        return self.numba_template(*dtypes).format(*args)

    def cuda_template(self, *dtypes: Any) -> str:
        """The CUDA C template for these operand dtypes."""
        return _form(self.cuda, dtypes)

    def cuda_expr(self, args: tuple[str, ...] | list[str], dtypes: tuple[Any, ...]) -> str:
        """CUDA C source applying the op to argument expressions."""
        return self.cuda_template(*dtypes).format(*args)

    # -- algebra ----------------------------------------------------------------------
    def identity_for(self, dtype: Any) -> np.generic | None:
        """``e`` with ``op(e, x) == x`` (and ``op(x, e) == x``) at ``dtype``, or None."""
        return _value(self.identity, dtype)

    def annihilator_for(self, dtype: Any, *, strict: bool = False) -> np.generic | None:
        """``z`` with ``op(z, x) == z`` at ``dtype`` at every annihilating position (see
        :meth:`annihilator_at`), or None. ``strict`` drops annihilators that fail for
        non-finite floats (``0 * inf`` is NaN)."""
        d = as_dtype(dtype)
        if strict and d.kind in "fc" and not self.strict_annihilator_for_floats:
            return None
        return _value(self.annihilator, d)

    def annihilator_at(self, position: int, dtype: Any, *,
                       strict: bool = False) -> np.generic | None:
        """The annihilator for argument ``position`` (an operand dtype), or None when the
        op has none there: ``divide`` is annihilated by a 0 numerator, not a 0 divisor."""
        if self.nargs < 2 or (self.annihilates_at is not None
                              and position not in self.annihilates_at):
            return None
        return self.annihilator_for(dtype, strict=strict)

    def selected_by(self, arg: int, value: Any) -> int | None:
        """The argument ``op(args)`` equals whenever argument ``arg`` holds ``value`` (at
        its operand dtype), or None: ``where``'s condition at False selects argument 2."""
        for s in self.selections:
            if s.arg == arg and _same(value, s.value):
                return s.result
        return None

    @property
    def selects_only_arguments(self) -> bool:
        """True when every result is one of the arguments, picked by a boolean argument
        (``where``): both of its values select."""
        picked = {(s.arg, bool(s.value)) for s in self.selections}
        return any((a, True) in picked and (a, False) in picked for a, _ in picked)

    def init_for(self, dtype: Any) -> np.generic | None:
        """Default reduction start value at ``dtype`` (sum 0, prod 1, max -inf ...), or None."""
        return _value(self.init, dtype)

    def fold_repeat(self, x: Any, m: Any) -> Any:
        """``m`` copies of ``x`` folded with the op (``m >= 1``, an int64 array; ``x`` a
        scalar or array of the result dtype), or None when the op has no such form. Lets a
        reduction fold in the unstored entries' value once instead of visiting each. ``m``
        past int64 (an array of more than 2**63 - 1 elements) is an object array of Python
        ints: floats fold it as a float count, integers exactly or with an OverflowError."""
        m = repeat_counts(m)
        if self.nargs != 2 or not self.associative:
            return None
        x = np.asarray(x)
        if self.idempotent:
            return np.broadcast_to(x, np.broadcast_shapes(x.shape, m.shape)).copy()
        if self.repeat is None:
            return None
        if m.dtype == object and x.dtype.kind in "fc":
            m = m.astype(np.float64)  # the float result: only the count's magnitude matters
        with np.errstate(all="ignore"):
            return np.asarray(self.repeat(x, m)).astype(x.dtype)

    @property
    def is_reduction(self) -> bool:
        """Usable as ``Aggregate.op`` with a default init (binary, associative, commutative)."""
        return self.nargs == 2 and self.init is not None


def repeat_counts(m: Any) -> np.ndarray:
    """Repetition counts ``m`` as int64, or as Python ints (an object array) when one
    passes int64 (a reduction over more than 2**63 - 1 points of a sparse array)."""
    arr = np.asarray(m)
    if arr.dtype == object and any(int(c) > _INT64_MAX for c in arr.flat):
        return arr
    return arr.astype(np.int64)


_INT64_MAX = int(np.iinfo(np.int64).max)


def _kind_text(kind: str) -> str:
    article = "an" if kind[0] in "aeiou" else "a"
    return {"any": "any dtype", "bool": "a boolean dtype"}.get(kind, f"{article} {kind} dtype")


def _cast(a: Any, d: np.dtype) -> Any:
    """``a`` (an array or a scalar) at dtype ``d`` (itself when it is of ``d`` already)."""
    t = type(a)
    if t is np.ndarray and a.dtype == d or t is d.type:  # the common cases: nothing to do
        return a
    if is_python_scalar(a):
        return scalar_as(a, d)
    arr = np.asarray(a)
    if arr.dtype == d:
        return a
    if d.kind == "b":
        return arr != 0
    if arr.dtype.kind == "c" and d.kind != "c":
        arr = arr.real
    with np.errstate(all="ignore"):
        return arr.astype(d)


cast_to = _cast  # the public name (the NumPy executor casts an operation's result)


def _form(form: CodeForm, dtypes: tuple[Any, ...]) -> str:
    if isinstance(form, str):
        return form
    return form(tuple(np.dtype(d) for d in dtypes))


def _same(a: Any, b: Any) -> bool:
    """Scalar equality for selection values (NaN never selects)."""
    try:
        return bool(np.asarray(a)[()] == b)
    except (TypeError, ValueError):
        return False


def _value(rule: DtypeValue | None, dtype: Any) -> np.generic | None:
    if rule is None:
        return None
    d = as_dtype(dtype)
    v = rule(d)
    return None if v is None else scalar_as(v, d)


# ------------------------------------------------------------------------------------------
# registry

OPERATORS: dict[str, Operator] = {}
#: parametrized operators by name: ``FAMILIES[name](*params)`` builds one (``astype``)
FAMILIES: dict[str, Callable[..., Operator]] = {}


def register_family(name: str, factory: Callable[..., Operator]) -> None:
    """Make operators called ``name`` rebuildable from their params (see ``operator_from``)."""
    FAMILIES[name] = factory


def operator_from(name: str, params: tuple[Any, ...]) -> Operator:
    """The operator called ``name`` with ``params``, from its family or the registry."""
    family = FAMILIES.get(name)
    return family(*params) if family is not None else OPERATORS[name]


def register(op: Operator) -> Operator:
    """Add an operator to :data:`OPERATORS` (names are unique)."""
    if op.name in OPERATORS and OPERATORS[op.name] is not op:
        raise ValueError(f"operator {op.name!r} is already registered")
    OPERATORS[op.name] = op
    return op


def mapjoin_fill(op: Operator, fills: tuple[Any, ...] | list[Any],
                 full: tuple[bool, ...] | list[bool] | None = None) -> np.generic:
    """Fill value of ``mapjoin(op, args...)`` (see :func:`mapjoin_region`)."""
    return mapjoin_region(op, fills, full)[0]


def mapjoin_region(op: Operator, fills: tuple[Any, ...] | list[Any],
                   full: tuple[bool, ...] | list[bool] | None = None
                   ) -> tuple[np.generic, bool]:
    """``(fill, full)`` of ``mapjoin(op, args...)``: the fill rule of docs/api.md.

    ``fills`` are the arguments' fill values (NumPy or Python scalars); ``full[i]`` says
    argument ``i`` has no implicit region (a dense array, a field used as a value): its
    nominal fill never decides anything. With no full argument the result is sparse with
    fill ``op(fills...)`` (IEEE: where every operand is implicit, nothing else is read).
    With one, the result keeps an implicit region only where a sparse argument's fill
    annihilates the op at its position (fill: the annihilator, as scipy's ``multiply``)
    or selects a non-full argument (``where(mask, D, 0)``: that argument's fill); otherwise
    it is full (dense), with the nominal fill 0 of its dtype.
    """
    if full is None or not any(full):
        return np.asarray(op.apply(*fills))[()], False
    if all(full):  # no implicit region anywhere: dense, nominal fill 0
        return op.result_dtype(*fills).type(0), True
    opds = op.operand_dtypes(*fills)
    rd = op.result_dtype(*fills)
    for i, (f, is_full) in enumerate(zip(fills, full, strict=True)):
        if is_full:
            continue
        v = scalar_as(f, opds[i])
        z = op.annihilator_at(i, opds[i])
        if z is not None and _same(v, z):
            return scalar_as(z, rd), False
        j = op.selected_by(i, v)
        if j is not None and not full[j]:
            return scalar_as(scalar_as(fills[j], opds[j]), rd), False
    return rd.type(0), True


def aggregate_fill(op: Operator, init: Any, arg_dtype: Any) -> np.generic:
    """Fill value of ``aggregate(op, init, arg)``: ``init`` at the aggregate's dtype."""
    return scalar_as(init, aggregate_dtype(op, init, arg_dtype))


def aggregate_dtype(op: Operator, init: Any, arg_dtype: Any) -> np.dtype:
    """Result dtype of reducing ``arg_dtype`` values with ``op`` from ``init``: the fixpoint
    of ``op.result_dtype(acc, arg)`` starting from ``init``'s dtype. Memoized with the
    operators' dtype rules (a function of the dtypes and Python scalar types alone)."""
    key = _dtype_signature(op, (init, arg_dtype), "aggregate")
    out = _DTYPE_MEMO.get(key) if key is not None else None
    if out is None:
        out = _aggregate_dtype(op, init, arg_dtype)
        if key is not None:
            _DTYPE_MEMO[key] = out
    return out


def _aggregate_dtype(op: Operator, init: Any, arg_dtype: Any) -> np.dtype:
    """:func:`aggregate_dtype` without the memo."""
    acc = result_type(init) if not is_python_scalar(init) else result_type(init, arg_dtype)
    for _ in range(8):
        nxt = op.result_dtype(acc, arg_dtype)
        if nxt == acc:
            return acc
        acc = nxt
    raise TypeError(f"aggregate({op.name}) over {arg_dtype} from {init!r}: dtype does not "
                    "reach a fixpoint")


__all__ = [
    "OPERATORS", "CodeForm", "DtypeValue", "Operator", "Selection", "aggregate_dtype",
    "aggregate_fill", "cast_to", "mapjoin_fill", "mapjoin_region", "register",
]
