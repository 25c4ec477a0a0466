"""Puzzle sets: the named presets and a seeded, parallel, resumable-by-determinism generator."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from unmask.errors import UnmaskError
from unmask.oracle import SupportDenoiser
from unmask.tasks.sudoku.data import VOCAB_SIZE, SudokuSet, read_puzzles, to_tokens, write_puzzles
from unmask.tasks.sudoku.grid import MAX_SET_SIZE, PuzzleSpec, make_puzzle, puzzle_rng, solutions, widen

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


@dataclass(frozen=True)
class WidenedSet:
    """Puzzles with several solutions each, and every one of them: each puzzle's true posterior is known."""

    puzzles: SudokuSet  # the widened puzzles (no solutions column: scored as valid grids)
    solutions: list[np.ndarray]  # every solution of puzzle k: (K_k, 81) digits
    source: np.ndarray  # (N,) index of each puzzle in the set it was widened from

    def __len__(self) -> int:
        return len(self.solutions)

    def __getitem__(self, index: slice) -> WidenedSet:
        return WidenedSet(self.puzzles[index], self.solutions[index], self.source[index])

    def oracle(self) -> SupportDenoiser:
        """The exact denoiser of these puzzles: each equally likely, and uniform over its solutions, so every
        conditional is the true P(cell | clues, revealed cells); a context of probability 0 (a decode that
        broke the puzzle) gets the conditionals of the solutions nearest to it, so the decode can finish.
        Its cost grows with the solutions of all the puzzles: decode a large set a slice at a time."""
        seqs = torch.cat([to_tokens(s) for s in self.solutions])  # (S, 81)
        weights = torch.cat([torch.full((len(s),), 1 / (len(self.solutions) * len(s)), dtype=torch.float64)
                             for s in self.solutions])
        oracle = SupportDenoiser(seqs, weights, VOCAB_SIZE, nearest=True)
        mine = oracle.mass(to_tokens(self.puzzles.quizzes), nearest=False) > 0  # (N, S) the support each puzzle's clues keep
        if (mine.sum(1) != torch.tensor([len(s) for s in self.solutions])).any():
            raise UnmaskError("the clues of one widened puzzle fit a solution of another; their posteriors would mix")
        return oracle


def widened_set(examples: SudokuSet, low: int, high: int, seed: int = 0) -> WidenedSet:
    """Each puzzle of ``examples`` with givens blanked in random order (puzzle k from
    :func:`puzzle_rng` (``seed``, k); :func:`~unmask.tasks.sudoku.grid.widen`) until it has ``low``..``high``
    solutions, with all of them: puzzles whose true posterior has dependencies (one solution: every cell
    certain, every pair independent). A puzzle its order does not get there is left out (``source`` says which stay)."""
    if not 2 <= low <= high:
        raise UnmaskError(f"need 2 <= low <= high solutions, got {low}, {high}")
    if seed < 0:
        raise UnmaskError(f"seed must be >= 0, got {seed}")
    kept, quizzes, sols = [], [], []
    for k, quiz in enumerate(examples.quizzes):
        grid = widen(quiz.tolist(), puzzle_rng(seed, k), low, high)
        if grid is not None:
            kept.append(k)
            quizzes.append(grid)
            sols.append(np.array(solutions(grid, high), dtype=np.int8))
    if not kept:
        raise UnmaskError(f"no puzzle could be widened to {low}..{high} solutions")
    return WidenedSet(SudokuSet(np.array(quizzes, dtype=np.int8), None), sols, np.array(kept))
