"""Random plans: the optimized plan computes what the original computes (logic.interpret is
the oracle), and the result is in normal form."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lazysparse.formats import Tensor
from lazysparse.logic.operators import get_operator
from lazysparse.optimizer import optimize
from tests.conftest import examples
from tests.optimizer.normal_form_check import assert_normal_form
from tests.optimizer.plans import (
    Lz,
    asformat,
    ew,
    expand,
    leaf,
    matmul,
    oracle,
    permute,
    plan_of,
    reduce,
)

FORMATS = ("dense", "csr", "csc", "coo", "dcsr")
DTYPES = ("float64", "int64", "float32", "int8", "uint8", "complex128", "bool")


def _ops(dtype: str) -> tuple[tuple[str, ...], str, str, object, str]:
    """(binary ops, multiply, add, add's init, max-like reduction) for a dtype."""
    if dtype == "bool":
        return ("logical_and", "logical_or", "logical_xor"), "logical_and", "logical_or", \
            np.False_, "logical_and"
    if dtype.startswith("complex"):
        return ("add", "multiply", "subtract"), "multiply", "add", np.dtype(dtype).type(0), "add"
    return ("add", "multiply", "subtract", "maximum"), "multiply", "add", \
        np.dtype(dtype).type(0), "maximum"


@st.composite
def matrices(draw: st.DrawFn, n: int, dtype: str) -> Tensor:
    fmt = draw(st.sampled_from(FORMATS))
    fills = (0, 0, 1, float("nan")) if dtype.startswith(("float", "complex")) else (0, 0, 1)
    fill = draw(st.sampled_from(fills))
    vals = draw(st.lists(st.sampled_from((0, 0, 0, 1, 2, 3)), min_size=n * n, max_size=n * n))
    arr = np.array(vals).reshape(n, n).astype(dtype)
    if dtype.startswith(("float", "complex")) and draw(st.booleans()):
        arr[arr == 3] = np.nan
    return Tensor.from_numpy(arr, fmt, np.asarray(fill).astype(dtype)[()])


@st.composite
def programs(draw: st.DrawFn) -> tuple[Lz, ...]:
    n = draw(st.integers(0, 4))
    dtype = draw(st.sampled_from(DTYPES))
    binary, mul, add, zero, red_max = _ops(dtype)
    pool: list[Lz] = [leaf(draw(matrices(n, dtype))) for _ in range(3)]
    vec = np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))).astype(dtype)
    vecs: list[Lz] = [leaf(Tensor.from_numpy(vec, draw(st.sampled_from(("dense", "coo")))))]
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(("ew", "ewvec", "ewcol", "scalar", "transpose", "matmul",
                                     "matvec", "reduce", "masked", "asformat")))
        m1, m2, m3 = (draw(st.sampled_from(pool)) for _ in range(3))
        v = draw(st.sampled_from(vecs))
        op = draw(st.sampled_from(binary))
        if kind == "ew":
            pool.append(ew(op, m1, m2))
        elif kind == "ewvec":
            pool.append(ew(op, m1, v))
        elif kind == "ewcol":
            pool.append(ew(op, m1, expand(v, 1)))
        elif kind == "scalar":
            c = draw(st.sampled_from((False, True) if dtype == "bool" else (0, 1, 2)))
            pool.append(ew(op, m1, c))
        elif kind == "transpose":
            pool.append(permute(m1, (1, 0)))
        elif kind == "matmul":
            pool.append(matmul(m1, m2, mul, add, zero))
        elif kind == "matvec":
            vecs.append(matmul(m1, v, mul, add, zero))
        elif kind == "masked":
            pool.append(ew(mul, m1, matmul(m2, permute(m3, (1, 0)), mul, add, zero)))
        elif kind == "asformat":
            pool.append(asformat(m1, draw(st.sampled_from(("csr", "csc", "dense", "coo")))))
        else:
            red = draw(st.sampled_from((add, red_max)))
            init = zero if red == add else get_operator(red).init_for(dtype)
            axes = draw(st.sampled_from(((0,), (1,), (0, 1))))
            keep = draw(st.booleans())
            out = reduce(red, m1, axes, init=init, keepdims=keep)
            (pool if len(out.shape) == 2 else vecs).append(out)
    outs = [pool[-1]]
    if draw(st.booleans()):
        outs.append(draw(st.sampled_from(vecs)))
    return tuple(outs)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_optimized_plan_matches_oracle(outs: tuple[Lz, ...]) -> None:
    plan = plan_of(*outs)
    opt = optimize(plan)
    assert_normal_form(opt)
    want = oracle(plan)
    got = oracle(opt)
    assert len(want) == len(got)
    for w, g in zip(want, got, strict=True):
        assert w.shape == g.shape
        assert w.dtype == g.dtype
        np.testing.assert_allclose(g, w, rtol=1e-5)
