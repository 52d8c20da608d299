"""The Array API 2024.12 elementwise functions as registered operators.

Each entry: NumPy form (on operand-dtype arrays), Numba form, CUDA form (helpers from
``cuda_ops.CUDA_PRELUDE``), dtype rule, accepted kinds and algebra. Beyond the standard,
float-only math (``sqrt``, ``divide`` ...) accepts integer input and computes in float64.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from lazysparse.logic.dtypes import dtype_max, dtype_min
from lazysparse.logic.operator_registry import CodeForm, Operator, register


def by_kind(default: str | None = None, **forms: str) -> Callable[[tuple[np.dtype, ...]], str]:
    """A code form chosen by the first operand's dtype kind: keys ``b i u f c`` and
    ``int`` (signed and unsigned), ``real`` (b, i, u, f); else ``default``."""

    def choose(dtypes: tuple[np.dtype, ...]) -> str:
        k = dtypes[0].kind if dtypes else "f"
        groups = {"int": "iu", "real": "biuf", "inexact": "fc"}
        if k in forms:
            return forms[k]
        for g, ks in groups.items():
            if g in forms and k in ks:
                return forms[g]
        if default is None:
            raise TypeError(f"no code form for operand dtypes {dtypes}")
        return default

    return choose


def _bits_form(helper: str, uhelper: str | None = None) -> Callable[[tuple[np.dtype, ...]], str]:
    def choose(dtypes: tuple[np.dtype, ...]) -> str:
        h = uhelper if (uhelper and dtypes[0].kind == "u") else helper
        return f"lsops.{h}({{0}}, {{1}}, {dtypes[0].itemsize * 8})"
    return choose


def _cuda_bits_form(helper: str) -> Callable[[tuple[np.dtype, ...]], str]:
    def choose(dtypes: tuple[np.dtype, ...]) -> str:
        return f"{helper}({{0}}, {{1}}, {dtypes[0].itemsize * 8})"
    return choose


def zero(d: np.dtype) -> Any:
    return 0


def one(d: np.dtype) -> Any:
    return 1


def _add_repeat(x: Any, m: Any) -> Any:
    """``x + x + ... + x`` (m times) at x's dtype: ``x * m`` (wraps like repeated adds)."""
    if x.dtype.kind == "b":
        return np.broadcast_to(x, np.broadcast_shapes(x.shape, m.shape))
    if m.dtype == object:  # integers, m past int64: exact or refused
        return _exact_integers(x.astype(object) * m, x.dtype, "sum")
    return np.multiply(x, m.astype(x.dtype))


def _multiply_repeat(x: Any, m: Any) -> Any:
    """``x * x * ... * x`` (m times) at x's dtype: ``x ** m`` (integers wrap mod 2**64)."""
    if x.dtype.kind == "b":
        return np.broadcast_to(x, np.broadcast_shapes(x.shape, m.shape))
    if x.dtype.kind in "iu" and m.dtype == object:  # m past int64: only 0, 1, -1 fit
        xo = np.broadcast_to(x.astype(object), np.broadcast_shapes(x.shape, m.shape))
        mo = np.broadcast_to(m, xo.shape)
        powers = [b if b in (0, 1) else (1 - 2 * (e % 2) if b == -1 else b * 2 ** 64)
                  for b, e in zip(xo.flat, mo.flat, strict=True)]
        return _exact_integers(np.array(powers, dtype=object).reshape(xo.shape), x.dtype,
                               "product")
    if x.dtype.kind in "iu":
        wide = np.dtype(np.uint64 if x.dtype.kind == "u" else np.int64)
        return np.power(x.astype(wide), m.astype(wide)).astype(x.dtype)
    if x.dtype.kind == "c":
        return np.power(x, m)
    return np.power(x, m.astype(np.float64)).astype(x.dtype)


def _exact_integers(values: np.ndarray, dtype: np.dtype, what: str) -> np.ndarray:
    """Python-int ``values`` at integer ``dtype``, or an OverflowError naming the problem:
    a reduction over more than 2**63 - 1 elements has no wrapping int64 count to follow,
    so an integer result that does not fit is refused rather than wrapped."""
    info = np.iinfo(dtype)
    if any(not info.min <= int(v) <= info.max for v in values.flat):
        raise OverflowError(
            f"the {what} over more than 2**63 - 1 elements does not fit {dtype}; reduce in "
            "floating point (e.g. xp.sum(x, dtype=xp.float64))")
    return values.astype(dtype)


