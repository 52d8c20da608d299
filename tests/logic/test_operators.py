"""The operator registry: coverage, dtype rules, kind checks, algebra, fill values."""

from __future__ import annotations

import numpy as np
import pytest

from lazysparse.logic.dtypes import ALL_DTYPES, bool_pair_operands, isdtype, promote_types
from lazysparse.logic.nodes import Immediate
from lazysparse.logic.operators import (
    ELEMENTWISE_FUNCTIONS,
    OPERATORS,
    REDUCTIONS,
    aggregate_dtype,
    aggregate_fill,
    astype_op,
    get_operator,
    mapjoin_fill,
)
from tests.logic.op_samples import REPRESENTATIVE_DTYPES, accepts, sample_values

STANDARD_ELEMENTWISE = """abs acos acosh add asin asinh atan atan2 atanh bitwise_and
bitwise_left_shift bitwise_invert bitwise_or bitwise_right_shift bitwise_xor ceil clip conj
copysign cos cosh divide equal exp expm1 floor floor_divide greater greater_equal hypot imag
isfinite isinf isnan less less_equal log log1p log2 log10 logaddexp logical_and logical_not
logical_or logical_xor maximum minimum multiply negative nextafter not_equal positive pow real
reciprocal remainder round sign signbit sin sinh square sqrt subtract tan tanh trunc""".split()


def test_every_standard_elementwise_function_is_registered() -> None:
    missing = [n for n in STANDARD_ELEMENTWISE if n not in ELEMENTWISE_FUNCTIONS]
    assert not missing
    for n in STANDARD_ELEMENTWISE:
        ef = ELEMENTWISE_FUNCTIONS[n]
        assert ef.operator is OPERATORS[n] and ef.nargs == ef.operator.nargs
        assert len(ef.arg_kinds) == ef.nargs
    for internal in ("where", "isequal", "first", "overwrite", "coalesce"):
        assert internal in OPERATORS and internal not in ELEMENTWISE_FUNCTIONS


def test_dunders() -> None:
    dunder_to_fn = {d: n for n, ef in ELEMENTWISE_FUNCTIONS.items() for d in ef.dunders}
    assert dunder_to_fn["__add__"] == "add" and dunder_to_fn["__rsub__"] == "subtract"
    assert dunder_to_fn["__truediv__"] == "divide" and dunder_to_fn["__mod__"] == "remainder"
    assert dunder_to_fn["__invert__"] == "bitwise_invert" and dunder_to_fn["__lt__"] == "less"
    assert dunder_to_fn["__ilshift__"] == "bitwise_left_shift"
    assert dunder_to_fn["__abs__"] == "abs" and dunder_to_fn["__neg__"] == "negative"
    assert len(dunder_to_fn) == sum(len(ef.dunders) for ef in ELEMENTWISE_FUNCTIONS.values())


def test_get_operator_unknown_name() -> None:
    with pytest.raises(KeyError, match="did you mean add"):
        get_operator("addd")


def test_operator_identity_and_hashing() -> None:
    assert astype_op("float32") == astype_op(np.float32)
    assert astype_op("float32") != astype_op("float64")
    assert hash(astype_op("int8")) == hash(astype_op(np.dtype("int8")))
    assert Immediate(OPERATORS["add"]) == Immediate(get_operator("add"))
    assert Immediate(OPERATORS["add"]) != Immediate(OPERATORS["multiply"])
    assert repr(astype_op("int8")) == "astype[int8]"


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "maximum", "pow",
                                  "floor_divide", "bitwise_and"])
def test_promoting_ops_follow_promotion(name: str) -> None:
    op = OPERATORS[name]
    for x in ALL_DTYPES:
        for y in ALL_DTYPES:
            try:
                p = promote_types(x, y)
            except TypeError:
                continue
            if x == y == np.dtype(bool) and not isdtype(x, op.arg_kinds[0]):
                # two bools in a numeric function: NumPy's loop (bool, int8 or TypeError)
                p = _bool_pair_or_none(name)
                if p is None:
                    with pytest.raises(TypeError):
                        op.result_dtype(x, y)
                    continue
            if accepts(op, x) and accepts(op, y) and accepts(op, p):
                assert op.result_dtype(x, y) == p


def _bool_pair_or_none(name: str) -> np.dtype | None:
    try:
        return bool_pair_operands(name)
    except TypeError:
        return None


