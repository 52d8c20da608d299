"""Run generated CUDA kernels on the CPU: the translation unit compiled as host C++ with a
small shim (``blockIdx``/``threadIdx`` thread-locals, a plain compare-and-swap, warp shuffles
through a 32-thread barrier).

This is a test tool, not a backend: it executes the *same generated CUDA source*, so every
strategy can be checked against the reference interpreter on machines without a GPU.
Thread-per-row, nonzero-split and serial kernels run their threads one after another; a
warp kernel runs one warp as 32 OS threads (ctypes releases the GIL) that meet at every
shuffle. It proves the generated code's logic, not its GPU timing or memory model.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import hashlib
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

import lazysparse.formats.device as dev
import lazysparse.kernels.backends.cuda.runtime as rt
from lazysparse.kernels.backends.cuda.codegen_cuda import CudaProgram, Launch
from lazysparse.kernels.backends.cuda.host import Grid
from lazysparse.kernels.backends.cuda.ops import CUDA_PRELUDE
from lazysparse.kernels.backends.cuda.prelude import BACKEND_HELPERS
from lazysparse.kernels.backends.cuda.strategies import LaunchMode

CXX = shutil.which("g++") or shutil.which("clang++")

_MATH = ("acos acosh asin asinh atan atanh cos cosh exp log log10 log2 sin sinh sqrt tan tanh "
         "expm1 log1p abs conj pow atan2 copysign hypot nextafter fmod floor ceil trunc rint "
         "signbit isnan isinf isfinite").split()

#: the standard headers every emulated translation unit includes; parsing them is ~90 % of
#: one host compile (0.8 of 0.9 s), so they are compiled once per process as a precompiled
#: header (:func:`_std_header`)
STD_HEADERS = ("cmath", "complex", "cstring", "mutex", "condition_variable")
_FLAGS = ("-std=c++17", "-O1", "-fPIC", "-w")  # the PCH is used only under the same flags

SHIM = r"""
template<typename T> using complex = std::complex<T>;
""" + "".join(f"using std::{f};\n" for f in _MATH) + r"""
#define __device__
#define __global__
#define __forceinline__ inline
struct ls_dim3 { unsigned x, y, z; };
static thread_local ls_dim3 blockIdx, threadIdx;
static ls_dim3 blockDim, gridDim;
extern "C" void ls_emu_set(unsigned bx, unsigned tx, unsigned bd, unsigned gd) {
  blockIdx.x = bx; threadIdx.x = tx; blockDim.x = bd; gridDim.x = gd;
}
inline float __int_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }
inline double __longlong_as_double(unsigned long long i) {
  double f; std::memcpy(&f, &i, 8); return f;
}
// one emulated warp: 32 OS threads meeting at a barrier around every shuffle
static std::mutex ls_mu;
static std::condition_variable ls_cv;
static int ls_waiting = 0, ls_generation = 0, ls_lanes = 32;
static unsigned char ls_slots[32][16];
extern "C" void ls_emu_lanes(int n) { ls_lanes = n; ls_waiting = 0; }
static void ls_barrier() {
  std::unique_lock<std::mutex> lk(ls_mu);
  int gen = ls_generation;
  if (++ls_waiting == ls_lanes) { ls_waiting = 0; ++ls_generation; ls_cv.notify_all(); }
  else ls_cv.wait(lk, [gen] { return gen != ls_generation; });
}
template<typename T> T __shfl_down_sync(unsigned, T v, int d) {
  static_assert(sizeof(T) <= 16, "shuffle of a wide type");
  int lane = threadIdx.x & 31;
  std::memcpy(ls_slots[lane], &v, sizeof(T));
  ls_barrier();
  T r = v;
  if (lane + d < 32) std::memcpy(&r, ls_slots[lane + d], sizeof(T));
  ls_barrier();
  return r;
}
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
template<typename U> U atomicCAS(U* a, U cmp, U val) {
  U old = *a; if (old == cmp) *a = val; return old;
}
"""

_CTYPES = {"bool": ctypes.c_bool, "int8": ctypes.c_int8, "int16": ctypes.c_int16,
           "int32": ctypes.c_int32, "int64": ctypes.c_int64, "uint8": ctypes.c_uint8,
           "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64,
           "float32": ctypes.c_float, "float64": ctypes.c_double}


class _C64(ctypes.Structure):
    _fields_ = [("re", ctypes.c_float), ("im", ctypes.c_float)]


class _C128(ctypes.Structure):
    _fields_ = [("re", ctypes.c_double), ("im", ctypes.c_double)]


def _ctype(dtype: str) -> Any:
    return {"complex64": _C64, "complex128": _C128}.get(dtype) or _CTYPES[dtype]


def _cvalue(v: Any, dtype: str) -> Any:
    if dtype.startswith("complex"):
        z = complex(v)
        return _ctype(dtype)(z.real, z.imag)
    return _ctype(dtype)(v.item() if hasattr(v, "item") else v)


@functools.cache
def _std_header() -> Path:
    """A header of :data:`STD_HEADERS` with its precompiled form beside it, once per process
    (a compiler that cannot precompile it still includes the header itself: same program)."""
    d = Path(tempfile.mkdtemp(prefix="lsemu_pch"))
    atexit.register(shutil.rmtree, d, True)
    h = d / "lsemu_std.h"
    h.write_text("".join(f"#include <{name}>\n" for name in STD_HEADERS))
    subprocess.run([CXX, *_FLAGS, "-x", "c++-header", str(h), "-o", f"{h}.gch"],
                   capture_output=True, timeout=600, check=False)
    return h


# the host libraries built in this process, by source digest: equal source, equal library
_LIBS: dict[str, ctypes.CDLL] = {}


def _compile(src: str, cpp: Path, so: Path) -> ctypes.CDLL:
    """``src`` compiled as a host shared library (the standard headers precompiled)."""
    cpp.write_text(src)
    assert CXX is not None
    proc = subprocess.run([CXX, *_FLAGS, "-shared", "-include", str(_std_header()), str(cpp),
                           "-o", str(so)], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"host compile of generated CUDA failed:\n{proc.stderr[-6000:]}")
    return ctypes.CDLL(str(so))


class EmulatedModule:
    """The programs' kernels compiled as one host shared library."""

    def __init__(self, programs: list[CudaProgram], workdir: Path | None = None) -> None:
        if CXX is None:
            raise RuntimeError("no host C++ compiler")
        src = SHIM + "#define LS_D inline\n" + CUDA_PRELUDE.replace(
            "#define LS_D __device__ __forceinline__", "") + BACKEND_HELPERS
        unique = {p.prefix: p for p in programs}  # equal structure, equal program
        src += "\n".join(p.source for p in unique.values())
        digest = hashlib.sha256(src.encode()).hexdigest()[:16]
        lib = _LIBS.get(digest)
        if lib is None:
            if workdir is None:
                workdir = Path(tempfile.mkdtemp(prefix="lsemu"))
                atexit.register(shutil.rmtree, workdir, True)
            d = Path(workdir)
            lib = _LIBS[digest] = _compile(src, d / f"emu_{digest}.cpp", d / f"emu_{digest}.so")
        self.lib = lib
        self.lib.ls_emu_set.argtypes = [ctypes.c_uint] * 4
        self.launches = 0

    def launcher(self, workers: int = 3) -> Any:
        """A ``run_steps`` launcher running each launch with ``workers`` sequential threads."""

        def launch(ln: Launch, grid: Grid, args: list[Any]) -> None:
            fn = getattr(self.lib, ln.name)
            cargs = []
            for a, dt in zip(args, ln.arg_dtypes, strict=True):
                if dt:
                    cargs.append(_cvalue(a, dt))
                else:
                    assert isinstance(a, np.ndarray) and a.flags.c_contiguous
                    cargs.append(ctypes.c_void_p(a.ctypes.data))
            if ln.mode is LaunchMode.WARP:
                self._run_warp(fn, cargs)
            else:
                n = 1 if ln.mode is LaunchMode.SERIAL else max(1, min(workers, grid.workers))
                for tx in range(n):
                    self.lib.ls_emu_set(0, tx, n, 1)
                    fn(*cargs)
            self.launches += 1

        return launch

    def _run_warp(self, fn: Any, cargs: list[Any]) -> None:
        """One warp (32 lanes as OS threads, one block of 32 threads)."""
        self.lib.ls_emu_lanes(32)
        errors: list[BaseException] = []

        def lane(tx: int) -> None:
            try:
                self.lib.ls_emu_set(0, tx, 32, 1)
                fn(*cargs)
            except BaseException as e:  # noqa: BLE001 - re-raised below
                errors.append(e)

        threads = [threading.Thread(target=lane, args=(tx,)) for tx in range(32)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        if errors or any(t.is_alive() for t in threads):
            raise RuntimeError(f"emulated warp failed: {errors or 'deadlock'}")


class FakeModule:
    """Stands in for ``cupy.RawModule``: kernels run through the emulator."""

    def __init__(self, prog: CudaProgram) -> None:
        self.prog = prog
        self.emu = EmulatedModule([prog])

    def compile(self) -> None:
        """``cupy.RawModule.compile``: the emulated kernels were compiled on construction."""

    def get_function(self, name: str) -> Any:
        ln = next(s for s in self.prog.steps if isinstance(s, Launch) and s.name == name)

        def call(grid: tuple[int], block: tuple[int], args: tuple[Any, ...]) -> None:
            workers = grid[0] * block[0] // ln.mode.lanes
            self.emu.launcher(workers=3)(ln, Grid(grid[0], block[0], workers), list(args))

        return call


#: what ``formats.device`` uses of CuPy, with NumPy underneath
FAKE_CUPY = SimpleNamespace(asarray=np.asarray, asnumpy=np.asarray,
                            ascontiguousarray=np.ascontiguousarray, transpose=np.transpose,
                            int32=np.int32, int64=np.int64)

#: (module, attribute, emulated value): CuPy replaced by NumPy, RawModule by the emulator
EMULATION = ((dev, "cuda_available", lambda: True), (dev, "_cupy", lambda: FAKE_CUPY),
             (rt, "_cupy", lambda: np), (rt, "compile_program", FakeModule))


@contextmanager
def emulated_cuda() -> Iterator[None]:
    """Inside the block, device ``cuda`` is EMULATED (NumPy arrays, generated kernels run
    by this emulator); for scripts (``benchmarks/bench_gpu.py --emulate``). Tests use
    pytest's monkeypatch over :data:`EMULATION` instead."""
    if CXX is None:
        raise RuntimeError("the CUDA emulator needs a host C++ compiler (g++ or clang++)")
    saved = [(mod, name, getattr(mod, name)) for mod, name, _ in EMULATION]
    for mod, name, value in EMULATION:
        setattr(mod, name, value)
    rt.clear_cache()
    try:
        yield
    finally:
        for mod, name, value in saved:
            setattr(mod, name, value)
        rt.clear_cache()
