"""No folder of src/lazysparse holds more than 20 modules directly (issue 37): a stage that
grows past that is split into rooms by role (api/: chapters, building, stored, array,
protocols; formats/: conversion, validation, compiled, levels)."""

from __future__ import annotations

from pathlib import Path

import lazysparse

ROOT = Path(lazysparse.__file__).parent
MAX_MODULES = 20


def test_no_folder_holds_more_than_twenty_modules() -> None:
    crowded = {}
    for folder in [ROOT, *sorted(p for p in ROOT.rglob("*") if p.is_dir())]:
        if folder.name == "__pycache__":
            continue
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > MAX_MODULES:
            crowded[folder.relative_to(ROOT).as_posix() or "."] = len(modules)
    assert not crowded, f"folders over {MAX_MODULES} modules: {crowded}"
