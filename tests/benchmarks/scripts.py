"""Helpers of the benchmark-script tests: load a script from benchmarks/<subject>/ as a module, make a --data-dir."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_script(name: str):
    (path,) = (ROOT / "benchmarks").glob(f"*/{name}.py")  # benchmarks/<subject>/<name>.py
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # (dataclasses look their module up there)
    spec.loader.exec_module(module)
    return module


def standard_sets_of(puzzles: Path, folder: Path, names=("test-kaggle", "test-hard")) -> Path:
    """A ``--data-dir`` whose standard sets ``names`` are all copies of the CSV ``puzzles``."""
    folder.mkdir()
    for name in names:
        shutil.copy(puzzles, folder / f"{name}.csv")
    return folder

