"""tests/api fixtures: an executor call counter."""

from __future__ import annotations

import pytest

from lazysparse.engine import executors


@pytest.fixture
def count_executions(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Wraps the executor: the returned list gets one entry (the plan) per execution."""
    calls: list[object] = []
    real = executors.get_executor

    def counting() -> object:
        inner = real()

        def run(plan: object) -> object:
            calls.append(plan)
            return inner(plan)

        return run

    monkeypatch.setattr(executors, "get_executor", counting)
    return calls