def _xor_repeat(x: Any, m: Any) -> Any:
    """``x ^ x ^ ... ^ x`` (m times): ``x`` for odd m, else zero."""
    return np.where(m % 2 == 1, x, np.zeros((), x.dtype))


@dataclass(frozen=True)
class ElementwiseFunction:
    """What the api needs to generate one namespace function and its dunders."""

    name: str
    operator: Operator
    nargs: int
    arg_kinds: tuple[str, ...]
    dunders: tuple[str, ...]  # e.g. ("__add__", "__radd__", "__iadd__")


ELEMENTWISE_FUNCTIONS: dict[str, ElementwiseFunction] = {}


def _binary_dunders(stem: str) -> tuple[str, ...]:
    return (f"__{stem}__", f"__r{stem}__", f"__i{stem}__")


def op(name: str, nargs: int, np_fn: Callable[..., Any], numba: CodeForm, rule: str,
       kinds: str | tuple[str, ...], *, cuda: CodeForm | None = None,
       dunders: tuple[str, ...] = (), api: bool = True, **algebra: Any) -> Operator:
    """Define, register and (if ``api``) list one elementwise operator."""
    if cuda is None:
        cuda = f"ls_{name}(" + ", ".join(f"{{{i}}}" for i in range(nargs)) + ")"
    kinds_t = (kinds,) if isinstance(kinds, str) else kinds
    o = register(Operator(name, nargs, np_fn, numba, cuda, rule, kinds_t, **algebra))
    if api:
        full = kinds_t * nargs if len(kinds_t) == 1 else kinds_t
        ELEMENTWISE_FUNCTIONS[name] = ElementwiseFunction(name, o, nargs, full, dunders)
    return o


def _np_unary(name: str) -> str:
    return f"np.{name}({{0}})"


def _log1p_form(dtypes: tuple[np.dtype, ...]) -> str:
    """``log1p``'s Numba form: complex in the operand's own precision (NumPy's formula loses
    digits near 0 in complex64, and the compiled path must give the same numbers)."""
    if dtypes[0].kind != "c":
        return "np.log1p({0})"
    one = "np.float32(1.0)" if dtypes[0] == np.complex64 else "1.0"
    return f"lsops.log1p_complex({{0}}, {one})"


# --- unary math (float rule: integers compute in float64) ---------------------------------
_FLOAT_UNARY = {
    "acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin, "asinh": np.arcsinh,
    "atan": np.arctan, "atanh": np.arctanh, "cos": np.cos, "cosh": np.cosh, "exp": np.exp,
    "log": np.log, "log2": np.log2, "log10": np.log10, "sin": np.sin, "sinh": np.sinh,
    "sqrt": np.sqrt, "tan": np.tan, "tanh": np.tanh,
}
# complex forms in lazysparse.kernels.backends.numba.ops follow C99 Annex G's special values, as
# NumPy does (Numba's cmath follows Python's: exp(1e300 + 0j) is inf+nanj there)
_CMATH_COMPLEX = ("log", "log10", "sqrt")
for _name, _fn in _FLOAT_UNARY.items():
    _cform = f"cmath.{_name}({{0}})" if _name in _CMATH_COMPLEX else \
        f"lsops.{_name}_complex({{0}})"
    op(_name, 1, _fn, by_kind(_np_unary(_fn.__name__), c=_cform), "float", "numeric")
op("expm1", 1, np.expm1, by_kind("np.expm1({0})", c="lsops.expm1_complex({0})"), "float",
   "numeric")
op("log1p", 1, np.log1p, _log1p_form, "float", "numeric")
op("reciprocal", 1, np.reciprocal,
   by_kind("(1.0 / {0})", c="lsops.reciprocal_complex({0})"), "float", "numeric")

# --- unary, dtype preserving ----------------------------------------------------------
op("abs", 1, np.abs, "abs({0})", "to_real", "numeric", dunders=("__abs__",),
   idempotent=True, keeps_finite=True)
op("negative", 1, np.negative, "(-{0})", "promote", "numeric", dunders=("__neg__",),
   keeps_finite=True)
op("positive", 1, np.positive, "(+{0})", "promote", "numeric", dunders=("__pos__",),
   idempotent=True, keeps_finite=True)
op("square", 1, np.square, "lsops.square({0})", "promote", "numeric")
op("sign", 1, np.sign, by_kind(f="lsops.sign_float({0})", c="lsops.sign_complex({0})",
                               int="lsops.sign_int({0})"), "promote", "numeric",
   idempotent=True, keeps_finite=True)
