"""engine.plan_store: optimized plans kept on disk, so a new process does not optimize a known
expression again; a damaged, foreign or stale file is ignored (the plan is optimized again)
and an entry that could mean something else in another process is never written."""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.api.array.materialize import build_plan
from lazysparse.engine import compiled_executor, plan_cache, plan_store
from lazysparse.logic.nodes import Plan
from lazysparse.logic.operators import OPERATORS
from lazysparse.logic.structural_key import structure_of

_A = sp.random_array((40, 30), density=0.2, format="csr", rng=1)
_V = np.linspace(0.5, 2.0, 30)
_WANT = [float((_A @ (_V * 2.0)).sum()), float((_A * 3.0 + _A).sum())]

# a fresh process: the same two expressions, their values and the plan cache's counts
_SCRIPT = """
import json
import numpy as np
import scipy.sparse as sp
import lazysparse as xp
from lazysparse.engine import plan_cache, tiers

a = xp.asarray(sp.random_array((40, 30), density=0.2, format="csr", rng=1))
v = xp.asarray(np.linspace(0.5, 2.0, 30))
vals = [float(xp.sum(a @ (v * 2.0))), float(xp.sum(a * 3.0 + a))]
from lazysparse.kernels.backends.numba import cache
print(json.dumps({"values": vals, "optimized": plan_cache.STATS["optimized"],
                  "disk_hits": plan_cache.STATS["disk_hits"], "eager": tiers.STATS["eager"],
                  "compiled_tier": tiers.STATS["compiled"],
                  "kernels_compiled": cache.STATS["compiled"]}))
"""


def _fresh_process(cache: Path, mode: str = "sync") -> dict[str, object]:
    """Run :data:`_SCRIPT` in a new interpreter on the kernel cache ``cache``
    (``LAZYSPARSE_COMPILE=mode``: a plan goes on disk once it ran compiled)."""
    src = str(Path(xp.__file__).parents[1])
    env = dict(os.environ, LAZYSPARSE_CACHE_DIR=str(cache), LAZYSPARSE_COMPILE=mode,
               PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                         text=True, check=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / "plans").rglob(f"*{plan_store.SUFFIX}"))


def test_a_new_process_computes_known_expressions_without_the_optimizer(
        tmp_path: Path) -> None:
    first = _fresh_process(tmp_path)
    assert first["optimized"] == 2 and first["disk_hits"] == 0
    assert len(_entries(tmp_path)) == 2
    second = _fresh_process(tmp_path)
    assert second["optimized"] == 0 and second["disk_hits"] == 2
    np.testing.assert_allclose(first["values"], _WANT)
    np.testing.assert_allclose(second["values"], _WANT)


@pytest.mark.slow
def test_a_new_process_runs_a_known_shape_compiled_at_once(tmp_path: Path) -> None:
    """A plan on disk ran compiled before, so its kernels are in the kernel cache: in the
    default mode a new process runs it compiled on its first call (no eager run, no
    optimizer, no compile), where a shape never seen runs eager first."""
    _fresh_process(tmp_path)
    second = _fresh_process(tmp_path, mode="background")
    assert second["optimized"] == 0 and second["disk_hits"] == 2
    assert second["eager"] == 0 and second["compiled_tier"] == 2
    assert second["kernels_compiled"] == 0
    np.testing.assert_allclose(second["values"], _WANT)
    fresh = _fresh_process(tmp_path / "other", mode="background")
    assert fresh["eager"] == 2 and fresh["compiled_tier"] == 0
    np.testing.assert_allclose(fresh["values"], _WANT)