def test_result_dtype_rules() -> None:
    i1, i4, f4, f8 = (np.dtype(t) for t in ("int8", "int32", "float32", "float64"))
    c8, c16, b = np.dtype("complex64"), np.dtype("complex128"), np.dtype(bool)
    assert OPERATORS["sqrt"].result_dtype(i1) == f8
    assert OPERATORS["sqrt"].result_dtype(f4) == f4
    assert OPERATORS["divide"].result_dtype(i4, i4) == f8
    assert OPERATORS["divide"].result_dtype(f4, 2) == f4
    assert OPERATORS["abs"].result_dtype(c8) == f4
    assert OPERATORS["abs"].result_dtype(i1) == i1
    assert OPERATORS["real"].result_dtype(c16) == f8
    assert OPERATORS["imag"].result_dtype(f4) == f4
    assert OPERATORS["less"].result_dtype(i1, f4) == b
    assert OPERATORS["equal"].result_dtype(c8, c8) == b
    assert OPERATORS["isnan"].result_dtype(c8) == b
    assert OPERATORS["logical_and"].result_dtype(f8, i1) == b
    assert OPERATORS["where"].result_dtype(b, i1, f4) == f4
    assert OPERATORS["where"].result_dtype(b, np.dtype("int64"), 5) == np.dtype("int64")
    assert OPERATORS["clip"].result_dtype(i1, 0, 5) == i1
    assert astype_op("float32").result_dtype(c16) == f4
    assert OPERATORS["coalesce"].result_dtype(f4, f4, np.nan) == f4


@pytest.mark.parametrize(("name", "args", "msg"), [
    ("bitwise_and", ("float64", "float64"), "bitwise_and: argument 1 has dtype float64"),
    ("bitwise_left_shift", ("bool", "bool"), "expected an integral dtype"),
    ("subtract", ("bool", "bool"), "boolean subtraction is not supported"),
    ("negative", ("bool",), "expected a numeric dtype"),
    ("bitwise_left_shift", ("bool", "int8"), "argument 1 has dtype bool"),
    ("maximum", ("bool", "complex64"), "argument 2 has dtype complex64"),
    ("less", ("complex64", "complex64"), "expected a real numeric dtype"),
    ("sqrt", ("bool",), "expected a numeric dtype"),
    ("floor_divide", ("complex128", "float64"), "argument 1 has dtype complex128"),
    ("maximum", ("int8", "complex64"), "argument 2"),
    ("atan2", ("complex64", "float32"), "expected a real numeric"),
])
def test_bad_dtypes_raise_type_error(name: str, args: tuple[str, ...], msg: str) -> None:
    with pytest.raises(TypeError, match=msg):
        OPERATORS[name].result_dtype(*[np.dtype(a) for a in args])


def test_bad_scalar_kind_and_arity() -> None:
    with pytest.raises(TypeError, match="argument 2 is a Python float"):
        OPERATORS["bitwise_or"].result_dtype(np.dtype("int8"), 1.5)
    with pytest.raises(TypeError, match="takes 2 argument"):
        OPERATORS["add"].result_dtype(np.dtype("int8"))


def _eq(a: object, b: object) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return bool(np.all((a == b) | ((a != a) & (b != b))))


def _finite(v: np.ndarray) -> np.ndarray:
    return v[np.isfinite(v)] if v.dtype.kind in "fc" else v


@pytest.mark.parametrize("op", [o for o in OPERATORS.values() if o.nargs == 2],
                         ids=lambda o: o.name)
def test_declared_algebra_holds(op) -> None:  # noqa: ANN001
    for d in REPRESENTATIVE_DTYPES:
        # the algebra is stated at the op's own result dtype
        if not accepts(op, d) or op.result_dtype(d, d) not in (d, np.dtype(bool)):
            continue
        xs = sample_values(d) if op.result_dtype(d, d) == d else sample_values(np.dtype(bool))
        x, y = np.meshgrid(xs, xs)
        with np.errstate(all="ignore"):
            if (e := op.identity_for(d)) is not None:
                # complex 1 * (inf + 1j) is inf + nanj in IEEE complex arithmetic
                ex = _finite(xs) if d.kind == "c" else xs
                assert _eq(op(e, ex), ex) and _eq(op(ex, e), ex), (op, d)
            if (z := op.annihilator_for(d)) is not None:
                fx = xs if op.annihilator_for(d, strict=True) is not None else _finite(xs)
                if op.annihilates_at is not None:  # divide: a 0 numerator, not a 0 divisor
                    # non-strict: implicit fills annihilate whatever the operand (docs/api.md)
                    fx = fx[fx != 0]
                for pos in (0, 1):
                    if op.annihilator_at(pos, d) is None:
                        continue
                    got = op(z, fx) if pos == 0 else op(fx, z)
                    assert _eq(got, z), (op, d, pos)
            if op.commutative:
                assert _eq(op(x, y), op(y, x)), (op, d)
            if op.idempotent:
                assert _eq(op(xs, xs), xs), (op, d)
            if op.associative and d.kind in "biu":
                small = xs[: min(len(xs), 5)]
                for a in small:
                    assert _eq(op(op(a, x), y), op(a, op(x, y))), (op, d)
            if (init := op.init_for(d)) is not None:
                ex = _finite(xs) if d.kind == "c" else xs
                assert _eq(op(init, ex), ex), (op, d)


@pytest.mark.parametrize("name", [n for n, o in OPERATORS.items() if o.nargs == 1])
def test_unary_idempotence(name: str) -> None:
    op = OPERATORS[name]
    if not op.idempotent:
        return
    for d in REPRESENTATIVE_DTYPES:
        if accepts(op, d) and op.result_dtype(d) == d:
            xs = sample_values(d)
            assert _eq(op(op(xs)), op(xs))


