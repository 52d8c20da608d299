"""api.fft (computed with numpy.fft, dense results) against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from lazysparse.api.chapters import fft as F
from tests.api.compute_helpers import (
    FORMATS,
    assert_same,
    lazy,
    reference_executor,  # noqa: F401 - autouse fixture
    sample,
)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", ("complex64", "complex128"))
def test_complex_transforms(fmt: str, dtype: str) -> None:
    rng = np.random.default_rng(0)
    a = sample((4, 6), dtype, rng)
    x = lazy(a, fmt)
    rdt = np.float32 if dtype == "complex64" else np.float64
    for norm in ("backward", "ortho", "forward"):
        for axis in (0, -1):
            for n in (None, 3, 8):
                assert_same(F.fft(x, n=n, axis=axis, norm=norm),
                            np.fft.fft(a, n=n, axis=axis, norm=norm).astype(dtype))
                assert_same(F.ifft(x, n=n, axis=axis, norm=norm),
                            np.fft.ifft(a, n=n, axis=axis, norm=norm).astype(dtype))
                assert_same(F.irfft(x, n=n, axis=axis, norm=norm),
                            np.fft.irfft(a, n=n, axis=axis, norm=norm).astype(rdt))
                assert_same(F.hfft(x, n=n, axis=axis, norm=norm),
                            np.fft.hfft(a, n=n, axis=axis, norm=norm).astype(rdt))
        assert_same(F.fftn(x, norm=norm), np.fft.fftn(a, norm=norm).astype(dtype))
        assert_same(F.ifftn(x, s=(2, 3), axes=(1, 0), norm=norm),
                    np.fft.ifftn(a, s=(2, 3), axes=(1, 0), norm=norm).astype(dtype))
        assert_same(F.irfftn(x, norm=norm), np.fft.irfftn(a, norm=norm).astype(rdt))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_real_transforms(fmt: str, dtype: str) -> None:
    rng = np.random.default_rng(1)
    a = sample((4, 6), dtype, rng)
    x = lazy(a, fmt)
    cdt = np.complex64 if dtype == "float32" else np.complex128
    for norm in ("backward", "ortho", "forward"):
        assert_same(F.rfft(x, norm=norm), np.fft.rfft(a, norm=norm).astype(cdt))
        assert_same(F.ihfft(x, axis=0, norm=norm), np.fft.ihfft(a, axis=0, norm=norm).astype(cdt))
        assert_same(F.rfftn(x, axes=(0,), norm=norm),
                    np.fft.rfftn(a, axes=(0,), norm=norm).astype(cdt))
    assert_same(F.fftshift(x), np.fft.fftshift(a))
    assert_same(F.ifftshift(x, axes=1), np.fft.ifftshift(a, axes=1))


def test_freqs_and_errors() -> None:
    assert_same(F.fftfreq(5, d=0.5), np.fft.fftfreq(5, d=0.5))
    assert_same(F.rfftfreq(6, dtype="float32"), np.fft.rfftfreq(6).astype(np.float32))
    x = lazy(np.ones(4, dtype=np.complex128))
    with pytest.raises(TypeError, match="complex floating"):
        F.fft(lazy(np.ones(4)))
    with pytest.raises(TypeError, match="real floating"):
        F.rfft(x)
    with pytest.raises(ValueError, match="norm"):
        F.fft(x, norm="bad")
    with pytest.raises(ValueError, match="at least 1"):
        F.fft(x, n=0)
    with pytest.raises(IndexError):
        F.fft(x, axis=1)
    with pytest.raises(ValueError, match="positive"):
        F.fftfreq(0)
    with pytest.raises(TypeError, match="real floating"):
        F.fftfreq(4, dtype="int32")
    assert {"fft", "ifft", "rfftn", "fftfreq", "fftshift"} <= set(F.EXTENSION.__all__)
