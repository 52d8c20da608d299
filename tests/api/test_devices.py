"""Devices in the api: ``Device``, ``__array_namespace_info__().devices()``, the clear error
for ``device="cuda"`` without CuPy, the build-time mixing check, lazy CuPy import, and
computing on device ``cuda``.

Three kinds of tests:
- plain ones run everywhere (no CuPy needed);
- ``emulated`` ones run the api end to end on "device" arrays with NumPy standing in for
  CuPy and the CPU emulator of the generated CUDA kernels standing in for
  ``cupy.RawModule`` (``tests/kernels/backends/cuda/emulator.py``): this checks the api wiring
  (placement, executor choice, results coming back), not a GPU;
- ``gpu``-marked ones need CuPy and a CUDA device (skipped otherwise).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import lazysparse as xp
import lazysparse.formats.device as dev
import lazysparse.kernels.backends.cuda.runtime as rt
from lazysparse.api.array import materialize as computing
from lazysparse.api.array.lazy_array import CPU, Device, LazyArray
from lazysparse.api.array.plan_nodes import fresh_alias, fresh_fields
from lazysparse.formats.device import DeviceTensor
from lazysparse.logic.nodes import Immediate, Subquery, Table
from tests.api.test_random_expressions import PHASES as RANDOM_PHASES
from tests.api.test_random_expressions import programs as random_programs
from tests.conftest import examples, slow_except

ROOT = Path(__file__).resolve().parents[2]
CUDA_ERROR = "CuPy with a CUDA device is required for device='cuda'"


def _real_gpu() -> bool:
    return dev.cuda_available()


# --- devices and the namespace's inspection ---

def test_device_objects() -> None:
    assert Device("cpu") == CPU == "cpu"
    assert Device("cuda") == "cuda" and Device("cuda") != CPU
    assert hash(Device("cuda")) == hash(Device("cuda"))
    assert len({Device("cpu"), CPU, Device("cuda")}) == 2
    assert repr(Device("cuda")) == "Device('cuda')"
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        Device("tpu")
    assert xp.asarray([1.0]).device == CPU


def test_info_devices_without_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dev, "cuda_available", lambda: False)
    info = xp.__array_namespace_info__()
    assert info.devices() == [CPU]
    assert info.default_device() == CPU
    assert info.dtypes(device="cuda")["float64"] == np.float64  # same dtypes on both
    with pytest.raises(ValueError, match="unsupported device"):
        info.dtypes(device="tpu")


def test_info_devices_here() -> None:
    devices = xp.__array_namespace_info__().devices()
    assert devices[0] == CPU
    assert devices[1:] == ([Device("cuda")] if _real_gpu() else [])


@pytest.mark.parametrize("make", [
    lambda: xp.asarray([1.0, 2.0], device="cuda"),
    lambda: xp.asarray([1.0, 2.0]).to_device("cuda"),
    lambda: xp.asarray(np.eye(3), device=Device("cuda")),
    lambda: xp.zeros((2, 2), device="cuda"),
    lambda: xp.ones(3, device="cuda"),
    lambda: xp.eye(3, device="cuda"),
    lambda: xp.arange(4, device="cuda"),
    lambda: xp.linspace(0, 1, 5, device="cuda"),
    lambda: xp.zeros_like(xp.ones(2), device="cuda"),
])
def test_cuda_without_cupy_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, make: Any) -> None:
    monkeypatch.setattr(dev, "cuda_available", lambda: False)
    with pytest.raises(ValueError, match=r"CuPy with a CUDA device is required for "
                                         r"device='cuda'; install lazysparse\[gpu\]"):
        make()


@pytest.mark.parametrize("bad", ["tpu", "cuda:0", 3, "CPU"])
def test_unknown_device(bad: Any) -> None:
    with pytest.raises(ValueError, match="unsupported device"):
        xp.asarray([1.0], device=bad)
    with pytest.raises(ValueError, match="unsupported device"):
        xp.asarray([1.0]).to_device(bad)


def test_cpu_device_is_a_no_op() -> None:
    a = xp.asarray([[1.0, 0.0], [0.0, 2.0]], format="csr")
    assert a.to_device("cpu") is a and a.to_device(CPU) is a
    assert xp.asarray(a, device="cpu") is a
    assert xp.zeros_like(a).device == CPU
    assert a.__dlpack_device__() == (1, 0)


def test_importing_lazysparse_does_not_import_cupy(tmp_path: Path) -> None:
    # a "cupy" that fails on import: ordinary use must never touch it
    poisoned = tmp_path / "cupy"
    poisoned.mkdir()
    (poisoned / "__init__.py").write_text("raise RuntimeError('cupy was imported')\n")
    code = textwrap.dedent("""
        import sys
        import numpy as np
        import scipy.sparse as sp
        import lazysparse as xp
        a = xp.asarray(sp.random(20, 20, density=0.2, format="csr", random_state=0))
        v = xp.asarray(np.arange(20.0))
        y = np.asarray(a @ v + 1)
        assert y.shape == (20,)
        assert xp.asarray([1, 2]).to_device("cpu").device == "cpu"
        assert "cupy" not in sys.modules, "cupy imported"
        assert "cupyx" not in sys.modules, "cupyx imported"
        print("ok")
    """)
    env = {"PYTHONPATH": f"{tmp_path}:{ROOT / 'src'}", "LAZYSPARSE_EXECUTOR": "reference",
           "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"


# --- the build-time mixing check (no CuPy needed: a cuda-labelled array over host data) ---

def _fake_cuda(a: np.ndarray, fmt: str = "dense") -> LazyArray:
    """A LazyArray that says it lives on cuda but holds host data: enough to build plans."""
    t = xp.asarray(a, format=fmt).result
    expr = Subquery(fresh_alias(), Table(Immediate(t), fresh_fields(t.ndim)))
    return LazyArray(expr, t.shape, t.dtype, t.fill_value, Device("cuda"))


MIXES = {
    "add": lambda g, c: g + c,
    "radd": lambda g, c: c + g,
    "multiply": lambda g, c: xp.multiply(c, g),
    "where": lambda g, c: xp.where(c > 0, g, c),
    "matmul": lambda g, c: g @ c,
    "rmatmul": lambda g, c: c @ g,
    "tensordot": lambda g, c: xp.tensordot(c, g, axes=1),
    "einsum": lambda g, c: xp.einsum("ij,jk->ik", c, g),
    "concat": lambda g, c: xp.concat([c, g]),
    "stack": lambda g, c: xp.stack([g, c]),
    "maximum": lambda g, c: xp.maximum(g, c),
    "compute": lambda g, c: xp.compute(g, c),
}


@pytest.mark.parametrize("name", sorted(MIXES))
def test_mixing_devices_is_a_value_error(name: str) -> None:
    rng = np.random.default_rng(0)
    g = _fake_cuda(rng.random((3, 3)))
    c = xp.asarray(rng.random((3, 3)), format="csr")
    with pytest.raises(ValueError, match="different devices"):
        MIXES[name](g, c)


def test_same_device_builds() -> None:
    g = _fake_cuda(np.eye(3), "csr")
    h = _fake_cuda(np.ones((3, 3)))
    for out in (g + h, g @ h, xp.where(g > 0, g, h), xp.sum(g, axis=0), g.T,
                xp.broadcast_to(h, (2, 3, 3)), xp.einsum("ij,jk->ik", g, h)):
        assert out.device == Device("cuda")
    assert (xp.asarray(np.ones(3)) + 1).device == CPU


# --- end to end on "device" arrays: NumPy for CuPy, the kernel emulator for RawModule ---

def _emulation(monkeypatch: pytest.MonkeyPatch) -> None:
    """EMULATION: CuPy replaced by NumPy, ``RawModule`` by the CPU emulator of the
    generated CUDA source; checks the api wiring, not a GPU."""
    from tests.kernels.backends.cuda.emulator import CXX, EMULATION

    if CXX is None:
        pytest.skip("no host C++ compiler for the kernel emulator")
    for mod, name, value in EMULATION:
        monkeypatch.setattr(mod, name, value)
    rt.clear_cache()


@pytest.fixture(params=["emulated", pytest.param("gpu", marks=pytest.mark.gpu)])
def on_device(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """``"emulated"`` (NumPy + kernel emulator) or ``"gpu"`` (CuPy on a real device)."""
    if request.param == "emulated":
        _emulation(monkeypatch)
    elif not _real_gpu():
        pytest.skip("needs CuPy and a CUDA device")
    yield request.param
    rt.clear_cache()


def _host(x: Any) -> np.ndarray:
    """A device result as NumPy, through ``to_device('cpu')``."""
    y = x.to_device("cpu")
    assert y.device == CPU and not isinstance(y.result, DeviceTensor)
    return np.asarray(y)


def _reference(fn: Any, *arrays: np.ndarray, fmts: tuple[str, ...],
               monkeypatch: pytest.MonkeyPatch) -> np.ndarray:
    """``fn`` on cpu arrays run by the reference interpreter."""
    with monkeypatch.context() as m:
        m.setenv("LAZYSPARSE_EXECUTOR", "reference")
        out = fn(*(xp.asarray(a, format=f) for a, f in zip(arrays, fmts, strict=True)))
        return np.asarray(out)


def _sparse(rng: np.random.Generator, shape: tuple[int, ...], density: float,
            dtype: Any = np.float64) -> np.ndarray:
    a = rng.random(shape) * (rng.random(shape) < density)
    return (a * 10).astype(dtype) if np.dtype(dtype).kind in "iu" else a.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.complex128, np.bool_])
def test_round_trip(on_device: str, dtype: Any) -> None:
    rng = np.random.default_rng(1)
    a = _sparse(rng, (6, 5), 0.4, dtype)
    for fmt in ("dense", "csr", "csc", "coo"):
        g = xp.asarray(a, device="cuda", format=fmt)
        assert g.device == Device("cuda") and isinstance(g.result, DeviceTensor)
        assert g.dtype == a.dtype and g.shape == a.shape
        np.testing.assert_array_equal(_host(g), a)
        back = xp.asarray(a, format=fmt).to_device("cuda").to_device("cpu")
        np.testing.assert_array_equal(np.asarray(back), a)
    z = xp.asarray(np.asarray(3.5), device="cuda")  # 0-d
    assert z.shape == () and float(z) == 3.5
    e = xp.asarray(np.zeros((0, 4)), device="cuda")  # empty
    assert _host(e).shape == (0, 4)


CASES = {
    "spmv": (lambda a, x: a @ x, ((40, 30), (30,)), ("csr", "dense")),
    "spgemm": (lambda a, b: a @ b, ((25, 30), (30, 20)), ("csr", "csr")),
    "sddmm": (lambda s, u, v: s * (u @ v), ((20, 18), (20, 6), (6, 18)),
              ("csr", "dense", "dense")),
    "add": (lambda a, b: a + b, ((30, 25), (30, 25)), ("csr", "csr")),
    "rowsum": (lambda a: xp.sum(a, axis=1), ((30, 25),), ("csr",)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_compute_on_device(on_device: str, name: str,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    fn, shapes, fmts = CASES[name]
    rng = np.random.default_rng(7)
    arrays = [_sparse(rng, s, 0.3) if f != "dense" else rng.random(s)
              for s, f in zip(shapes, fmts, strict=True)]
    used: list[str] = []
    real = computing.executor_for
    monkeypatch.setattr(computing, "executor_for",
                        lambda d: used.append(d) or real(d))  # type: ignore[func-returns-value]
    gs = [xp.asarray(a, device="cuda", format=f) for a, f in zip(arrays, fmts, strict=True)]
    out = fn(*gs)
    assert out.device == Device("cuda") and out.result is None  # lazy until observed
    xp.compute(out)
    assert used == ["cuda"] and isinstance(out.result, DeviceTensor)
    got = _host(out)
    expected = _reference(fn, *arrays, fmts=fmts, monkeypatch=monkeypatch)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, fn(*arrays) if name != "rowsum" else arrays[0].sum(1),
                               rtol=1e-12, atol=1e-12)


def test_device_results_stay_on_device(on_device: str) -> None:
    rng = np.random.default_rng(3)
    a = _sparse(rng, (8, 6), 0.5)
    g = xp.asarray(a, device="cuda", format="csr")
    # a host constant inside a device plan (broadcast_to's extent) is moved up
    b = xp.broadcast_to(xp.asarray(np.arange(6.0), device="cuda"), (8, 6))
    np.testing.assert_allclose(_host(g + b), a + np.arange(6.0))
    # eager functions compute on the host and put their result back on the device
    s = xp.sort(g, axis=1)
    assert s.device == Device("cuda") and isinstance(s.result, DeviceTensor)
    np.testing.assert_array_equal(_host(s), np.sort(a, axis=1))
    z = xp.zeros_like(g)
    assert z.device == Device("cuda")
    np.testing.assert_array_equal(_host(z + g), a)
    # size-1 axes restored on a device result
    r = xp.sum(g, axis=1, keepdims=True)
    np.testing.assert_allclose(_host(r), a.sum(1, keepdims=True))
    c = xp.asformat(g, "csc")
    assert c.format == "csc" and c.device == Device("cuda")
    assert c.nnz == np.count_nonzero(a)
    # mixing a real device array with a cpu one
    with pytest.raises(ValueError, match="different devices"):
        g + xp.asarray(a)
    assert g.__dlpack_device__()[0] == 2  # kDLCUDA


def test_mixed_compute_and_eager_functions(on_device: str) -> None:
    a = np.arange(6.0).reshape(2, 3)
    g = xp.asarray(a, device="cuda") * 2
    c = xp.asarray(a) * 3
    with pytest.raises(ValueError, match="different devices"):
        xp.compute(g, c)
    with pytest.raises(ValueError, match="different devices"):
        xp.concat([g, c])
    xp.compute(g)
    xp.compute(c)
    assert isinstance(g.result, DeviceTensor) and not isinstance(c.result, DeviceTensor)
    both = xp.concat([g, xp.asarray(a, device="cuda")])
    assert both.device == Device("cuda")
    np.testing.assert_array_equal(_host(both), np.concatenate([a * 2, a]))
    np.testing.assert_array_equal(_host(g), a * 2)
    np.testing.assert_array_equal(np.asarray(c), a * 3)


def test_cupy_objects_emulated(monkeypatch: pytest.MonkeyPatch) -> None:
    """EMULATION of CuPy objects: classes whose module says ``cupy``/``cupyx`` (NumPy and
    scipy.sparse underneath) and fake ``cupy``/``cupyx`` modules, to check that asarray
    detects them by module name and wraps them as device arrays."""
    import types

    import scipy.sparse as sp

    _emulation(monkeypatch)

    class ndarray(np.ndarray):  # noqa: N801 - stands in for cupy.ndarray
        __module__ = "cupy"

    class csr_matrix(sp.csr_matrix):  # noqa: N801 - stands in for cupyx's
        __module__ = "cupyx.scipy.sparse._csr"

    cps = types.ModuleType("cupyx.scipy.sparse")
    cps.issparse = lambda m: isinstance(m, sp.spmatrix)  # type: ignore[attr-defined]
    cps.csr_matrix = csr_matrix  # type: ignore[attr-defined]
    cps.csc_matrix = sp.csc_matrix  # type: ignore[attr-defined]
    cupy = types.ModuleType("cupy")
    cupy.ascontiguousarray = np.ascontiguousarray  # type: ignore[attr-defined]
    for name, mod in (("cupy", cupy), ("cupyx", types.ModuleType("cupyx")),
                      ("cupyx.scipy", types.ModuleType("cupyx.scipy")),
                      ("cupyx.scipy.sparse", cps)):
        monkeypatch.setitem(sys.modules, name, mod)

    a = np.arange(12.0).reshape(3, 4).view(ndarray)
    g = xp.asarray(a)
    assert g.device == Device("cuda") and isinstance(g.result, DeviceTensor)
    np.testing.assert_array_equal(_host(g + 1), np.arange(12.0).reshape(3, 4) + 1)
    assert xp.asarray(a, device="cpu").device == CPU
    m = sp.random(9, 7, density=0.3, format="csr", random_state=2)
    s = xp.asarray(csr_matrix(m))
    assert s.device == Device("cuda") and s.format == "csr"
    np.testing.assert_allclose(_host(s @ s.T), (m @ m.T).toarray())
    back = xp.to_cupyx(s * 2)
    np.testing.assert_allclose(back.toarray(), 2 * m.toarray())
    dl = np.from_dlpack(s + 0)  # the emulated "device" array is NumPy underneath
    np.testing.assert_allclose(dl, m.toarray())


# --- CuPy objects (real GPU only) ---

@pytest.mark.gpu
def test_cupy_interop() -> None:
    if not _real_gpu():
        pytest.skip("needs CuPy and a CUDA device")
    import cupy
    import cupyx.scipy.sparse as cps
    import scipy.sparse as sp

    m = sp.random(30, 20, density=0.2, format="csr", random_state=0)
    cm = cps.csr_matrix(m)
    g = xp.asarray(cm)
    assert g.device == Device("cuda") and g.format == "csr"
    np.testing.assert_allclose(_host(g), m.toarray())
    back = xp.to_cupyx(g * 2)
    np.testing.assert_allclose(back.get().toarray(), 2 * m.toarray())
    c = xp.asarray(cps.csc_matrix(m), device="cpu")
    assert c.device == CPU
    np.testing.assert_allclose(np.asarray(c), m.toarray())
    d = xp.asarray(cupy.arange(12.0).reshape(3, 4))
    assert d.device == Device("cuda")
    np.testing.assert_array_equal(_host(d), np.arange(12.0).reshape(3, 4))
    dl = cupy.from_dlpack(d + 1)
    np.testing.assert_array_equal(cupy.asnumpy(dl), np.arange(12.0).reshape(3, 4) + 1)
    assert xp.from_dlpack(cupy.ones(3)).device == Device("cuda")


# --- the random-expression generator of test_random_expressions.py, on device cuda ---

GPU_RANDOM_EXAMPLES = int(os.environ.get("LAZYSPARSE_GPU_RANDOM_EXAMPLES", examples(30)))


def _build_on_device(node: Any) -> Any:
    """A recipe of ``test_random_expressions`` with every leaf moved to ``cuda``."""
    from tests.api.test_random_expressions import Leaf

    if isinstance(node, Leaf):
        return node.build(xp).to_device("cuda")
    return node.fn(xp, *(_build_on_device(a) for a in node.args))


@pytest.mark.gpu
@settings(max_examples=GPU_RANDOM_EXAMPLES, deadline=None, phases=RANDOM_PHASES,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.filter_too_much,
                                 HealthCheck.function_scoped_fixture])
@given(expr=random_programs())
def test_random_expressions_on_device_match_cpu(gpu: str, expr: Any) -> None:
    """Issue 25: the same random expressions (formats, fills, dtypes, depth <= 4) give the
    cpu answer on device ``cuda``: the reference executor's, which test_random_expressions
    checks the compiled cpu backend against (no Numba compile on the device's clock);
    queries may run on the host only visibly (the runtime's recording says where)."""
    from tests.api.test_random_expressions import _compare, _executor

    with np.errstate(all="ignore"):
        with _executor("reference"):
            want = np.asarray(xp.compute(expr.node.build(xp)))
        with rt.recording():
            out = _build_on_device(expr.node)
            xp.compute(out)
    assert out.device == Device("cuda")
    _compare(_host(out), want, f"cuda ({gpu}) vs cpu: {expr.node!r}")


@pytest.mark.parametrize("fmt", slow_except(["coo", "csr", "csc", "dense"], ["coo", "csr"]))
@pytest.mark.parametrize("fill", [np.nan, 1.0, 0.0])
def test_device_fill_values_decide_results_as_on_cpu(on_device: str, fmt: str,
                                                      fill: float) -> None:
    """A sparse device tensor's implicit region (``DeviceTensor.full`` False) decides the
    result's fill as on the cpu: ``x + 0`` over fill NaN is NaN there (it was 0 when device
    tensors counted as fully stored)."""
    rng = np.random.default_rng(5)
    vals = np.where(rng.random((5, 4)) < 0.4, rng.random((5, 4)), fill)
    a = xp.asarray(vals, format=fmt, fill_value=fill) if fmt != "dense" else xp.asarray(vals)
    g = a.to_device("cuda")
    assert g.result.full == a.tensor().full == (fmt == "dense")
    for fn in (lambda x: x + 0, lambda x: x * 2, lambda x: xp.sum(x, axis=1),
               lambda x: xp.maximum(x, 0.5)):
        want = np.asarray(fn(a))
        np.testing.assert_array_equal(_host(fn(g)), want)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16])
def test_small_integer_arithmetic_wraps_as_numpy(on_device: str, dtype: Any) -> None:
    """8/16-bit sums and products keep their dtype (C would promote them to int): the
    generated helpers receive the narrow type and overflow wraps as in NumPy."""
    info = np.iinfo(dtype)
    a = np.array([[info.max, 0, 3], [0, info.max - 1, 0]], dtype=dtype)
    b = np.array([[2, 1, 0], [0, 5, 7]], dtype=dtype)
    ga = xp.asarray(a, format="csr", device="cuda")
    gb = xp.asarray(b, format="csr", device="cuda")
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(_host(xp.min(ga + gb, axis=1)), (a + b).min(axis=1))
        np.testing.assert_array_equal(_host(xp.max(ga * gb, axis=0)), (a * b).max(axis=0))
        np.testing.assert_array_equal(_host(xp.minimum(ga + gb, ga)), np.minimum(a + b, a))
