"""Every operator's CUDA form compiles with nvcc for every dtype it accepts.

Only a compile check (no GPU is needed): the file uses Thrust's ``complex<T>``, which CuPy's
``complex.cuh`` mirrors. Skipped where nvcc is not installed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from lazysparse.kernels.backends.cuda.ops import CUDA_PRELUDE
from lazysparse.logic.internal_ops import cuda_type
from lazysparse.logic.operators import OPERATORS, astype_op
from tests.logic.op_samples import REPRESENTATIVE_DTYPES, accepts

NVCC = shutil.which("nvcc")


def _kernel_source() -> str:
    parts = ["#include <thrust/complex.h>", "using thrust::complex;", CUDA_PRELUDE]
    ops = [*OPERATORS.values(), astype_op("float32"), astype_op("bool"), astype_op("int64")]
    for d in REPRESENTATIVE_DTYPES:
        body = []
        for n, op in enumerate(ops):
            if not accepts(op, d):
                continue
            argd = [np.dtype(bool) if (op.name == "where" and i == 0) else d
                    for i in range(op.nargs)]
            operands = op.operand_dtypes(*argd)
            res = op.result_dtype(*argd)
            decls = [f"{cuda_type(t)} a{n}_{i} = *({cuda_type(t)}*)(in + {i});"
                     for i, t in enumerate(operands)]
            expr = op.cuda_expr([f"a{n}_{i}" for i in range(op.nargs)], operands)
            rt = cuda_type(res)
            body.append("  {\n    " + "\n    ".join(decls) +
                        f"\n    *({rt}*)(out + {n}) = ({rt})({expr});\n  }}")
        parts.append(f'extern "C" __global__ void k_{d.name}(char* out, const char* in) {{\n'
                     + "\n".join(body) + "\n}")
    return "\n".join(parts)


@pytest.mark.slow
@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
def test_cuda_forms_compile(tmp_path: Path) -> None:
    src = tmp_path / "ops.cu"
    src.write_text(_kernel_source())
    proc = subprocess.run([NVCC, "-std=c++17", "-c", str(src), "-o", str(tmp_path / "ops.o")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
