"""pytest plugin: run scikit-learn's, scipy's and array-api-extra's own tests with lazysparse.

Loaded with ``-p client_suites_plugin`` (``benchmarks/`` on ``PYTHONPATH``) by
``benchmarks/client_suites.py``. The clients' test code stays in site-packages; this plugin
only adds lazysparse to the namespace lists those suites parametrize over, the same way they
list ``array_api_strict``, and keeps the tests of one namespace (``--client-namespace``):

- scikit-learn: ``sklearn.utils._array_api.yield_namespaces`` and
  ``yield_namespace_device_dtype_combinations`` (read when the test modules are imported, so
  they are replaced before the conftests load). lazysparse gets the
  two dtypes scikit-learn gives ``array_api_strict`` (float64 and float32, default device).
- scipy: its conftest's ``xp`` fixture, parametrized over ``xp_available_backends``. When the
  conftest module is registered, lazysparse is appended to that list and to
  ``xp_known_backends`` (so ``np_only`` skip markers apply to it) and the fixture is rebuilt
  with the longer parameter list.

- array-api-extra: its tests parametrize over the members of
  ``array_api_extra._lib._backends.Backend``. Before its conftest loads, that enum is
  replaced by one with the same members, methods and module plus ``LAZYSPARSE``, so the
  ``library``/``xp`` fixtures yield lazysparse (through ``array_api_compat.array_namespace``,
  as for every other backend) and the suite's ``skip_xp_backend`` markers keep working.

The suites need ``SCIPY_ARRAY_API=1`` in the environment (the driver sets it).
"""

from __future__ import annotations

import enum
import functools
import importlib
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

LAZYSPARSE = "lazysparse"
_DTYPES = ("float64", "float32")


def _patch_sklearn() -> None:
    """Add lazysparse to scikit-learn's test namespace generators (if sklearn is installed)."""
    try:
        skl = importlib.import_module("sklearn.utils._array_api")
    except ImportError:
        return
    original_names = skl.yield_namespaces
    original_combos = skl.yield_namespace_device_dtype_combinations

    @functools.wraps(original_names)
    def yield_namespaces(include_numpy_namespaces: bool = True) -> Iterator[str]:
        yield from original_names(include_numpy_namespaces=include_numpy_namespaces)
        yield LAZYSPARSE

    @functools.wraps(original_combos)
    def yield_combinations(
        include_numpy_namespaces: bool = True,
    ) -> Iterator[tuple[str, str | None, str | None]]:
        for combo in original_combos(include_numpy_namespaces=include_numpy_namespaces):
            if combo[0] != LAZYSPARSE:
                yield combo
        for dtype_name in _DTYPES:
            yield LAZYSPARSE, None, dtype_name

    # The generators' module globals are what the test modules and estimator_checks read.
    skl.yield_namespaces = yield_namespaces
    skl.yield_namespace_device_dtype_combinations = yield_combinations


def extended_backends(backend: type[enum.Enum]) -> type[enum.Enum]:
    """array-api-extra's ``Backend`` enum with a ``LAZYSPARSE`` member added: the same
    members, methods and module (an enum with members cannot be subclassed)."""
    body = enum.EnumType.__prepare__(backend.__name__, (enum.Enum,))
    for member in backend:
        body[member.name] = member.value
    body["LAZYSPARSE"] = LAZYSPARSE
    for name, value in vars(backend).items():
        if callable(value) or isinstance(value, property):
            if not name.startswith("_") and name not in body:
                body[name] = value
    body["__module__"] = backend.__module__
    body["__doc__"] = backend.__doc__
    return enum.EnumType(backend.__name__, (enum.Enum,), body)