for _name, _fn in (("ceil", np.ceil), ("floor", np.floor), ("trunc", np.trunc)):
    op(_name, 1, _fn, by_kind(f=f"np.{_name}({{0}})", int="{0}"), "promote", "real numeric",
       idempotent=True, keeps_finite=True)
op("round", 1, np.round, by_kind(f="np.rint({0})", c="lsops.round_complex({0})", int="{0}"),
   "promote", "numeric", idempotent=True, keeps_finite=True)
op("conj", 1, np.conj, by_kind("{0}", c="np.conj({0})"), "promote", "numeric",
   keeps_finite=True)
op("real", 1, np.real, by_kind("{0}", c="{0}.real"), "to_real", "numeric", idempotent=True,
   keeps_finite=True)
op("imag", 1, np.imag, by_kind("0", c="{0}.imag"), "to_real", "numeric", keeps_finite=True)
op("bitwise_invert", 1, np.invert, by_kind("(~{0})", b="(not {0})"), "promote",
   "integer or boolean", dunders=("__invert__",))
op("signbit", 1, lambda x: np.signbit(x) if x.dtype.kind == "f" else x < 0,
   by_kind("({0} < 0)", f="np.signbit({0})"), "compare", "real numeric")
op("isfinite", 1, np.isfinite, by_kind("True", inexact="np.isfinite({0})"), "compare",
   "numeric")
op("isinf", 1, np.isinf, by_kind("False", inexact="np.isinf({0})"), "compare", "numeric")
op("isnan", 1, np.isnan, by_kind("False", inexact="np.isnan({0})"), "compare", "numeric")
op("logical_not", 1, np.logical_not, "(not {0})", "logical", "any", cuda="(!{0})")

# --- binary arithmetic ----------------------------------------------------------------
op("add", 2, np.add, "({0} + {1})", "promote", "numeric", cuda="({0} + {1})",
   dunders=_binary_dunders("add"), identity=zero, commutative=True, associative=True,
   init=zero, repeat=_add_repeat)
op("subtract", 2, np.subtract, "({0} - {1})", "promote", "numeric", cuda="({0} - {1})",
   dunders=_binary_dunders("sub"))
op("multiply", 2, np.multiply, "({0} * {1})", "promote", "numeric", cuda="({0} * {1})",
   dunders=_binary_dunders("mul"), identity=one, annihilator=zero, commutative=True,
   associative=True, init=one, strict_annihilator_for_floats=False, repeat=_multiply_repeat)
op("divide", 2, np.divide, by_kind("({0} / {1})", c="lsops.divide_complex({0}, {1})"), "float",
   "numeric", cuda="({0} / {1})",
   dunders=_binary_dunders("truediv"), annihilator=zero, annihilates_at=(0,),
   strict_annihilator_for_floats=False, finite_annihilator=False)
op("floor_divide", 2, np.floor_divide,
   by_kind(f="lsops.floor_divide_float({0}, {1})", i="lsops.floor_divide_int({0}, {1})",
           u="lsops.floor_divide_uint({0}, {1})"),
   "promote", "real numeric", dunders=_binary_dunders("floordiv"), annihilator=zero,
   annihilates_at=(0,), strict_annihilator_for_floats=False, finite_annihilator=False)
op("remainder", 2, np.remainder,
   by_kind(f="lsops.remainder_float({0}, {1})", i="lsops.remainder_int({0}, {1})",
           u="lsops.remainder_uint({0}, {1})"),
   "promote", "real numeric", dunders=_binary_dunders("mod"))
op("pow", 2, np.power, by_kind("np.power({0}, {1})", i="lsops.power_int({0}, {1})",
                            c="lsops.power_complex({0}, {1})",
                            u="lsops.power_uint({0}, {1})"),
   "promote", "numeric", dunders=_binary_dunders("pow"))
op("maximum", 2, np.maximum,
   by_kind(f="lsops.maximum_float({0}, {1})", real="lsops.maximum_int({0}, {1})"),
   "promote", "real numeric", identity=dtype_min, annihilator=dtype_max, commutative=True,
   associative=True, idempotent=True, init=dtype_min, strict_annihilator_for_floats=False,
   keeps_finite=True)
