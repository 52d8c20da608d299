"""Device bookkeeping that works without a GPU: device names, mixing errors, and clear
errors where CuPy is needed but absent."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from lazysparse.formats.device import (
    DeviceTensor,
    check_same_device,
    cuda_available,
    cuda_devices,
    device_of,
    to_cuda,
    to_cupyx,
    to_host,
)
from lazysparse.kernels.backends.cuda.runtime import run_query_cuda
from tests.kernels.backends.cuda.cases import CASES, T

HAS_CUPY = importlib.util.find_spec("cupy") is not None


def _fake_device_tensor() -> DeviceTensor:
    """A DeviceTensor whose arrays are NumPy (bookkeeping only; nothing runs)."""
    host = T(np.eye(3), "csr")
    return DeviceTensor(host.shape, host.levels, host.mode_order, host.values,
                        host.fill_value, host.spec)


def test_device_of() -> None:
    assert device_of(T(np.eye(2), "csr")) == "cpu"
    assert device_of(np.ones(2)) == "cpu"
    d = _fake_device_tensor()
    assert device_of(d) == "cuda" and d.device == "cuda"
    assert d.nnz == 3 and d.format == "csr" and d.dtype == np.float64 and d.ndim == 2
    assert "device='cuda'" in repr(d)


def test_mixing_devices_is_a_clear_error() -> None:
    host, dev = T(np.eye(2), "csr"), _fake_device_tensor()
    assert check_same_device(host, host) == "cpu"
    assert check_same_device(dev) == "cuda"
    with pytest.raises(ValueError, match="different devices.*to_device"):
        check_same_device(host, dev)


def test_device_tensor_validates_values() -> None:
    with pytest.raises(ValueError, match="1-D"):
        DeviceTensor((2,), [], (), np.ones((2, 2)), 0, T(np.ones(2), "dense").spec)


def test_host_passthrough_and_type_errors() -> None:
    t = T(np.eye(2), "csr")
    assert to_host(t) is t
    with pytest.raises(TypeError, match="Tensor"):
        to_cuda(np.eye(2))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="DeviceTensor"):
        to_host(np.eye(2))  # type: ignore[arg-type]


def test_to_cupyx_rejects_what_scipy_cannot_hold() -> None:
    with pytest.raises(ValueError, match="2-D"):
        to_cupyx(T(np.ones((2, 2, 2)), "coo"))
    with pytest.raises(ValueError, match="fill value 0"):
        to_cupyx(T(np.eye(2), "csr", fill=np.nan))


def test_cpu_operands_rejected_by_the_cuda_runtime() -> None:
    p, q, env = next(c for c in CASES if c.name == "spmv_f64").split()
    with pytest.raises(ValueError, match="on the cpu"):
        run_query_cuda(q, env)


@pytest.mark.skipif(HAS_CUPY, reason="CuPy is installed here")
def test_without_cupy() -> None:
    assert cuda_available() is False
    assert cuda_devices() == []
    with pytest.raises(ImportError, match="CuPy"):
        to_cuda(T(np.eye(2), "csr"))
