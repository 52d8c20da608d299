"""Every operator's Numba form, compiled with Numba, agrees with its NumPy form."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from lazysparse.kernels.backends.numba.codegen import NUMBA_GLOBALS
from lazysparse.logic.operators import OPERATORS, Operator, astype_op
from tests.conftest import slow_except
from tests.logic.op_samples import REPRESENTATIVE_DTYPES, accepts, operand_grid

ALL_OPS: list[Operator] = [*OPERATORS.values(),
                           *(astype_op(t) for t in ("bool", "int8", "uint32", "float32",
                                                    "complex128"))]


def _build(ops: list[Operator], d: np.dtype):
    """One njit function applying each op elementwise: f(outs..., ins...)."""
    lines, params = [], []
    for n, op in enumerate(ops):
        operands = op.operand_dtypes(*([np.dtype(bool)] if op.name == "where" else [])
                                     + [d] * (op.nargs - (op.name == "where")))
        args = [f"x{n}_{i}[k]" for i in range(op.nargs)]
        params += [f"o{n}"] + [f"x{n}_{i}" for i in range(op.nargs)]
        lines.append(f"    for k in range(o{n}.shape[0]):\n"
                     f"        o{n}[k] = {op.numba_expr(args, operands)}")
    src = f"def f({', '.join(params)}):\n" + "\n".join(lines) + "\n"
    ns = dict(NUMBA_GLOBALS)
    exec(compile(src, f"<numba-forms {d}>", "exec"), ns)
    return njit(error_model="numpy")(ns["f"]), src


def _check(op: Operator, d: np.dtype, got: np.ndarray, cols: list[np.ndarray]) -> None:
    want = np.asarray(op.apply(*cols))
    assert got.dtype == want.dtype
    rtol = 2e-5 if want.dtype in (np.float32, np.complex64) else 1e-12
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * 1e-3, equal_nan=True,
                                   err_msg=f"{op!r} at {d}: inputs {cols}")
    else:
        np.testing.assert_array_equal(got, want, err_msg=f"{op!r} at {d}: inputs {cols}")


# int32 is left out to save compile time: int8 and int64 bracket it
NUMBA_DTYPES = [d for d in REPRESENTATIVE_DTYPES if d != np.dtype("int32")]
# the fast tier compiles every operator once for a float and once for an integer dtype
FAST_DTYPES = (np.dtype("float64"), np.dtype("int64"))


@pytest.mark.parametrize("d", slow_except(NUMBA_DTYPES, FAST_DTYPES), ids=str)
def test_numba_forms_match_numpy(d: np.dtype) -> None:
    ops = [op for op in ALL_OPS if accepts(op, d)]
    assert ops
    f, src = _build(ops, d)
    call_args, expected = [], []
    for op in ops:
        cols = operand_grid(op, d)
        operands = op.operand_dtypes(*[c.dtype for c in cols])
        cast = [c.astype(o) for c, o in zip(cols, operands, strict=True)]
        out = np.empty(len(cols[0]), dtype=op.result_dtype(*[c.dtype for c in cols]))
        call_args += [out, *cast]
        expected.append((op, out, cols))
    with np.errstate(all="ignore"):
        f(*call_args)
    for op, out, cols in expected:
        _check(op, d, out, cols)


def test_numba_integer_pow_negative_exponent_raises() -> None:
    op = OPERATORS["pow"]
    f, _ = _build([op], np.dtype("int64"))
    out = np.empty(1, dtype=np.int64)
    with pytest.raises(ValueError, match="negative integer powers"):
        f(out, np.array([2]), np.array([-1]))
