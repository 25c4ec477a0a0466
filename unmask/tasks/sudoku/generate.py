"""Puzzle sets: the named presets and a seeded, parallel, resumable-by-determinism generator."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

import numpy as np
from tqdm import tqdm

from unmask.errors import UnmaskError
from unmask.tasks.sudoku.data import SudokuSet, read_puzzles, write_puzzles
from unmask.tasks.sudoku.grid import MAX_SET_SIZE, PuzzleSpec, make_puzzle, puzzle_rng

# Named puzzle kinds. "kaggle": 30–36 givens, the density of the Kaggle 1M set the reference paper
# sampled its test puzzles from; "hard": minimal puzzles that naked + hidden singles cannot solve.
PRESETS: dict[str, PuzzleSpec] = {
    "kaggle": PuzzleSpec(min_givens=30, max_givens=36),
    "hard": PuzzleSpec(minimal=True, difficulty="hard"),
    "minimal": PuzzleSpec(minimal=True),
    "easy": PuzzleSpec(min_givens=30, max_givens=36, difficulty="easy"),
}

# The project's standard sets: (preset, size, seed). Distinct seeds keep test puzzles unseen.
STANDARD_SETS: dict[str, tuple[str, int, int]] = {
    "train": ("kaggle", 100_000, 1),
    "val-kaggle": ("kaggle", 500, 2),
    "val-hard": ("hard", 500, 3),
    "test-kaggle": ("kaggle", 1_000, 4),
    "test-hard": ("hard", 1_000, 5),
}


def _one(spec: PuzzleSpec, seed: int, index: int) -> tuple[list[int], list[int]]:
    return make_puzzle(spec, puzzle_rng(seed, index))


def generate(preset: str, n: int, seed: int, workers: int = 1, progress: bool = True) -> SudokuSet:
    """Draw ``n`` unique-solution puzzles of kind ``preset``; the same set for any ``workers``."""
    if preset not in PRESETS:
        raise UnmaskError(f"unknown puzzle kind {preset!r}; choose one of {', '.join(PRESETS)}")
    if not 1 <= n <= MAX_SET_SIZE:
        raise UnmaskError(f"need 1 <= n <= {MAX_SET_SIZE} puzzles, got n={n}")
    if seed < 0:
        raise UnmaskError(f"seed must be >= 0, got {seed}")
    job = partial(_one, PRESETS[preset], seed)
    bar = dict(total=n, desc=f"sudoku {preset}", disable=not progress, unit="puzzle")
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            pairs = list(tqdm(pool.map(job, range(n), chunksize=64), **bar))
    else:
        pairs = [job(k) for k in tqdm(range(n), **bar)]
    quizzes = np.array([p for p, _ in pairs], dtype=np.int8)
    solutions = np.array([s for _, s in pairs], dtype=np.int8)
    return SudokuSet(quizzes, solutions)


def standard_set(data_dir: str | os.PathLike, name: str, n: int | None = None) -> SudokuSet:
    """The first ``n`` puzzles of standard set ``name`` from ``data_dir/name.csv``, generating the
    file first if it is missing (deterministic by seed, so every machine gets the same set)."""
    if name not in STANDARD_SETS:
        raise UnmaskError(f"unknown standard set {name!r}; choose one of {', '.join(STANDARD_SETS)}")
    path = Path(data_dir) / f"{name}.csv"
    if not path.is_file():
        preset, size, seed = STANDARD_SETS[name]
        write_puzzles(path, generate(preset, size, seed, workers=2))
    data = read_puzzles(path)
    return SudokuSet(data.quizzes[:n], None if data.solutions is None else data.solutions[:n])
