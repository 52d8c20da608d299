"""CUDA C backend of lazysparse: kernels generated from the same loop IR as the Numba
backend, compiled with ``cupy.RawModule`` and cached by the structural key.

Importing this package never imports CuPy. Public: :func:`cuda_source` (the generated
translation unit of a query), :func:`execute_plan_cuda`, :func:`run_query_cuda`, and the
device helpers of ``formats.device``: :func:`cuda_available`, :func:`to_cuda`, :func:`to_host`,
:func:`from_cupyx`, :func:`to_cupyx`. See docs/gpu.md.
"""

from lazysparse.formats.device import (
    DeviceTensor,
    check_same_device,
    cuda_available,
    cuda_devices,
    dense_array,
    device_of,
    from_cupyx,
    to_cuda,
    to_cupyx,
    to_host,
)
from lazysparse.kernels.backends.cuda.program import cuda_source, plan_query, program_for
from lazysparse.kernels.backends.cuda.runtime import execute_plan_cuda, run_query_cuda

__all__ = ["DeviceTensor", "check_same_device", "cuda_available", "cuda_devices", "cuda_source",
           "dense_array", "device_of", "execute_plan_cuda", "from_cupyx", "plan_query",
           "program_for", "run_query_cuda", "to_cuda", "to_cupyx", "to_host"]
