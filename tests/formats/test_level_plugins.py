"""Levels own their behaviour (issue 26, item 1): code outside ``formats/levels/`` asks a
level (its class attributes, hooks, or ``formats.levels.registry``) and never branches on a
level kind string; the declarations agree with the levels' data and the kernels' tables."""

from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest
import scipy.sparse as sp

from lazysparse.engine.explain import placeholder
from lazysparse.formats import FORMAT_NAMES, LEVEL_KINDS, Tensor, format_spec
from lazysparse.formats.levels import Level, level_attrs, level_of_kind
from lazysparse.formats.levels.base import LevelParam, Walk
from lazysparse.formats.levels.registry import (
    LAST_LEVEL_FORMATS,
    LEVEL_CAPABILITIES,
    LEVEL_CLASSES,
    LEVEL_PROPERTIES,
    STRUCTURED_KINDS,
    copy_kind,
    level_class,
    written_kind,
)
from lazysparse.kernels.compile.lowering.level_walks import WALKS
from lazysparse.kernels.compile.lowering.loop_nest import STORAGE_MAJOR
from lazysparse.kernels.compile.planning.params import _LEVEL_ROLES

SRC = pathlib.Path(__file__).resolve().parents[2] / "src" / "lazysparse"
LEVELS_DIR = "formats/levels/"
# names that hold a format name, not a level kind ("dense", "ell" and "bytemap" are both)
_FORMAT_NAME_HOLDERS = frozenset({"format", "fmt", "like", "name"})

# Most files outside formats/levels/ that may use each level kind string as a branch
# condition (a comparison, a membership test, a dict key, a match case). The issue's
# target is 2 (a backend's level plug-ins); every kind reached 0, which this ratchet keeps.
MAX_BRANCH_FILES = dict.fromkeys(LEVEL_KINDS, 0)

# Most files outside formats/levels/ naming each kind string at all (docstrings aside), for
# the kinds that are not also format names: the named formats' layouts in formats/specs.py.
MAX_NAMING_FILES = {"compressed": 1, "compressed-nonunique": 1, "compressed-unordered": 0,
                    "singleton": 1, "hashed": 0, "banded": 0, "blocked": 0, "runs": 0}


def _kind_strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and node.value in LEVEL_KINDS:
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [k for e in node.elts for k in _kind_strings(e)]
    return []


def _holds_format_name(node: ast.AST) -> bool:
    return ((isinstance(node, ast.Attribute) and node.attr in _FORMAT_NAME_HOLDERS)
            or (isinstance(node, ast.Name) and node.id in _FORMAT_NAME_HOLDERS))


