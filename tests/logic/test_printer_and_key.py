"""Printer output and structural keys."""

from __future__ import annotations

import numpy as np

from lazysparse.formats import Tensor, format_spec
from lazysparse.logic import plan_parameters, structural_key
from lazysparse.logic.nodes import Alias, Field, Immediate, Relabel, Subquery
from tests.logic.plans import aggregate, i, j, k, mapjoin, matmul_normal_form, query_plan, table

A = Tensor.from_numpy(np.eye(4) * 2, "csr")


def test_printer_plan() -> None:
    B = Tensor.from_numpy(np.ones((4, 3)), "dense")
    text = str(matmul_normal_form(A, B))
    assert text.splitlines() == [
        "A = table(<csr 4x4 float64 nnz=4>, i, j)",
        "B = table(<dense 4x3 float64 nnz=12>, j, k)",
        "C = reformat(<dense>, aggregate(add, 0.0:float64, reorder(mapjoin(multiply, "
        "relabel(A, i, j), relabel(B, j, k)), i, j, k), j))",
        "return C",
    ]


def test_printer_expressions() -> None:
    e = mapjoin("multiply", Relabel(Alias("A1"), (i, j)), 3)
    assert str(e) == "mapjoin(multiply, relabel(A1, i, j), 3)"
    s = Subquery(Alias("S"), mapjoin("where", Field("c"), 1.5, Field("i")))
    assert str(s) == "(S = mapjoin(where, c, 1.5, i))"
    t = Tensor.from_numpy(np.full((2, 2), np.nan), "coo", np.nan)
    assert str(table(t, i, j)) == "table(<coo 2x2 float64 nnz=0 fill=nan>, i, j)"
    assert str(Immediate(format_spec("csf", 3, (2, 0, 1)))) == "<csf (2, 0, 1)>"
    assert str(aggregate("add", 0, table(np.zeros(3), k), k)) == (
        "aggregate(add, 0, table(<dense 3 float64 nnz=3>, k), k)")


def _scaled(a: Tensor, c: object, names: tuple[str, str] = ("i", "j")) -> object:
    f, g = Field(names[0]), Field(names[1])
    return query_plan(mapjoin("multiply", table(a, f, g), c))


def test_constants_become_parameters() -> None:
    p3, p4 = _scaled(A, 3), _scaled(A, 4)
    assert p3 != p4
    assert structural_key(p3) == structural_key(p4)
    assert plan_parameters(p3) == (3,) and plan_parameters(p4) == (4,)
    # the parameter keeps its kind: a Python float or a float32 is a different kernel
    assert structural_key(_scaled(A, 3.0)) != structural_key(p3)
    assert structural_key(_scaled(A, np.float32(3))) != structural_key(_scaled(A, 3.0))
    hash(structural_key(p3))


def test_data_is_abstracted_by_signature() -> None:
    other = Tensor.from_numpy(np.eye(4) * 5, "csr")
    assert structural_key(_scaled(A, 3)) == structural_key(_scaled(other, 3))
    csc = Tensor.from_numpy(np.eye(4), "csc")
    assert structural_key(_scaled(A, 3)) != structural_key(_scaled(csc, 3))
    f32 = Tensor.from_numpy(np.eye(4, dtype=np.float32), "csr")
    assert structural_key(_scaled(A, 3)) != structural_key(_scaled(f32, 3))
    nanfill = Tensor.from_numpy(np.eye(4), "csr", np.nan)
    assert structural_key(_scaled(A, 3)) != structural_key(_scaled(nanfill, 3))
    nanfill2 = Tensor.from_numpy(np.eye(4) * 7, "csr", np.nan)
    assert structural_key(_scaled(nanfill2, 3)) == structural_key(_scaled(nanfill, 3))
    big = Tensor.from_numpy(np.eye(40), "csr")  # shape is not part of the key
    assert structural_key(_scaled(A, 3)) == structural_key(_scaled(big, 3))
    arr = np.eye(4)
    assert structural_key(_scaled(arr, 3)) == structural_key(_scaled(np.ones((2, 2)), 3))
    assert structural_key(_scaled(arr, 3)) != structural_key(_scaled(arr.astype(np.int8), 3))


def test_names_are_canonical() -> None:
    assert structural_key(_scaled(A, 3, ("i", "j"))) == structural_key(_scaled(A, 3, ("p", "q")))
    # swapping roles of fields changes the key
    x = query_plan(mapjoin("add", table(A, i, j), table(A, i, j)))
    y = query_plan(mapjoin("add", table(A, i, j), table(A, j, i)))
    assert structural_key(x) != structural_key(y)


def test_ops_and_inits_are_in_the_key() -> None:
    s0 = query_plan(aggregate("add", 0.0, table(A, i, j), j))
    s1 = query_plan(aggregate("add", 1.0, table(A, i, j), j))
    m0 = query_plan(aggregate("maximum", 0.0, table(A, i, j), j))
    assert structural_key(s0) != structural_key(s1)
    assert structural_key(s0) != structural_key(m0)
    assert plan_parameters(s0) == ()