op("minimum", 2, np.minimum,
   by_kind(f="lsops.minimum_float({0}, {1})", real="lsops.minimum_int({0}, {1})"),
   "promote", "real numeric", identity=dtype_max, annihilator=dtype_min, commutative=True,
   associative=True, idempotent=True, init=dtype_max, strict_annihilator_for_floats=False,
   keeps_finite=True)
op("atan2", 2, np.arctan2, "np.arctan2({0}, {1})", "float", "real numeric")
op("copysign", 2, np.copysign, "np.copysign({0}, {1})", "float", "real numeric")
op("hypot", 2, np.hypot, "np.hypot({0}, {1})", "float", "real numeric", commutative=True)
op("nextafter", 2, np.nextafter,
   by_kind("lsops.nextafter({0}, {1})", f="lsops.nextafter({0}, {1})"),
   "float", "real numeric")
op("logaddexp", 2, np.logaddexp, "lsops.logaddexp({0}, {1})", "float", "real numeric",
   identity=lambda d: -np.inf, commutative=True, associative=True, init=lambda d: -np.inf,
   repeat=lambda x, m: x + np.log(m))

# --- bitwise --------------------------------------------------------------------------
op("bitwise_and", 2, np.bitwise_and, "({0} & {1})", "promote", "integer or boolean",
   cuda="({0} & {1})", dunders=_binary_dunders("and"),
   identity=lambda d: True if d.kind == "b" else (-1 if d.kind == "i" else np.iinfo(d).max),
   annihilator=zero, commutative=True, associative=True, idempotent=True,
   init=lambda d: True if d.kind == "b" else (-1 if d.kind == "i" else np.iinfo(d).max))
op("bitwise_or", 2, np.bitwise_or, "({0} | {1})", "promote", "integer or boolean",
   cuda="({0} | {1})", dunders=_binary_dunders("or"), identity=zero,
   annihilator=lambda d: True if d.kind == "b" else (-1 if d.kind == "i" else np.iinfo(d).max),
   commutative=True, associative=True, idempotent=True, init=zero)
op("bitwise_xor", 2, np.bitwise_xor, "({0} ^ {1})", "promote", "integer or boolean",
   cuda="({0} ^ {1})", dunders=_binary_dunders("xor"), identity=zero, commutative=True,
   associative=True, init=zero, repeat=_xor_repeat)
op("bitwise_left_shift", 2, np.left_shift, _bits_form("left_shift"), "promote", "integral",
   cuda=_cuda_bits_form("ls_left_shift"), dunders=_binary_dunders("lshift"))
op("bitwise_right_shift", 2, np.right_shift, _bits_form("right_shift", "right_shift_uint"),
   "promote", "integral",
   cuda=_cuda_bits_form("ls_right_shift"), dunders=_binary_dunders("rshift"))

# --- comparisons and logic ------------------------------------------------------------
for _name, _fn, _sym, _dunder in (
    ("equal", np.equal, "==", "__eq__"), ("not_equal", np.not_equal, "!=", "__ne__"),
    ("less", np.less, "<", "__lt__"), ("less_equal", np.less_equal, "<=", "__le__"),
    ("greater", np.greater, ">", "__gt__"), ("greater_equal", np.greater_equal, ">=", "__ge__"),
):
    op(_name, 2, _fn, f"({{0}} {_sym} {{1}})", "compare",
       "any" if _name in ("equal", "not_equal") else "real numeric",
       cuda=f"({{0}} {_sym} {{1}})", dunders=(_dunder,),
       commutative=_name in ("equal", "not_equal"), keeps_finite=True)
op("logical_and", 2, np.logical_and, "({0} and {1})", "logical", "any", cuda="({0} && {1})",
   identity=lambda d: True, annihilator=lambda d: False, commutative=True, associative=True,
   idempotent=True, init=lambda d: True)
op("logical_or", 2, np.logical_or, "({0} or {1})", "logical", "any", cuda="({0} || {1})",
   identity=lambda d: False, annihilator=lambda d: True, commutative=True, associative=True,
   idempotent=True, init=lambda d: False)
op("logical_xor", 2, np.logical_xor, "({0} != {1})", "logical", "any", cuda="({0} != {1})",
   identity=lambda d: False, commutative=True, associative=True, init=lambda d: False,
   repeat=_xor_repeat)

# --- three arguments ------------------------------------------------------------------
op("clip", 3, lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi),
   by_kind(f="lsops.clip_float({0}, {1}, {2})", real="lsops.clip_int({0}, {1}, {2})"),
   "first_arg", "real numeric")
