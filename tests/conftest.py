"""Test-suite configuration: markers, and the hypothesis profiles that set every example count.

The pytest settings live here rather than in pyproject.toml so that the Array API
conformance suite, run with this project's xfails file, keeps its own rootdir and test ids.

Hypothesis example counts come from one profile per run: ``ci`` (the full counts,
derandomized) or ``dev`` (a tenth of them), chosen in :func:`hypothesis_profile`. A test that
draws more or fewer examples than the profile's default writes its ``ci`` count through
:func:`examples`, which scales it to the loaded profile.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Any

import pytest
from hypothesis import settings

# the suite tests the compiled kernels: every plan compiles in process, as before the eager
# tier (tests/engine/test_tiers.py sets the other modes itself)
os.environ.setdefault("LAZYSPARSE_COMPILE", "sync")

#: the examples a hypothesis test draws under the full ``ci`` profile (hypothesis' default)
FULL_EXAMPLES = 100
settings.register_profile("ci", max_examples=FULL_EXAMPLES, derandomize=True, print_blob=True)
settings.register_profile("dev", max_examples=FULL_EXAMPLES // 10, print_blob=True)


def hypothesis_profile(config: pytest.Config) -> str:
    """The profile of this run: ``HYPOTHESIS_PROFILE`` or ``--hypothesis-profile`` when given,
    ``ci`` under ``CI``, else ``dev`` for a run that deselects the slow tests (``-m "not
    slow"``, the fast tier) and ``ci`` for a full run."""
    named = os.environ.get("HYPOTHESIS_PROFILE") or config.getoption("hypothesis_profile", None)
    if named:
        return named
    if os.environ.get("CI"):
        return "ci"
    return "dev" if "not slow" in " ".join(config.option.markexpr.split()) else "ci"


def slow_except(values: Iterable[Any], fast: Collection[Any]) -> list[Any]:
    """``values`` for ``parametrize``, each one not in ``fast`` marked ``slow``: the fast tier
    runs a representative few of a long parametrization, the full suite runs all of them.
    A tuple is one case of several argument names (``"dtype, fill"``), as parametrize reads it."""
    return [v if v in fast else
            pytest.param(*(v if isinstance(v, tuple) else (v,)), marks=pytest.mark.slow)
            for v in values]


def rotation(cases: Sequence[Any], choices: Sequence[Any],
             case_ids: Sequence[str] | None = None,
             slow_choices: Sequence[Any] = (), slow_cases: Sequence[Any] = ()) -> list[Any]:
    """Every case of ``cases`` with every one of ``choices``, for ``parametrize`` (a tuple
    case or choice is several argument names, the choice's last): the fast tier runs case
    ``k`` with ``choices[k % len(choices)]`` only, so every case and every choice still runs
    in it (given as many cases as choices; one kernel per case, not one per pair), and the
    full suite runs the whole product.
    ``slow_choices`` go with every case, and ``slow_cases`` with every choice, in the full
    suite only."""
    out = []
    for k, case in enumerate([*cases, *slow_cases]):
        values = case if isinstance(case, tuple) else (case,)
        name = case_ids[k] if case_ids is not None and k < len(case_ids) else \
            "-".join(map(_param_id, values))
        for j, choice in enumerate([*choices, *slow_choices]):
            picked = choice if isinstance(choice, tuple) else (choice,)
            fast = k < len(cases) and j == k % len(choices)
            slow = () if fast else (pytest.mark.slow,)
            out.append(pytest.param(*values, *picked, marks=slow,
                                    id="-".join([name, *map(_param_id, picked)])))
    return out


def covering(items: Sequence[pytest.Item]) -> list[pytest.Item]:
    """A few of one test function's parametrized ``items`` in which every value of every
    parametrize axis occurs at least once (a value is its object, as parametrize holds it):
    greedily the item that adds the most values not yet seen, the earlier one on a tie.
    The fast tier runs these (one kernel per value, not one per combination); the full
    suite runs them all."""
    values = [{(name, id(v)) for name, v in item.callspec.params.items()} for item in items]
    seen: set[tuple[str, int]] = set()
    picked: list[int] = []
    while True:
        gain, best = max((len(v - seen), -i) for i, v in enumerate(values))
        if gain == 0:
            return [items[i] for i in sorted(picked)]
        picked.append(-best)
        seen |= values[-best]


def _axes(item: pytest.Item) -> int:
    """How many ``parametrize`` marks (axes) ``item`` is parametrized by; names
    parametrized together (``"dtype, fill"``, a ``rotation``) are one axis."""
    if getattr(item, "callspec", None) is None:
        return 0
    return sum(1 for _ in item.iter_markers("parametrize"))


@pytest.hookimpl(tryfirst=True)  # before ``-m "not slow"`` deselects by mark
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test function parametrized over two or more axes (``dtype`` x ``fmt`` x ``op``)
    runs their whole product in the full suite and a :func:`covering` of it in the fast
    tier: the other fast items get the ``slow`` mark. Already-``slow`` items stay out of
    the covering (``slow_except``, ``rotation`` choose theirs)."""
    groups: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        if _axes(item) > 1 and item.get_closest_marker("slow") is None:
            groups[item.nodeid.split("[", 1)[0]].append(item)
    for group in groups.values():
        keep = {id(item) for item in covering(group)}
        for item in group:
            if id(item) not in keep:
                item.add_marker(pytest.mark.slow)


def _param_id(value: Any) -> str:
    """A test id's part for ``value``: a type's or function's name (``int32``), else str."""
    name = getattr(value, "__name__", None)
    return name if isinstance(name, str) else str(value)


def examples(n: int) -> int:
    """``n``, a test's example count under the ``ci`` profile, scaled to the loaded profile
    (``dev``: a tenth, at least 1), so one profile setting decides every count of a run."""
    return max(1, n * settings().max_examples // FULL_EXAMPLES)


#: how ``gpu``-marked tests that take the ``gpu`` fixture run: ``device`` (CuPy on a real GPU,
#: skipped without one) or ``emulate`` (NumPy for CuPy, the CPU emulator of the generated
#: kernels for NVRTC: ``benchmarks/gpu_check.sh --dry-run`` rehearses the device run so)
GPU_TESTS = os.environ.get("LAZYSPARSE_GPU_TESTS", "device")


def pytest_configure(config: pytest.Config) -> None:
    if GPU_TESTS not in ("device", "emulate"):
        raise pytest.UsageError(f"LAZYSPARSE_GPU_TESTS={GPU_TESTS!r}: expected device or "
                                "emulate")
    config.addinivalue_line("markers", "gpu: needs a CUDA device and CuPy")
    config.addinivalue_line("markers", "slow: long-running test (left out of the fast tier, "
                            '-m "not slow"; the full suite and CI run it)')
    # before any test module is imported: their @settings(max_examples=examples(n)) read it
    settings.load_profile(hypothesis_profile(config))


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``"device"``: a real GPU through CuPy (skip without one); ``"emulated"`` under
    ``LAZYSPARSE_GPU_TESTS=emulate``: CuPy and NVRTC replaced by NumPy and the kernel
    emulator for this test (``tests/kernels/backends/cuda/emulator.py``)."""
    import lazysparse.kernels.backends.cuda.runtime as rt  # the CUDA backend: gpu tests only

    if GPU_TESTS == "emulate":
        from tests.kernels.backends.cuda.emulator import CXX, EMULATION

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
