"""Type promotion against the Array API 2024.12 table, Python scalars, dtype kinds."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from lazysparse.logic.dtypes import (
    ALL_DTYPES,
    as_dtype,
    assigned_scalar,
    can_store,
    check_assignable,
    check_in_place,
    isdtype,
    promote_types,
    result_type,
    scalar_as,
)

i1, i2, i4, i8 = (np.dtype(f"int{n}") for n in (8, 16, 32, 64))
u1, u2, u4, u8 = (np.dtype(f"uint{n}") for n in (8, 16, 32, 64))
f4, f8 = np.dtype("float32"), np.dtype("float64")
c8, c16 = np.dtype("complex64"), np.dtype("complex128")
b = np.dtype(bool)

# The standard's promotion table, written out by hand (not derived from NumPy).
STANDARD: dict[frozenset, np.dtype] = {}


def _std(x: np.dtype, y: np.dtype, r: np.dtype) -> None:
    STANDARD[frozenset((x, y))] = r


_std(b, b, b)
for seq in ((i1, i2, i4, i8), (u1, u2, u4, u8), (f4, f8), (c8, c16)):
    for x, y in itertools.combinations_with_replacement(seq, 2):
        _std(x, y, max(x, y, key=lambda d: d.itemsize))
for u, row in {u1: (i2, i2, i4, i8), u2: (i4, i4, i4, i8), u4: (i8, i8, i8, i8)}.items():
    for i, r in zip((i1, i2, i4, i8), row, strict=True):
        _std(u, i, r)
_std(f4, c8, c8)
_std(f4, c16, c16)
_std(f8, c8, c16)
_std(f8, c16, c16)


@pytest.mark.parametrize("pair", list(STANDARD), ids=lambda p: "-".join(sorted(map(str, p))))
def test_promotion_matches_standard_table(pair: frozenset) -> None:
    x, y = (tuple(pair) * 2)[:2]
    assert promote_types(x, y) == STANDARD[pair]
    assert promote_types(y, x, strict=True) == STANDARD[pair]
    assert result_type(np.empty(0, x), np.empty(0, y)) == STANDARD[pair]


def test_strict_rejects_pairs_outside_the_standard() -> None:
    for x, y in itertools.product(ALL_DTYPES, repeat=2):
        if frozenset((x, y)) in STANDARD:
            continue
        with pytest.raises(TypeError, match="does not define"):
            promote_types(x, y, strict=True)
        # non-strict follows NumPy
        assert promote_types(x, y) == np.promote_types(x, y)


@pytest.mark.parametrize(("arr", "scalar", "want"), [
    (i1, 1, i1), (u1, 3, u1), (f4, 1, f4), (f4, 1.5, f4), (f4, 1j, c8), (f8, 1j, c16),
    (c8, 2.5, c8), (b, True, b), (i1, True, i1), (f4, False, f4), (i4, 1.5, f8),
    (b, 3, i8), (b, 1.0, f8), (i2, 1j, c16),
])
def test_python_scalars_are_weak(arr: np.dtype, scalar: object, want: np.dtype) -> None:
    assert result_type(arr, scalar) == want
    assert result_type(scalar, np.zeros(2, arr)) == want


def test_python_scalars_alone_use_defaults() -> None:
    assert result_type(1) == i8
    assert result_type(1, 2.0) == f8
    assert result_type(True) == b
    assert result_type(1, 1j) == c16


def test_numpy_scalars_are_strong() -> None:
    assert result_type(np.float64(1), f4) == f8
    assert result_type(np.int8(1), np.int16(1)) == i2


def test_unsupported_dtypes_rejected() -> None:
    for bad in ("float16", "object", "U3", "datetime64[s]"):
        with pytest.raises(TypeError, match="unsupported data type|not a data type"):
            as_dtype(bad)
    with pytest.raises(TypeError):
        result_type(np.zeros(2, np.float16), 1)
    with pytest.raises(ValueError):
        result_type()


def test_isdtype_kinds() -> None:
    assert isdtype(i4, "signed integer") and not isdtype(u4, "signed integer")
    assert isdtype(u4, "integral") and isdtype(u4, "numeric") and not isdtype(b, "numeric")
    assert isdtype(c8, "floating-point") and not isdtype(c8, "real floating")
    assert isdtype(f4, ("bool", "real floating"))
    assert isdtype(b, "integer or boolean") and isdtype(b, b)
    with pytest.raises(ValueError, match="unknown dtype kind"):
        isdtype(f4, "fuzzy")


def test_scalar_as_checks_range() -> None:
    assert scalar_as(3, i1) == 3 and scalar_as(3, i1).dtype == i1
    with pytest.raises(OverflowError, match="out of bounds for int8"):
        scalar_as(300, i1)
    with pytest.raises(TypeError, match="complex"):
        scalar_as(1 + 2j, f8)
    with pytest.raises(ValueError):
        scalar_as(float("nan"), i4)
    assert np.isnan(scalar_as(float("nan"), f4))


# --- casting on writes (in-place operators, setitem) ------------------------------------

def test_can_store_is_numpys_same_kind() -> None:
    for x, y in itertools.product(ALL_DTYPES, repeat=2):
        assert can_store(x, y) == np.can_cast(x, y, casting="same_kind"), (x, y)
    assert can_store(f8, f4) and can_store(i8, i1) and not can_store(i1, u1)
    with pytest.raises(TypeError, match=r"x /= y.*float64.*int64.*same_kind"):
        check_in_place("x /= y", f8, i8)
    check_in_place("x += y", i8, i1)  # narrowing within a kind is allowed


def test_check_assignable_refuses_only_dropping_imaginary_parts() -> None:
    for x, y in itertools.product(ALL_DTYPES, repeat=2):
        drops = x.kind == "c" and y.kind in "iuf"
        if drops:
            with pytest.raises(TypeError, match=f"{x}.*{y}"):
                check_assignable(x, y)
        else:
            check_assignable(x, y)  # casts as NumPy's assignment (unsafe)


@pytest.mark.parametrize("value", [True, 0, 2, 300, -1, 2**70, 2.7, -1.5, 1e30, float("nan"),
                                   float("inf"), 1j, 1 + 0j])
@pytest.mark.parametrize("dtype", ["bool", "int8", "int64", "uint8", "float32", "float64",
                                   "complex128"])
def test_assigned_scalar_matches_numpy_assignment(dtype: str, value: object) -> None:
    a = np.zeros(1, dtype=dtype)
    try:
        a[0] = value
    except (TypeError, ValueError, OverflowError) as e:
        with pytest.raises(type(e)):
            assigned_scalar(value, dtype)
        return
    out = assigned_scalar(value, dtype)
    assert out.dtype == a.dtype
    np.testing.assert_array_equal(out, a[0])
