"""Import a repository file that is a script, not a module of a package: ``scripts/*.py``,
``benchmarks/*.py``, ``setup.py``, the book's extensions. Shared by the tests that call their functions."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_module(name: str, path: Path) -> ModuleType:
    """``path`` imported as the module ``name`` (its ``main`` not run), registered in ``sys.modules``:
    dataclasses and pickled tasks look their module up there."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py`` imported as the module ``name``."""
    return load_module(name, ROOT / "scripts" / f"{name}.py")
