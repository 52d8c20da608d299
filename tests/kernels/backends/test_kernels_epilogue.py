"""Epilogues: a map of the reduction's value, applied once per result entry in the reducing
kernel (normal form EPILOGUE). Checked against the interpreter and NumPy for every place an
entry becomes final: a scalar accumulator (in the loop, or in ``finalize`` when rows are
skipped), scattered in-place sums, per-chunk partials, folded fills, sparse appends,
workspaces and the NumPy executor."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from helpers import F, acc, agg, compute, dense, mj, plan, tensor

from lazysparse.kernels.backends import compile_query, execute_plan
from lazysparse.kernels.backends.numba.kernel import structure_key
from lazysparse.kernels.compile.planning.analysis import analyze_query
from lazysparse.kernels.compile.planning.output_plan import OutputMode
from lazysparse.logic import check_normal_form, interpret
from lazysparse.logic.nodes import Alias, Immediate, Reorder

RNG = np.random.default_rng(11)


def _matrix(shape=(13, 9), dtype=np.float64, fill=0.0, density=0.3):
    vals = (RNG.integers(1, 5, shape) if np.dtype(dtype).kind in "iu"
            else np.round(RNG.standard_normal(shape), 2))
    a = np.where(RNG.random(shape) < density, vals, fill).astype(dtype)
    a[2, :] = fill  # an empty row
    a[:, 3] = fill  # an empty column
    return a


def _run(p, expected=None):
    check_normal_form(p)
    (g,), (w,) = execute_plan(p), interpret(p)
    assert g.shape == w.shape and g.dtype == w.dtype
    np.testing.assert_allclose(dense(g), dense(w), rtol=1e-6, equal_nan=True)
    if expected is not None:
        np.testing.assert_allclose(dense(g), expected, rtol=1e-6, equal_nan=True)
        assert g.dtype == np.asarray(expected).dtype
    return g


def _row_sums(order=("i", "j")):
    return agg("add", 0.0, Reorder(acc("A", "i", "j"), F(*order)), "j")


def _kernel(p):
    env = {q.lhs: q.rhs.tns.val for q in p.bodies[:-1] if hasattr(q.rhs, "idxs")}
    return compile_query(p.bodies[-2], env)


@pytest.mark.parametrize("fmt", ["dense", "csr", "csc", "coo", "dcsr"])
def test_row_sums_divided_by_a_dense_vector(fmt):
    a = _matrix()
    d = np.arange(1.0, 14.0)
    order = ("j", "i") if fmt == "csc" else ("i", "j")
    body = mj("divide", agg("add", 0.0, Reorder(acc("A", "i", "j"), F(*order)), "j"),
              acc("d", "i"))
    p = plan({"A": tensor(a, fmt), "d": tensor(d)}, compute("out", "dense", 1, body))
    _run(p, a.sum(axis=1) / d)


@pytest.mark.parametrize("fmt", ["csr", "coo"])
def test_scattered_column_sums_apply_the_map_after_every_row(fmt):
    """``A.T @ x`` with row-major A: the reduced loop encloses the output loop, so the map
    runs in ``finalize`` over the whole output, after the last row is added in."""
    a, x = _matrix(), RNG.standard_normal(13)
    inner = agg("add", 0.0, Reorder(mj("multiply", acc("A", "i", "j"), acc("x", "i")),
                                    F("i", "j")), "i")
    body = mj("add", mj("multiply", Immediate(0.85), inner), Immediate(0.15 / 9))
    p = plan({"A": tensor(a, fmt), "x": tensor(x)}, compute("out", "dense", 1, body))
    k = _kernel(p)
    assert k.lowered.epilogue == "finalize" and "def finalize" in k.source
    _run(p, 0.85 * (a.T @ x) + 0.15 / 9)


def test_full_range_rows_apply_the_map_in_the_loop():
    a = _matrix()
    p = plan({"A": tensor(a, "csr")},
             compute("out", "dense", 1, mj("multiply", _row_sums(), Immediate(2.0))))
    k = _kernel(p)
    assert k.lowered.epilogue == "entry" and "def finalize" not in k.source
    _run(p, a.sum(axis=1) * 2.0)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float32, np.complex128])
def test_integer_mean_changes_the_dtype_after_the_reduction(dtype):
    """``mean`` of integers: the sum accumulates as an integer, the division is float."""
    a = _matrix(dtype=dtype, fill=0)
    body = mj("divide", agg("add", np.asarray(0, dtype)[()],
                            Reorder(acc("A", "i", "j"), F("i", "j")), "i"), Immediate(13))
    p = plan({"A": tensor(a, "csr")}, compute("out", "dense", 1, body))
    g = _run(p)
    np.testing.assert_allclose(dense(g), a.sum(axis=0) / 13, rtol=1e-5)


@pytest.mark.parametrize("fill", [0.0, 1.0, np.nan])
def test_folded_fill_is_added_before_the_map(fill):
    """A NaN/1-filled matrix: skipped entries are folded in by the host first."""
    a = _matrix(fill=fill)
    p = plan({"A": tensor(a, "csr", fill)},
             compute("out", "dense", 1, mj("subtract", Immediate(1.0), _row_sums())))
    _run(p, 1.0 - a.sum(axis=1))


def test_per_chunk_partials_are_combined_before_the_map():
    n = 5000
    a = _matrix((n, 4), density=0.5)
    body = mj("sqrt", agg("add", 0.0, Reorder(mj("multiply", acc("A", "i", "j"),
                                                  acc("A", "i", "j")), F("i", "j")), "i"))
    p = plan({"A": tensor(a, "csr")}, compute("out", "dense", 1, body))
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        k = _kernel(p)
        assert k.lowered.partials and k.lowered.epilogue == "finalize"
        _run(p, np.sqrt((a * a).sum(axis=0)))
    finally:
        numba.set_num_threads(old)


@pytest.mark.parametrize("out_fmt", ["csr", "dcsr"])
def test_sparse_output_maps_each_appended_entry(out_fmt):
    """A sparse result: the map runs as each entry is emitted; the fill is map(init)."""
    a = np.where(RNG.random((8, 6, 5)) < 0.2, 1.0, 0.0)
    t = tensor(a, "csf")
    body = mj("multiply", agg("add", 0.0, Reorder(acc("A", "i", "j", "k"), F("i", "j", "k")),
                              "k"), Immediate(3.0))
    p = plan({"A": t}, compute("out", out_fmt, 2, body))
    assert _kernel(p).lowered.output.mode is OutputMode.APPEND
    g = _run(p, a.sum(axis=2) * 3.0)
    assert g.format != "dense"


def test_sparse_workspace_output_maps_each_drained_entry():
    """Column sums of CSR into a compressed vector scatter through a workspace."""
    a = _matrix()
    body = mj("multiply", agg("add", 0.0, Reorder(acc("A", "i", "j"), F("i", "j")), "i"),
              Immediate(-1.0))
    p = plan({"A": tensor(a, "csr")}, compute("out", "csf", 1, body))
    assert _kernel(p).lowered.output.mode is OutputMode.ROWWS
    _run(p, -a.sum(axis=0))


def test_epilogue_fill_is_the_map_of_the_reductions_fill():
    a = _matrix()
    body = mj("add", agg("add", 0.0, Reorder(acc("A", "i", "j"), F("i", "j")), "j"),
              Immediate(5.0))
    p = plan({"A": tensor(a, "csr")}, compute("out", "dense", 1, body))
    g = _run(p)
    assert g.fill_value == 5.0


def test_small_dense_epilogue_runs_on_numpy():
    a, d = RNG.standard_normal((6, 5)), RNG.standard_normal(5)
    body = mj("add", agg("maximum", -np.inf, Reorder(acc("A", "i", "j"), F("i", "j")), "i"),
              acc("d", "j"))
    p = plan({"A": tensor(a), "d": tensor(d)}, compute("out", "dense", 1, body))
    _run(p, a.max(axis=0) + d)


def test_the_epilogue_is_part_of_the_kernel_key():
    a = _matrix()
    env = {Alias("A"): tensor(a, "csr")}
    keys = []
    for op in ("negative", "positive"):
        p = plan({"A": env[Alias("A")]},
                 compute("out", "dense", 1, mj(op, _row_sums())))
        q = p.bodies[-2]
        keys.append(structure_key(*analyze_query(q, env)))
        _run(p, (-1 if op == "negative" else 1) * a.sum(axis=1))
    assert keys[0] != keys[1]


def test_epilogue_constants_share_one_kernel():
    """``0.85 * y + c`` for different ``c``: constants are kernel arguments."""
    a = _matrix()
    ks = []
    for c in (0.5, 0.25):
        p = plan({"A": tensor(a, "csr")},
                 compute("out", "dense", 1, mj("add", _row_sums(), Immediate(c))))
        ks.append(_kernel(p).key)
        _run(p, a.sum(axis=1) + c)
    assert ks[0] == ks[1]


def test_sparse_epilogue_operand_is_rejected():
    a = _matrix()
    body = mj("add", _row_sums(), acc("B", "i"))
    p = plan({"A": tensor(a, "csr"), "B": tensor(a[:, 0], "coo")},
             compute("out", "dense", 1, body))
    with pytest.raises(ValueError, match="not stored dense"):
        check_normal_form(p)


def test_insert_sort_merge_output_maps_each_merged_entry():
    """Reducing the outermost of three loops into a 2-d sparse result: the entries are
    merged in an insert-sort-merge buffer, then mapped as they are emitted."""
    a = np.where(RNG.random((7, 6, 5)) < 0.25, RNG.standard_normal((7, 6, 5)), 0.0)
    body = mj("exp", agg("add", 0.0, Reorder(acc("A", "i", "j", "k"), F("i", "j", "k")), "i"))
    p = plan({"A": tensor(a, "csf")}, compute("out", "dcsr", 2, body))
    assert _kernel(p).lowered.output.mode is OutputMode.ISM
    g = _run(p, np.exp(a.sum(axis=0)))
    assert g.fill_value == 1.0


def test_shared_pattern_output_maps_each_stored_entry():
    """SDDMM then a map: the result reuses S's pattern and stores map(acc) per entry."""
    s = _matrix((9, 8))
    u, v = RNG.standard_normal((9, 4)), RNG.standard_normal((8, 4))
    inner = agg("add", 0.0, Reorder(mj("multiply", acc("S", "i", "j"),
                                       mj("multiply", acc("U", "i", "k"), acc("V", "j", "k"))),
                                    F("i", "j", "k")), "k")
    body = mj("multiply", inner, Immediate(0.5))
    p = plan({"S": tensor(s, "csr"), "U": tensor(u), "V": tensor(v)},
             compute("out", "csr", 2, body))
    assert _kernel(p).lowered.output.mode is OutputMode.SHARED
    _run(p, s * (u @ v.T) * 0.5)


@pytest.mark.parametrize("fmt, out_mode", [("dense", OutputMode.DENSE),
                                           ("csc", OutputMode.SHARED),
                                           ("csr", OutputMode.ISM)])
def test_result_reorder_writes_axes_in_another_order_than_the_loop(fmt, out_mode):
    """``-A.T`` looping over CSR A's rows: the result's axes are (j, i); stored (i, j) it
    shares A's pattern, stored (j, i) the writes go through a sort buffer."""
    a = _matrix()
    body = Reorder(Reorder(mj("negative", acc("A", "i", "j")), F("i", "j")), F("j", "i"))
    p = plan({"A": tensor(a, "csr")}, compute("out", fmt, 2, body))
    assert _kernel(p).lowered.output.mode is out_mode
    _run(p, -a.T)


def test_result_reorder_must_permute_the_result_axes():
    body = Reorder(Reorder(mj("negative", acc("A", "i", "j")), F("i", "j")), F("j", "k"))
    p = plan({"A": tensor(_matrix(), "csr")}, compute("out", "dense", 2, body))
    with pytest.raises(ValueError, match="not a permutation"):
        check_normal_form(p)
