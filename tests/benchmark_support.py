"""Helpers shared by the tests of the benchmark scripts (which are scripts, not a package)."""
from __future__ import annotations

from pathlib import Path
from types import ModuleType

from module_support import load_module

ROOT = Path(__file__).resolve().parents[1]


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` imported as the module ``<name>_benchmark`` (its ``main`` not run)."""
    return load_module(f"{name}_benchmark", ROOT / "benchmarks" / f"{name}.py")
