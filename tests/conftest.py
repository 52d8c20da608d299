"""Test-suite configuration: markers, and a deterministic hypothesis profile for CI.

The pytest settings live here rather than in pyproject.toml so that the Array API
conformance suite, run with this project's xfails file, keeps its own rootdir and test ids.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])
elif os.environ.get("CI"):
    settings.load_profile("ci")


#: how ``gpu``-marked tests that take the ``gpu`` fixture run: ``device`` (CuPy on a real GPU,
#: skipped without one) or ``emulate`` (NumPy for CuPy, the CPU emulator of the generated
#: kernels for NVRTC: ``benchmarks/gpu_check.sh --dry-run`` rehearses the device run so)
GPU_TESTS = os.environ.get("LAZYSPARSE_GPU_TESTS", "device")


def pytest_configure(config: pytest.Config) -> None:
    if GPU_TESTS not in ("device", "emulate"):
        raise pytest.UsageError(f"LAZYSPARSE_GPU_TESTS={GPU_TESTS!r}: expected device or "
                                "emulate")
    config.addinivalue_line("markers", "gpu: needs a CUDA device and CuPy")
    config.addinivalue_line("markers", "slow: long-running test")


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``"device"``: a real GPU through CuPy (skip without one); ``"emulated"`` under
    ``LAZYSPARSE_GPU_TESTS=emulate``: CuPy and NVRTC replaced by NumPy and the kernel
    emulator for this test (``tests/backends/cuda/emulator.py``)."""
    import lazysparse.backends.cuda.runtime as rt  # the CUDA backend loads for gpu tests only

    if GPU_TESTS == "emulate":
        from tests.backends.cuda.emulator import CXX, EMULATION

        if CXX is None:
            pytest.skip("no host C++ compiler for the kernel emulator")
        for mod, name, value in EMULATION:
            monkeypatch.setattr(mod, name, value)
        rt.clear_cache()
        yield "emulated"
        rt.clear_cache()
        return
    from lazysparse.formats.device import cuda_available

    if not cuda_available():
        pytest.skip("needs CuPy and a CUDA device")
    yield "device"
