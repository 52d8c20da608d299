"""tests/api fixtures: an executor call counter, and (only while logic.interpret is missing)
the test-only shim interpreter as the reference executor."""

from __future__ import annotations

import importlib.util

import pytest

from lazysparse.api import execution

if not hasattr(importlib.import_module("lazysparse.logic"), "interpret"):
    from tests.api._shim_interpreter import shim_interpret

    execution.register_executor("reference", lambda: shim_interpret)
    assert importlib.util  # keep the import used


@pytest.fixture
def count_executions(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Wraps the executor: the returned list gets one entry (the plan) per execution."""
    calls: list[object] = []
    real = execution.get_executor

    def counting() -> object:
        inner = real()

        def run(plan: object) -> object:
            calls.append(plan)
            return inner(plan)

        return run

    monkeypatch.setattr(execution, "get_executor", counting)
    return calls
