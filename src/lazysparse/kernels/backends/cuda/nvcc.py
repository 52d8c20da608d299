"""Offline compile check of generated CUDA with the toolkit's ``nvcc`` (no GPU needed).

CuPy compiles with NVRTC, which has no host headers; checking with ``nvcc --ptx`` and the
same preamble (libcu++'s ``complex`` standing in for CuPy's when CuPy is absent) catches
every syntax and type error in generated code before it reaches a GPU.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

DEFAULT_ARCH = "sm_90"


def find_nvcc() -> str | None:
    """Path of ``nvcc`` ($NVCC, $CUDA_HOME/bin, PATH, /usr/local/cuda/bin), or None."""
    cands = [os.environ.get("NVCC")]
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home:
        cands.append(str(Path(home) / "bin" / "nvcc"))
    cands += [shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"]
    for c in cands:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return c
    return None


@dataclass(frozen=True)
class CompileResult:
    """Outcome of one ``nvcc`` run: success, the PTX (``--ptx`` mode), and diagnostics."""

    ok: bool
    ptx: str
    log: str

    def entries(self) -> list[str]:
        """Names of the ``.entry`` points (``__global__`` kernels) in the PTX."""
        return re.findall(r"\.entry\s+([A-Za-z_][A-Za-z0-9_]*)", self.ptx)


def compile_source(source: str, *, arch: str = DEFAULT_ARCH, mode: str = "ptx",
                   extra: tuple[str, ...] = (), timeout: float = 300.0) -> CompileResult:
    """Compile a translation unit with ``nvcc`` (``mode``: ``"ptx"`` or ``"c"``, an object).

    Warnings about unused locals are silenced (generated code declares every local up
    front); anything else appears in ``log``. RuntimeError when nvcc is missing.
    """
    nvcc = find_nvcc()
    if nvcc is None:
        raise RuntimeError("nvcc not found (set $NVCC or $CUDA_HOME)")
    if mode not in ("ptx", "c"):
        raise ValueError(f"mode must be 'ptx' or 'c', got {mode!r}")
    with tempfile.TemporaryDirectory(prefix="lsnvcc") as d:
        src = Path(d) / "kernel.cu"
        out = Path(d) / ("kernel.ptx" if mode == "ptx" else "kernel.o")
        src.write_text(source)
        cmd = [nvcc, f"-arch={arch}", "--ptx" if mode == "ptx" else "-c", "-std=c++17",
               "-diag-suppress=550,177", *extra, str(src), "-o", str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        ok = proc.returncode == 0 and out.exists()
        ptx = out.read_text() if ok and mode == "ptx" else ""
        return CompileResult(ok, ptx, proc.stdout + proc.stderr)
