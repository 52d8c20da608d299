"""Metadata inference agrees with what the interpreter produces."""

from __future__ import annotations

import numpy as np
import pytest

from lazysparse.formats import Tensor
from lazysparse.logic import infer, infer_dtype, infer_fill, infer_shape, interpret
from lazysparse.logic.nodes import Alias, Field, Immediate, MapJoin, Relabel, Reorder
from lazysparse.logic.operators import astype_op
from tests.logic.plans import aggregate, i, j, k, m, mapjoin, query_plan, table

A = Tensor.from_numpy(np.arange(12, dtype=np.int8).reshape(3, 4), "csr")
F = Tensor.from_numpy(np.full((3, 4), np.nan, dtype=np.float32), "coo", np.nan)

EXPRS = [
    mapjoin("add", table(A, i, j), 3),
    mapjoin("multiply", table(A, i, j), table(F, i, j)),
    mapjoin("add", table(F, i, j), 1.0),
    mapjoin("divide", table(A, i, j), 2),
    aggregate("add", np.int64(0), table(A, i, j), j),
    aggregate("maximum", np.float32(-np.inf), table(F, i, j), i, j),
    Reorder(mapjoin("sqrt", table(A, i, j)), (j, m, i)),
    mapjoin("where", mapjoin("greater", table(A, i, j), 5), Field("j"), -1),
    mapjoin("less", table(A, i, j), table(np.ones(4, np.float32), j)),
    aggregate("logical_or", False, table(A, i, j), i),
    MapJoin(Immediate(astype_op("complex64")), (table(F, i, j),)),
    Reorder(mapjoin("add", table(A, i, j), table(np.ones(5), k)), (k, j, i)),
]


@pytest.mark.parametrize("expr", EXPRS, ids=lambda e: str(e)[:60])
def test_inference_matches_interpreter(expr) -> None:  # noqa: ANN001
    (t,) = interpret(query_plan(expr))
    assert infer_dtype(expr) == t.dtype
    assert infer_shape(expr) == t.shape
    f = infer_fill(expr)
    assert f.dtype == t.dtype
    assert (np.isnan(f) and np.isnan(t.fill_value)) or f == t.fill_value


def test_inference_with_alias_env_and_weak_scalars() -> None:
    env = {Alias("X"): A}
    info = infer(mapjoin("multiply", Relabel(Alias("X"), (i, j)), 2), env)
    assert info.fields == (i, j) and info.shape == (3, 4) and info.dtype == np.int8
    info = infer(mapjoin("add", 1, 2.5))
    assert info.dtype == np.float64 and info.shape == ()
    assert infer_dtype(mapjoin("add", 1, 2)) == np.int64
    with pytest.raises(ValueError, match="not bound"):
        infer(Relabel(Alias("Y"), (i,)), env)
    with pytest.raises(ValueError, match="drops field"):
        infer(Reorder(table(A, i, j), (i,)))
    with pytest.raises(TypeError, match="bitwise_and"):
        infer(mapjoin("bitwise_and", table(F, i, j), 1))
