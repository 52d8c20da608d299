"""The densify limit: default, setter, context manager, environment variable, DensifyError."""

from __future__ import annotations

import numpy as np
import pytest

from lazysparse.formats import (
    DensifyError,
    Tensor,
    convert,
    get_densify_limit,
    random,
    set_densify_limit,
)


def test_default_is_4_gib(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAZYSPARSE_DENSIFY_LIMIT", raising=False)
    assert get_densify_limit() == 4 * 2**30


def test_huge_densify_raises_and_says_how_to_opt_in() -> None:
    t = random((10**6, 10**6), 1e-9, format="csr")
    with pytest.raises(DensifyError) as info:
        t.to_numpy()
    msg = str(info.value)
    assert isinstance(info.value, ValueError)
    assert "8000000000000 bytes" in msg and "set_densify_limit" in msg
    assert "LAZYSPARSE_DENSIFY_LIMIT" in msg
    with pytest.raises(DensifyError):
        convert(t, "dense")


def test_context_manager_and_setter_restore() -> None:
    t = Tensor.from_numpy(np.ones((10, 10)), "csr")
    before = get_densify_limit()
    with set_densify_limit(100):
        assert get_densify_limit() == 100
        with pytest.raises(DensifyError, match="800 bytes"):
            t.to_numpy()
        with set_densify_limit(None):
            assert t.to_numpy().sum() == 100
        with pytest.raises(DensifyError):
            convert(t, "dense")
    assert get_densify_limit() == before
    setting = set_densify_limit(1000)
    try:
        assert get_densify_limit() == 1000
    finally:
        setting.restore()
    assert get_densify_limit() == before


def test_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    t = Tensor.from_numpy(np.ones((10, 10)), "csr")
    monkeypatch.setenv("LAZYSPARSE_DENSIFY_LIMIT", "799")
    with pytest.raises(DensifyError):
        t.to_numpy()
    monkeypatch.setenv("LAZYSPARSE_DENSIFY_LIMIT", "800")
    assert t.to_numpy().shape == (10, 10)
    monkeypatch.setenv("LAZYSPARSE_DENSIFY_LIMIT", "none")
    assert get_densify_limit() is None
    monkeypatch.setenv("LAZYSPARSE_DENSIFY_LIMIT", "lots")
    with pytest.raises(ValueError, match="LAZYSPARSE_DENSIFY_LIMIT: 'lots' is not a byte count"):
        get_densify_limit()


def test_bad_limits() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        set_densify_limit(-1)
    with pytest.raises(TypeError, match="int number of bytes"):
        set_densify_limit(1.5)  # type: ignore[arg-type]


def test_pointer_arrays_under_dense_levels_count_too() -> None:
    from lazysparse.formats import FormatSpec

    t = random((300, 300, 4), 0.001, format="coo", seed=0)
    spec = FormatSpec("custom", ("dense", "dense", "compressed"), (0, 1, 2))
    with set_densify_limit(1000), pytest.raises(DensifyError, match="pointer array"):
        convert(t, spec)
    np.testing.assert_array_equal(convert(t, spec).to_numpy(), t.to_numpy())
