"""Complex special values match NumPy's (C99 Annex G) on every path (issue 13, item 5).

NumPy computes complex ``exp``, ``sin``, ``atanh``... with the C library, whose values at
infinities, NaNs and overflow Annex G fixes (``exp(1e300 + 0j)`` is ``inf + 0j``); Numba's
``cmath`` follows Python's instead (``inf + nanj``). The operators' Numba forms
(``lazysparse.kernels.backends.numba.ops``) must give NumPy's values, so that a small array (run by
the NumPy executor) and a large one (a compiled kernel) agree. Signs of zeros Annex G leaves
unspecified are not compared; NaN and infinity positions, signs of infinities and finite
values are.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from numba import njit

import lazysparse as xp
from lazysparse.kernels.backends.numba import cache
from lazysparse.kernels.backends.numba.codegen import NUMBA_GLOBALS
from lazysparse.kernels.compile.planning.runners import NUMPY_MAX_ITERATIONS
from lazysparse.logic.operators import OPERATORS, Operator
from tests.conftest import slow_except

UNARY = ["exp", "log", "log2", "log10", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh",
         "asin", "acos", "atan", "asinh", "acosh", "atanh", "expm1", "log1p", "reciprocal",
         "sign"]
DTYPES = [np.dtype("complex64"), np.dtype("complex128")]
FAST_DTYPES = (np.dtype("complex128"),)  # the fast tier's compiled complex kernels
#: the fast tier's compiled complex functions: an exp/log pair, a root, a trig, an inverse
#: hyperbolic (branch cuts) and sign
FAST_UNARY = ("exp", "log", "sqrt", "tan", "acosh", "sign")


def special_values(d: np.dtype) -> np.ndarray:
    """Every pair of parts from zeros, ones, large values, values past ``exp``'s overflow,
    subnormals, infinities and NaN, at dtype ``d``."""
    f32 = d == np.complex64
    big, ovf, tiny = (1e30, 100.0, 1e-40) if f32 else (1e300, 800.0, 1e-310)
    parts = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, np.pi / 2, big, -big, ovf, -ovf, tiny,
             np.inf, -np.inf, np.nan]
    return np.array([complex(r, i) for r, i in itertools.product(parts, parts)], dtype=d)


def power_values(d: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """Bases and exponents for ``pow``: all pairs of moderate and special values (huge
    exponents are ill-conditioned: float32 rounding alone flips their signs)."""
    parts = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, np.inf, -np.inf, np.nan]
    vals = np.array([complex(r, i) for r, i in itertools.product(parts, parts)], dtype=d)
    a, b = np.meshgrid(vals, vals)
    return a.ravel(), b.ravel()


def _mismatches(got: np.ndarray, want: np.ndarray) -> list[int]:
    """Positions where ``got`` differs from ``want``: NaN where the other is not, another
    infinity, or finite parts further apart than a few ulps of ``|want|``."""
    rtol = 1e-5 if want.dtype == np.complex64 else 1e-12
    scale = np.where(np.isfinite(np.abs(want)), np.abs(want), 0.0)
    bad = np.zeros(want.shape, dtype=bool)
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        nan_g, nan_w = np.isnan(g), np.isnan(w)
        inf_g, inf_w = np.isinf(g), np.isinf(w)
        with np.errstate(invalid="ignore"):
            far = np.abs(g - w) > rtol * np.maximum(scale, np.abs(w)) + 1e-37
        bad |= (nan_g != nan_w) | (inf_g != inf_w) | (inf_w & (g != w))
        bad |= ~(nan_g | nan_w | inf_g | inf_w) & far
    return np.nonzero(bad)[0].tolist()


def _assert_matches(name: str, args: list[np.ndarray], got: np.ndarray,
                    want: np.ndarray) -> None:
    bad = _mismatches(np.asarray(got), np.asarray(want))
    shown = [(tuple(a[k] for a in args), got[k], want[k]) for k in bad[:6]]
    assert not bad, f"{name}: {len(bad)} values differ from NumPy (args, got, numpy): {shown}"


def _numpy(name: str, *args: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(OPERATORS[name].apply(*args))


def _build(ops: list[Operator], d: np.dtype):
    """One njit function applying each op's Numba form elementwise: f(outs..., ins...)."""
    lines, params = [], []
    for n, op in enumerate(ops):
        args = [f"x{n}_{i}[k]" for i in range(op.nargs)]
        params += [f"o{n}"] + [f"x{n}_{i}" for i in range(op.nargs)]
        form = op.numba_expr(args, op.operand_dtypes(*[d] * op.nargs))
        lines.append(f"    for k in range(o{n}.shape[0]):\n        o{n}[k] = {form}")
    src = f"def f({', '.join(params)}):\n" + "\n".join(lines) + "\n"
    ns = dict(NUMBA_GLOBALS)
    exec(compile(src, f"<complex forms {d}>", "exec"), ns)
    return njit(error_model="numpy")(ns["f"])


