"""Test-suite configuration: markers, and a deterministic hypothesis profile for CI.

The pytest settings live here rather than in pyproject.toml so that the Array API
conformance suite, run with this project's xfails file, keeps its own rootdir and test ids.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])
elif os.environ.get("CI"):
    settings.load_profile("ci")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA device and CuPy")
    config.addinivalue_line("markers", "slow: long-running test")