def _patch_array_api_extra() -> None:
    """Swap array-api-extra's ``Backend`` for the extended one (if it is installed), before
    its conftest and test modules import it; its methods read ``Backend`` from the module."""
    try:
        backends = importlib.import_module("array_api_extra._lib._backends")
    except ImportError:
        return
    if "LAZYSPARSE" not in backends.Backend.__members__:
        backends.Backend = extended_backends(backends.Backend)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Patch scikit-learn and array-api-extra before their conftests and test modules
    import the namespace lists."""
    _patch_sklearn()
    _patch_array_api_extra()


def pytest_configure(config: pytest.Config) -> None:
    """array-api-extra's markers (its own pytest configuration is not read from
    site-packages)."""
    for marker in ("skip_xp_backend", "xfail_xp_backend", "thread_unsafe"):
        config.addinivalue_line("markers", f"{marker}: array-api-extra's marker")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--client-namespace",
        default=LAZYSPARSE,
        help="keep only the tests parametrized with this Array-API namespace",
    )
    parser.addoption(
        "--client-failed-from",
        default=None,
        help="keep only the tests a JUnit XML file records as failed or in error",
    )


def case_name(case: ET.Element) -> str:
    """``test_module.py::Class::test[id]`` of a JUnit test case (the file's name, as the
    suites run from site-packages give pytest no rootdir-relative path)."""
    file = Path(case.get("file") or "").name
    classes = [c for c in (case.get("classname") or "").split(".") if c[:1].isupper()]
    return "::".join([file, *classes, case.get("name") or ""])


def failed_names(xml: str) -> set[str]:
    """The :func:`case_name` of each failed or erroring case of a JUnit XML file."""
    root = ET.parse(xml).getroot()
    return {case_name(case) for case in root.iter("testcase")
            if case.find("failure") is not None or case.find("error") is not None}


def item_name(item: pytest.Item) -> str:
    """An item's name in the form of :func:`case_name`."""
    classes = [c.name for c in item.listchain() if isinstance(c, pytest.Class)]
    return "::".join([item.path.name, *classes, item.name])


def _rebuild_scipy_xp_fixture(conftest: ModuleType) -> None:
    """Append lazysparse to scipy's backend list and re-create the ``xp`` fixture over it."""
    lazysparse = importlib.import_module(LAZYSPARSE)
    conftest.xp_known_backends.add(LAZYSPARSE)
    conftest.xp_available_backends.append(
        pytest.param(lazysparse, id=LAZYSPARSE, marks=pytest.mark.array_api_backends)
    )
    body = conftest.xp._get_wrapped_function()
    conftest.xp = pytest.fixture(params=conftest.xp_available_backends, name="xp")(body)


@pytest.hookimpl(tryfirst=True)
def pytest_plugin_registered(plugin: object, plugin_name: str, manager: Any) -> None:
    """Patch scipy's conftest before pytest reads its fixtures."""
    if (
        isinstance(plugin, ModuleType)
        and plugin.__name__.endswith("conftest")
        and hasattr(plugin, "xp_available_backends")
        and hasattr(plugin, "xp_known_backends")
        and LAZYSPARSE not in plugin.xp_known_backends
    ):
        _rebuild_scipy_xp_fixture(plugin)


def _param_names(value: object) -> Iterator[str]:
    """The namespace names a parametrize value stands for (a name, a module, a partial, an
    array-api-extra ``Backend``: its tag, so ``array_api_strict:strictest`` is not strict's)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, enum.Enum) and isinstance(value.value, str):
        yield value.value
    elif isinstance(value, ModuleType):
        yield value.__name__
    elif isinstance(value, functools.partial):
        name = value.keywords.get("array_namespace")
        if isinstance(name, str):
            yield name


def uses_namespace(item: pytest.Item, name: str) -> bool:
    """Whether the test item is one of the namespace's Array-API parametrizations."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return False
    return any(name in _param_names(v) for v in callspec.params.values())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    name = config.getoption("--client-namespace")
    failed_from = config.getoption("--client-failed-from")
    wanted = failed_names(failed_from) if failed_from else None

    def kept(item: pytest.Item) -> bool:
        return uses_namespace(item, name) and (
            wanted is None or item_name(item) in wanted)

    keep = [item for item in items if kept(item)]
    dropped = [item for item in items if not kept(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep
