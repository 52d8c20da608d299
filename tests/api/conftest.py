"""tests/api fixtures: an executor call counter."""

from __future__ import annotations

import pytest

from lazysparse.api import execution


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