@pytest.mark.parametrize("d", slow_except(DTYPES, FAST_DTYPES), ids=str)
def test_numba_forms_give_numpys_special_values(d: np.dtype) -> None:
    ops = [OPERATORS[n] for n in UNARY] + [OPERATORS["pow"]]
    z = special_values(d)
    inputs = [[z]] * len(UNARY) + [list(power_values(d))]
    call, outs = [], []
    for args in inputs:
        out = np.empty(len(args[0]), dtype=d)
        call += [out, *args]
        outs.append(out)
    with np.errstate(all="ignore"):
        _build(ops, d)(*call)
    for op, args, out in zip(ops, inputs, outs, strict=True):
        _assert_matches(f"{op.name} {d}", args, out, _numpy(op.name, *args))


def test_exp_overflow_is_inf_plus_zero_j() -> None:
    """The issue's case: ``inf+nanj`` compiled, ``inf+0j`` small, ``inf+0j`` in NumPy."""
    f = _build([OPERATORS["exp"]], np.dtype("complex128"))
    out = np.empty(2, dtype=np.complex128)
    f(out, np.array([1e300 + 0j, complex(800.0, -0.0)]))
    assert out[0] == complex(np.inf, 0.0) and out[1] == complex(np.inf, -0.0)
    assert np.signbit(out[1].imag)


def _on_both_paths(fn, *arrays: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``fn`` of the arrays as small lazysparse arrays (NumPy executor) and as arrays tiled
    past the executor's size limit (a compiled kernel), the latter cut back to size."""
    reps = NUMPY_MAX_ITERATIONS // len(arrays[0]) + 1
    before = cache.STATS["numpy"]
    small = np.asarray(fn(*(xp.asarray(a) for a in arrays)))
    assert cache.STATS["numpy"] == before + 1
    big = np.asarray(fn(*(xp.asarray(np.tile(a, reps)) for a in arrays)))
    assert cache.STATS["numpy"] == before + 1
    return small, big[:len(arrays[0])]


@pytest.mark.parametrize("d", slow_except(DTYPES, FAST_DTYPES), ids=str)
@pytest.mark.parametrize("name", slow_except(UNARY, FAST_UNARY))
def test_small_and_compiled_paths_agree_with_numpy(name: str, d: np.dtype) -> None:
    z = special_values(d)
    want = _numpy(name, z)
    with np.errstate(all="ignore"):
        small, compiled = _on_both_paths(getattr(xp, name), z)
    assert small.dtype == compiled.dtype == want.dtype
    _assert_matches(f"{name} {d} (NumPy executor)", [z], small, want)
    _assert_matches(f"{name} {d} (compiled)", [z], compiled, want)


@pytest.mark.parametrize("d", slow_except(DTYPES, FAST_DTYPES), ids=str)
def test_power_paths_agree_with_numpy(d: np.dtype) -> None:
    a, b = power_values(d)
    want = _numpy("pow", a, b)
    with np.errstate(all="ignore"):
        small, compiled = _on_both_paths(xp.pow, a, b)
    _assert_matches(f"pow {d} (NumPy executor)", [a, b], small, want)
    _assert_matches(f"pow {d} (compiled)", [a, b], compiled, want)