def test_reduction_inits() -> None:
    f4, i1, u2, b = (np.dtype(t) for t in ("float32", "int8", "uint16", "bool"))
    assert REDUCTIONS["sum"].init_for(f4) == 0 and REDUCTIONS["sum"].init_for(f4).dtype == f4
    assert REDUCTIONS["prod"].init_for(i1) == 1
    assert REDUCTIONS["max"].init_for(f4) == -np.inf
    assert REDUCTIONS["max"].init_for(i1) == -128
    assert REDUCTIONS["min"].init_for(u2) == 65535
    assert REDUCTIONS["min"].init_for(f4) == np.inf
    assert REDUCTIONS["any"].init_for(b) == np.False_ and REDUCTIONS["all"].init_for(b)
    assert OPERATORS["bitwise_and"].init_for(u2) == 65535
    assert OPERATORS["subtract"].init_for(f4) is None
    assert all(op.is_reduction for op in REDUCTIONS.values())


def test_annihilators_and_strictness() -> None:
    mul, mx = OPERATORS["multiply"], OPERATORS["maximum"]
    assert mul.annihilator_for("float64") == 0
    assert mul.annihilator_for("float64", strict=True) is None
    assert mul.annihilator_for("int32", strict=True) == 0
    assert mx.annihilator_for("int8") == 127
    assert OPERATORS["logical_and"].annihilator_for("bool") == np.False_
    assert OPERATORS["add"].annihilator_for("float64") is None


def test_mapjoin_fill() -> None:
    mul = OPERATORS["multiply"]
    f = mapjoin_fill(mul, (np.float64(0), np.float64(np.nan)))
    assert np.isnan(f) and f.dtype == np.float64
    f = mapjoin_fill(OPERATORS["add"], (np.int8(0), 3))
    assert f == 3 and f.dtype == np.int8
    f = mapjoin_fill(OPERATORS["equal"], (np.float32(np.nan), np.float32(np.nan)))
    assert f == np.False_ and f.dtype == np.bool_
    f = mapjoin_fill(OPERATORS["divide"], (np.int32(1), np.int32(0)))
    assert f == np.inf and f.dtype == np.float64
    f = mapjoin_fill(OPERATORS["where"], (np.True_, np.float32(1), np.float32(2)))
    assert f == 1 and f.dtype == np.float32
    f = mapjoin_fill(astype_op("int16"), (np.float64(3.7),))
    assert f == 3 and f.dtype == np.int16
    assert isinstance(f, np.generic)


def test_aggregate_fill_and_dtype() -> None:
    add = OPERATORS["add"]
    assert aggregate_dtype(add, 0, np.dtype("int8")) == np.int8
    assert aggregate_dtype(add, np.int64(0), np.dtype("int8")) == np.int64
    assert aggregate_dtype(OPERATORS["logical_or"], False, np.dtype("float64")) == np.bool_
    f = aggregate_fill(OPERATORS["maximum"], -np.inf, np.dtype("float32"))
    assert f == -np.inf and f.dtype == np.float32
    with pytest.raises(TypeError):
        aggregate_dtype(OPERATORS["bitwise_or"], 0, np.dtype("float64"))


def test_apply_scalars_and_arrays() -> None:
    add = OPERATORS["add"]
    r = add(np.int8(100), np.int8(100))
    assert isinstance(r, np.generic) and r.dtype == np.int8 and r == -56
    r = add(np.arange(3, dtype=np.uint8), 1)
    assert r.dtype == np.uint8 and list(r) == [1, 2, 3]
    r = OPERATORS["floor_divide"](np.array([7, -7, 5]), np.array([2, 2, 0]))
    assert list(r) == [3, -4, 0]
    r = OPERATORS["sign"](np.array([-2.0, np.nan, 0.0]))
    assert r[0] == -1 and np.isnan(r[1]) and r[2] == 0
    r = OPERATORS["isequal"](np.array([np.nan, 1.0]), np.array([np.nan, 2.0]))
    assert list(r) == [True, False]
    r = OPERATORS["coalesce"](np.array([0.0, 5.0]), np.array([7.0, 8.0]), 0.0)
    assert list(r) == [7.0, 5.0]
    r = OPERATORS["clip"](np.array([-5, 3, 9], np.int8), 0, 5)
    assert r.dtype == np.int8 and list(r) == [0, 3, 5]
    r = OPERATORS["clip"](np.array([np.nan, 3.0]), 0.0, 1.0)
    assert np.isnan(r[0]) and r[1] == 1.0


@pytest.mark.parametrize("d", REPRESENTATIVE_DTYPES, ids=str)
def test_mapjoin_fill_has_result_dtype_for_every_op(d: np.dtype) -> None:
    for op in OPERATORS.values():
        if not accepts(op, d):
            continue
        for fill in (d.type(0), d.type(1)):
            fills = [np.True_ if (op.name == "where" and n == 0) else fill
                     for n in range(op.nargs)]
            try:
                f = mapjoin_fill(op, fills)
            except ValueError:  # integer 0 ** -1 style domain errors
                continue
            assert isinstance(f, np.generic)
            assert f.dtype == op.result_dtype(*[np.asarray(x).dtype for x in fills]), op
