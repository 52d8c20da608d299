"""Level properties/capabilities (Chou et al., Table 1), format specs, signatures, attributes."""

from __future__ import annotations

import numpy as np
import pytest

from lazysparse.formats import (
    Compressed,
    Dense,
    FormatSpec,
    LevelCapabilities,
    LevelProperties,
    Singleton,
    Tensor,
    convert,
    format_spec,
)


def test_level_properties_and_capabilities_match_the_paper() -> None:
    d = Dense(4)
    c = Compressed(4, np.array([0, 0]), np.array([], dtype=np.int32))
    cn = Compressed(4, np.array([0, 0]), np.array([], dtype=np.int32), unique=False)
    s = Singleton(4, np.array([], dtype=np.int32))
    assert d.properties == LevelProperties(True, True, True, False, True)
    assert d.capabilities == LevelCapabilities("coordinate", True, False, True)
    assert c.properties == LevelProperties(False, True, True, False, True)
    assert c.capabilities == LevelCapabilities("position", False, True, False)
    assert cn.properties.unique is False and cn.kind == "compressed-nonunique"
    assert s.properties == LevelProperties(False, True, True, True, True)
    assert s.capabilities == LevelCapabilities("position", False, True, False)
    assert d.locate(2, 3) == 11
    assert Compressed(3, np.array([0, 2, 5]), np.arange(5) % 3).pos_range(1) == (2, 5)


@pytest.mark.parametrize(
    ("name", "ndim", "kinds", "order"),
    [
        ("dense", 3, ("dense",) * 3, (0, 1, 2)),
        ("csr", 2, ("dense", "compressed"), (0, 1)),
        ("csc", 2, ("dense", "compressed"), (1, 0)),
        ("dcsr", 2, ("compressed", "compressed"), (0, 1)),
        ("coo", 3, ("compressed-nonunique", "singleton", "singleton"), (0, 1, 2)),
        ("coo", 1, ("compressed",), (0,)),
        ("csf", 4, ("compressed",) * 4, (0, 1, 2, 3)),
        ("dense", 0, (), ()),
    ],
)
def test_named_formats(
    name: str, ndim: int, kinds: tuple[str, ...], order: tuple[int, ...]
) -> None:
    spec = format_spec(name, ndim)
    assert spec == FormatSpec(name, kinds, order)
    assert len(spec.level_properties()) == ndim == len(spec.level_capabilities())
    hash(spec)


def test_spec_properties_agree_with_levels() -> None:
    a = np.arange(24.0).reshape(2, 3, 4) % 5
    for name in ("dense", "coo", "csf"):
        t = Tensor.from_numpy(a, name, mode_order=(2, 0, 1))
        assert t.mode_order == (2, 0, 1)
        assert tuple(lv.properties for lv in t.levels) == t.spec.level_properties()
        assert tuple(lv.capabilities for lv in t.levels) == t.spec.level_capabilities()
        assert [lv.size for lv in t.levels] == [4, 2, 3]
        assert t.spec.level_of_axis(2) == 0


def test_attributes_and_signature() -> None:
    a = np.array([[0.0, 1.0], [np.nan, 0.0]])
    t = Tensor.from_numpy(a, "csr", fill_value=np.nan)
    assert (t.format, t.shape, t.dtype, t.ndim, t.nnz) == ("csr", (2, 2), np.float64, 2, 3)
    assert np.isnan(t.fill_value) and isinstance(t.fill_value, np.float64)
    assert t.index_dtype == np.int32
    u = Tensor.from_numpy(a * 2, "csr", fill_value=float("nan"))
    assert t.signature == u.signature and hash(t.signature) == hash(u.signature)
    assert t.signature != Tensor.from_numpy(a, "csr").signature
    assert t.signature != Tensor.from_numpy(a.astype(np.float32), "csr", np.nan).signature
    assert t.signature != convert(t, "csc").signature
    assert set(t.level_arrays(1)) == {"ptr", "idx"} and t.level_arrays(0) == {}
    assert "csr" in repr(t) and "Compressed" in repr(t.levels[1])
    np.testing.assert_array_equal(np.asarray(t), a)


def test_index_dtype_int64_when_dimensions_do_not_fit() -> None:
    big = 2**31 + 5
    t = Tensor.from_coords([[0, big - 1]], [1.0, 2.0], (big,))
    assert t.index_dtype == np.int64
    assert t.levels[0].idx.dtype == np.int64 and t.levels[0].ptr.dtype == np.int64
    u = convert(Tensor.from_coords([[0, 3]], [1.0, 2.0], (10,)), "csf")
    assert u.index_dtype == np.int32
    levels = [Compressed(10, np.array([0, 2], np.uint16), np.array([1, 3], np.int8))]
    assert Tensor((10,), levels, (0,), np.ones(2), 0).index_dtype == np.int32


def test_same_layout_different_name_shares_arrays() -> None:
    t = Tensor.from_numpy(np.eye(3), "dcsr")
    u = convert(t, "csf")
    assert u.format == "csf" and u.values is t.values
    assert convert(t, "dcsr") is t


def test_dense_and_dense_conversions_keep_every_value() -> None:
    a = np.arange(6).reshape(2, 3)
    t = Tensor.from_numpy(a, "dense", mode_order=(1, 0))
    np.testing.assert_array_equal(t.values, a.T.reshape(-1))
    np.testing.assert_array_equal(convert(t, "dense").to_numpy(), a)


def test_constructor_with_spec_and_name_checks() -> None:
    levels = [Dense(2), Compressed(2, np.array([0, 1, 2]), np.array([1, 0]))]
    t = Tensor((2, 2), levels, (1, 0), np.ones(2), 0, format=format_spec("csc", 2))
    assert t.format == "csc"
    with pytest.raises(ValueError, match="does not match format spec"):
        Tensor((2, 2), levels, (0, 1), np.ones(2), 0, format=format_spec("csc", 2))
    with pytest.raises(ValueError, match="do not match format 'dcsr'"):
        Tensor((2, 2), levels, (0, 1), np.ones(2), 0, format="dcsr")


def test_public_names() -> None:
    import lazysparse.formats as f
    from lazysparse import io

    for name in (
        "Tensor",
        "convert",
        "random",
        "DensifyError",
        "get_densify_limit",
        "set_densify_limit",
        "FormatSpec",
        "format_spec",
    ):
        assert hasattr(f, name)
    assert issubclass(f.DensifyError, ValueError)
    for name in ("read_mtx", "write_mtx", "save_npz", "load_npz"):
        assert callable(getattr(io, name))