def branch_kinds(source: str) -> list[tuple[int, str]]:
    """(line, kind) of every level kind string used as a branch condition in ``source``
    (comparisons with a format name, e.g. ``t.format == "dense"``, are not level kinds)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        kinds: list[str] = []
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if not any(_holds_format_name(x) for x in operands):
                kinds = [k for x in operands for k in _kind_strings(x)]
        elif isinstance(node, ast.Dict):
            kinds = [k for key in node.keys if key is not None for k in _kind_strings(key)]
        elif isinstance(node, ast.MatchValue):
            kinds = _kind_strings(node.value)
        found += [(node.lineno, k) for k in kinds]
    return found


def named_kinds(source: str) -> set[str]:
    """Level kind strings appearing anywhere in ``source`` but docstrings."""
    tree = ast.parse(source)
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and n.body and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)}
    return {n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and n.value in LEVEL_KINDS and id(n) not in docs}


def _sources() -> dict[str, str]:
    files = {p.relative_to(SRC).as_posix(): p for p in SRC.rglob("*.py")}
    return {rel: p.read_text() for rel, p in files.items() if not rel.startswith(LEVELS_DIR)}


def test_the_scanner_finds_planted_kind_switches() -> None:
    planted = ('if lv.kind == "runs":\n    pass\n'
               'W = {"banded": 1}\n'
               'ok = k in ("hashed", "bytemap")\n'
               'match kind:\n    case "ell":\n        pass\n'
               'same = t.format == "dense"\n')
    assert sorted(k for _, k in branch_kinds(planted)) == ["banded", "bytemap", "ell", "hashed",
                                                          "runs"]
    assert named_kinds('"""about "runs"."""\nx = ("dense",) * 2\n') == {"dense"}


def test_no_kind_string_is_a_branch_condition_outside_formats_levels() -> None:
    where: dict[str, set[str]] = {k: set() for k in LEVEL_KINDS}
    for rel, text in _sources().items():
        for line, kind in branch_kinds(text):
            where[kind].add(f"{rel}:{line}")
    for kind, limit in MAX_BRANCH_FILES.items():
        files = {w.split(":")[0] for w in where[kind]}
        assert len(files) <= limit, (f"level kind {kind!r} switched on in {sorted(where[kind])}: "
                                     "ask the level (formats.levels.registry) instead")


def test_kind_strings_are_named_in_few_files_outside_formats_levels() -> None:
    files: dict[str, set[str]] = {k: set() for k in MAX_NAMING_FILES}
    for rel, text in _sources().items():
        for kind in named_kinds(text) & set(MAX_NAMING_FILES):
            files[kind].add(rel)
    for kind, limit in MAX_NAMING_FILES.items():
        assert len(files[kind]) <= limit, (kind, sorted(files[kind]))
    assert set(MAX_NAMING_FILES) == set(LEVEL_KINDS) - set(FORMAT_NAMES)


def test_every_kind_has_a_class_whose_declarations_match_its_instances() -> None:
    assert tuple(LEVEL_CLASSES) == LEVEL_KINDS
    a = np.array([[0, 2, 0, 0], [1, 0, 3, 0], [0, 0, 0, 4]], dtype=np.float64)
    seen = set()
    for name in FORMAT_NAMES:
        t = Tensor.from_numpy(a, name)
        for lv in t.levels:
            cls = level_class(lv.kind)
            assert isinstance(lv, cls)
            assert LEVEL_PROPERTIES[lv.kind] == lv.properties
            assert LEVEL_CAPABILITIES[lv.kind] == lv.capabilities
            seen.add(lv.kind)
        np.testing.assert_array_equal(t.to_numpy(), a)
    unordered = Tensor.from_numpy(a, "csr").spec.unordered_last()
    assert LEVEL_PROPERTIES[unordered.level_kinds[-1]].ordered is False
    assert seen | {unordered.level_kinds[-1]} == set(LEVEL_KINDS)


def test_named_formats_of_a_last_level_come_from_the_level_classes() -> None:
    assert LAST_LEVEL_FORMATS == {"hash": "hashed", "bytemap": "bytemap", "dia": "banded",
                                  "ell": "ell", "bsr": "blocked", "rle": "runs"}
    for name, kind in LAST_LEVEL_FORMATS.items():
        assert format_spec(name, 2).level_kinds == ("dense", kind)


def test_every_walk_and_parameter_a_level_declares_has_a_kernel_counterpart() -> None:
    for kind, cls in LEVEL_CLASSES.items():
        if cls.walk is not Walk.LOCATED:
            assert cls.walk in WALKS, kind
        for _, what in cls.kernel_params:
            assert what in _LEVEL_ROLES, (kind, what)
        if cls.storage_row_sums or cls.storage_column_scatter:
            assert cls.walk in STORAGE_MAJOR, kind
        assert cls.structured == (kind in STRUCTURED_KINDS)
    assert set(_LEVEL_ROLES) == set(LevelParam)
    assert set(WALKS) == set(Walk) - {Walk.LOCATED}


def test_run_valued_levels_do_not_merge_and_structured_ones_declare_their_parameters() -> None:
    for kind, cls in LEVEL_CLASSES.items():
        assert WALKS.get(cls.walk) is None or WALKS[cls.walk].merges != cls.run_valued, kind
        assert bool(cls.kernel_params) == cls.structured, kind


@pytest.mark.parametrize("name", ["dia", "ell", "bsr", "rle", "hash", "bytemap", "csr", "coo"])
def test_level_scalars_and_arrays_rebuild_each_level(name: str) -> None:
    a = np.kron(np.eye(3), np.ones((2, 2)))[:, :5] * np.arange(1, 6)
    t = Tensor.from_numpy(a, name)
    for lv in t.levels:
        attrs = level_attrs(lv)
        assert set(attrs) == set(type(lv).attr_names)
        again = level_of_kind(lv.kind, lv.size, lv.arrays(), attrs)
        assert type(again) is type(lv) and again.kind == lv.kind
        for key, arr in lv.arrays().items():
            np.testing.assert_array_equal(again.arrays()[key], arr)


def _walk_entries(t: Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Coordinates (axis order) and positions of ``t``'s entries through ``Level.children``."""
    pos = np.zeros(1, dtype=np.int64)
    coords: list[np.ndarray] = []
    for lv in t.levels:
        owner, coord, pos = lv.children(pos)
        coords = [c[owner] for c in coords] + [coord]
    out = np.empty((t.ndim, pos.size), dtype=np.int64)
    for k, axis in enumerate(t.mode_order):
        out[axis] = coords[k]
    return out, pos