def test_a_shape_that_only_ran_eager_is_kept_on_disk_as_eager(tmp_path: Path) -> None:
    """Its plan is kept, marked eager-only: a new process reads it instead of optimizing
    it again, and still runs it eager (its kernels were never compiled, so nothing waits on
    a compile); once a process runs it compiled, the file says so and a later process
    runs it compiled at once."""
    first = _fresh_process(tmp_path, mode="eager")
    assert first["eager"] == 2 and first["optimized"] == 2 and len(_entries(tmp_path)) == 2
    again = _fresh_process(tmp_path, mode="background")
    assert again["optimized"] == 0 and again["disk_hits"] == 2
    assert again["eager"] == 2 and again["compiled_tier"] == 0
    np.testing.assert_allclose(again["values"], _WANT)
    synced = _fresh_process(tmp_path, mode="sync")  # compiles in process: marked compiled
    assert synced["optimized"] == 0 and synced["compiled_tier"] == 2
    hot = _fresh_process(tmp_path, mode="background")
    assert hot["optimized"] == 0 and hot["eager"] == 0 and hot["compiled_tier"] == 2
    assert hot["kernels_compiled"] == 0
    np.testing.assert_allclose(hot["values"], _WANT)


@pytest.mark.slow
def test_a_corrupt_entry_falls_back_to_the_optimizer_and_is_rewritten(tmp_path: Path) -> None:
    _fresh_process(tmp_path)
    damaged, truncated = _entries(tmp_path)
    blob = bytearray(damaged.read_bytes())
    blob[-5] ^= 0xFF
    damaged.write_bytes(bytes(blob))
    truncated.write_bytes(truncated.read_bytes()[:20])
    again = _fresh_process(tmp_path)
    assert again["optimized"] == 2 and again["disk_hits"] == 0
    np.testing.assert_allclose(again["values"], _WANT)
    assert _fresh_process(tmp_path)["optimized"] == 0  # both files were written anew


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A plan store in ``tmp_path``, the in-memory plan cache empty."""
    monkeypatch.setenv("LAZYSPARSE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("LAZYSPARSE_EXECUTOR", raising=False)
    plan_cache.clear_plan_cache()
    yield tmp_path
    plan_cache.clear_plan_cache()


def _plan() -> Plan:
    """The plan of ``sum(A @ (v * 2))`` (the engine's input: no api memo in between)."""
    return build_plan((xp.sum(xp.asarray(_A) @ (xp.asarray(_V) * 2.0)),))


def _value(plan: Plan) -> float:
    """The plan's one result, run by the compiled executor (plan cache first)."""
    (out,) = compiled_executor(plan)
    return float(out.to_numpy())


def _run_twice_across_a_cleared_memory_cache() -> tuple[float, float]:
    """The plan's value, before and after the in-memory plan cache is cleared."""
    plan = _plan()
    r1 = _value(plan)
    plan_cache.clear_plan_cache()
    return r1, _value(plan)


def test_a_cleared_memory_cache_reads_the_disk(store: Path) -> None:
    o0, d0 = plan_cache.STATS["optimized"], plan_cache.STATS["disk_hits"]
    r1, r2 = _run_twice_across_a_cleared_memory_cache()
    assert plan_cache.STATS["optimized"] - o0 == 1
    assert plan_cache.STATS["disk_hits"] - d0 == 1
    assert r1 == pytest.approx(_WANT[0]) and r2 == pytest.approx(_WANT[0])


def test_an_eager_shape_is_written_once_then_once_more_when_compiled(
        store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Eager calls of one shape write its plan once (not on every call); its first compiled
    call writes it once more, marked compiled; the file then reads as compiled."""
    plan = _plan()
    saved = plan_store.STATS["saved"]
    monkeypatch.setenv("LAZYSPARSE_COMPILE", "eager")
    assert [_value(plan) for _ in range(3)] == pytest.approx([_WANT[0]] * 3)
    assert plan_store.STATS["saved"] - saved == 1
    entry, _, _ = plan_cache.lookup(plan)
    assert entry.eager_saved and not entry.from_disk and entry.store_key is not None
    monkeypatch.setenv("LAZYSPARSE_COMPILE", "sync")
    assert _value(plan) == pytest.approx(_WANT[0])
    assert _value(plan) == pytest.approx(_WANT[0])
    assert plan_store.STATS["saved"] - saved == 2 and entry.store_key is None
    plan_cache.clear_plan_cache()
    again, _, _ = plan_cache.lookup(plan)
    assert again.from_disk


def _rewrite(path: Path, change: int) -> None:
    """Rewrite the entry at ``path`` with a valid checksum but one field changed: its
    version (``change`` 0) or its key text (1)."""
    blob = path.read_bytes()
    version, text, entry = pickle.loads(blob[len(plan_store.MAGIC) + 32:])
    fields = [version, text, entry]
    fields[change] = "other " + fields[change]
    payload = pickle.dumps(tuple(fields), protocol=plan_store.PROTOCOL)
    path.write_bytes(plan_store.MAGIC + hashlib.sha256(payload).digest() + payload)


@pytest.mark.parametrize("change", [0, 1], ids=["stale-version", "another-key"])
def test_a_stale_or_foreign_entry_is_never_used(store: Path, change: int) -> None:
    plan = _plan()
    _value(plan)
    (path,) = _entries(store)
    _rewrite(path, change)
    plan_cache.clear_plan_cache()
    o0, r0 = plan_cache.STATS["optimized"], plan_store.STATS["rejected"]
    assert _value(plan) == pytest.approx(_WANT[0])
    assert plan_cache.STATS["optimized"] - o0 == 1
    assert plan_store.STATS["rejected"] - r0 == 1


def test_an_unwritable_store_keeps_plans_in_memory(store: Path) -> None:
    (store / "plans").write_text("not a directory")
    o0 = plan_cache.STATS["optimized"]
    r1, r2 = _run_twice_across_a_cleared_memory_cache()
    assert plan_cache.STATS["optimized"] - o0 == 2
    assert r1 == pytest.approx(_WANT[0]) and r2 == pytest.approx(_WANT[0])


def test_clear_cache_deletes_persisted_plans(store: Path) -> None:
    float(xp.sum(xp.asarray(_A) @ xp.asarray(_V)))
    assert _entries(store)
    xp.clear_cache()
    assert not _entries(store)


def test_canonical_keys_are_texts_of_values_never_identities() -> None:
    key = (Plan, ("op", "add", ()), np.dtype("<f8"), np.float32(0.5), 1.5, None)
    assert plan_store.canonical(key) == plan_store.canonical(tuple(key))
    assert plan_store.canonical((1,)) != plan_store.canonical((1.0,))
    assert plan_store.canonical(("1",)) != plan_store.canonical((1,))
    for bad in [("id", 12345), ("op", "not-a-package-operator", ()), (object(),)]:
        with pytest.raises(plan_store.Unpersistable):
            plan_store.canonical(bad)


def test_a_users_operator_is_not_pickled() -> None:
    theirs = replace(OPERATORS["add"], name="user_add")
    with pytest.raises(plan_store.Unpersistable):
        plan_store._PlanPickler(io.BytesIO()).dump(theirs)  # noqa: SLF001


def test_an_uncacheable_plan_is_optimized_once_and_not_persisted(
        store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_cache, "_template", lambda *args: None)  # as for held data
    o0, u0 = plan_cache.STATS["optimized"], plan_cache.STATS["uncacheable"]
    assert _value(_plan()) == pytest.approx(_WANT[0])
    assert plan_cache.STATS["optimized"] - o0 == 1
    assert plan_cache.STATS["uncacheable"] - u0 == 1
    assert not _entries(store)


def test_a_structure_is_encoded_once_and_as_before() -> None:
    """A structure's canonical text is kept with it (a new plan's key is encoded by ``load``
    and again by ``save``, and a structure recurs over shapes): the same text as walking its
    tokens, and an unpersistable one (an identity inside) refused every time."""
    inner = structure_of(("map", ("op", "add", ()), 2))
    outer = structure_of(("q", inner, np.dtype("<f8"), 1.5))
    key = ("cpu", (outer, (3, 4)))
    plan_store._STRUCTURE_TEXTS.clear()  # noqa: SLF001
    first = plan_store.canonical(key)
    assert outer in plan_store._STRUCTURE_TEXTS and inner in plan_store._STRUCTURE_TEXTS  # noqa: SLF001
    assert plan_store.canonical(key) == first
    assert first == ("(str:'cpu',(S(str:'q',S(str:'map',(str:'op',str:'add',(),),int:2,),"
                     "dtype:<f8,float:1.5,),(int:3,int:4,),),)")
    bad = structure_of(("q", ("id", 12345)))
    for _ in range(2):
        with pytest.raises(plan_store.Unpersistable, match="identity"):
            plan_store.canonical(("cpu", bad))
