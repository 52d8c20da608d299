"""``formats.env_settings.EnvSetting``: a ``LAZYSPARSE_*`` variable parsed once per value,
every change seen at the next call (``monkeypatch.setenv`` and ``os.environ`` writes alike)."""

from __future__ import annotations

import os

import pytest

from lazysparse.engine.executors import get_executor, reference_executor
from lazysparse.engine.tiers import CompileMode, compile_mode, compile_mode_set
from lazysparse.formats.config import DEFAULT_DENSIFY_LIMIT, get_densify_limit
from lazysparse.formats.env_settings import EnvSetting


def test_parses_once_per_value_and_sees_every_change(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str | None] = []

    def parse(raw: str | None) -> int:
        seen.append(raw)
        return 0 if raw is None else int(raw)

    name = "LAZYSPARSE_TEST_ENV_SETTING"
    monkeypatch.delenv(name, raising=False)
    s = EnvSetting(name, parse)
    assert [s.get() for _ in range(3)] == [0, 0, 0]
    monkeypatch.setenv(name, "7")
    assert [s.get() for _ in range(3)] == [7, 7, 7]
    os.environ[name] = "8"
    assert s.get() == 8
    monkeypatch.delenv(name)
    assert s.get() == 0
    assert seen == [None, "7", "8", None]  # one parse per value


def test_a_rejected_value_raises_at_every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAZYSPARSE_COMPILE", "sometimes")
    for _ in range(2):
        with pytest.raises(ValueError, match="LAZYSPARSE_COMPILE='sometimes'"):
            compile_mode()
    monkeypatch.setenv("LAZYSPARSE_DENSIFY_LIMIT", "lots")
    for _ in range(2):
        with pytest.raises(ValueError, match="LAZYSPARSE_DENSIFY_LIMIT"):
            get_densify_limit()
    monkeypatch.setenv("LAZYSPARSE_EXECUTOR", "nowhere")
    for _ in range(2):
        with pytest.raises(ValueError, match="'nowhere' is not an executor"):
            get_executor()


def test_the_settings_follow_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAZYSPARSE_EXECUTOR", " Reference ")
    assert get_executor() is reference_executor
    monkeypatch.setenv("LAZYSPARSE_DENSIFY_LIMIT", "1024")
    assert get_densify_limit() == 1024
    monkeypatch.delenv("LAZYSPARSE_DENSIFY_LIMIT")
    assert get_densify_limit() == DEFAULT_DENSIFY_LIMIT
    with compile_mode_set(CompileMode.EAGER):
        assert compile_mode() is CompileMode.EAGER
    with compile_mode_set(CompileMode.SYNC):
        assert compile_mode() is CompileMode.SYNC