@pytest.mark.parametrize("name", ["dense", "csr", "csc", "coo", "csf", "dcsr", "dia", "ell",
                                  "bsr", "rle"])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.complex128, np.bool_])
def test_children_walks_every_stored_entry_like_scipy(name: str, dtype: type) -> None:
    m = sp.random(6, 4, density=0.4, random_state=3, format="csr").toarray()
    m[2] = 0  # an empty row
    a = (m * 10).astype(dtype)
    t = Tensor.from_numpy(a, name)
    coords, pos = _walk_entries(t)
    dense = np.zeros_like(a)
    dense[tuple(coords)] = t.values[pos]
    np.testing.assert_array_equal(dense, a)
    if name in ("csr", "csc", "coo", "csf", "dcsr"):
        assert pos.size == sp.csr_array(a).nnz == t.nnz


def test_children_of_no_parents_and_of_hash_levels() -> None:
    t = Tensor.from_numpy(np.zeros((3, 0)), "csr")
    _, coord, pos = t.levels[1].children(np.arange(3, dtype=np.int64))
    assert coord.size == pos.size == 0
    h = Tensor.from_numpy(np.eye(3), "hash")
    with pytest.raises(TypeError, match="canonical"):
        h.levels[1].children(np.arange(3, dtype=np.int64))


@pytest.mark.parametrize("name", ["dense", "csr", "csc", "coo", "csf", "dcsr"])
def test_empty_levels_make_an_empty_placeholder(name: str) -> None:
    spec = format_spec(name, 2)
    t = placeholder((3, 4), spec, np.float64, 0.0)
    assert t.spec.level_kinds == spec.level_kinds and t.shape == (3, 4)
    assert t.values.size == (12 if name == "dense" else 0)
    np.testing.assert_array_equal(t.to_numpy(), np.zeros((3, 4)))
    with pytest.raises(ValueError, match="placeholder"):
        level_class("hashed").empty("hashed", 4, 3)


def test_kind_maps_follow_the_classes() -> None:
    assert written_kind("hashed", last=True) == "compressed-unordered"
    assert written_kind("hashed", last=False) == "compressed"
    assert written_kind("bytemap", last=True) == "compressed"
    assert written_kind("ell", last=True) == "ell"
    assert {k: copy_kind(k) for k in ("dense", "compressed-unordered", "hashed", "bytemap",
                                      "banded", "runs", "compressed")} == {
        "dense": "dense", "compressed-unordered": "compressed", "hashed": "compressed",
        "bytemap": "compressed", "banded": "compressed", "runs": "compressed",
        "compressed": "compressed"}
    with pytest.raises(ValueError, match="unknown level kind"):
        level_class("diagonal")
    assert issubclass(level_class("runs"), Level)
