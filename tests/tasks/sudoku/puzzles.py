"""Six generated Kaggle-density puzzles and their solutions, shared by the Sudoku data tests."""

from __future__ import annotations

import numpy as np

from unmask.tasks.sudoku.generate import PRESETS
from unmask.tasks.sudoku.grid import make_puzzle, puzzle_rng

_PAIRS = [make_puzzle(PRESETS["kaggle"], puzzle_rng(123, k)) for k in range(6)]
QUIZZES = np.array([p for p, _ in _PAIRS], dtype=np.int8)  # (6, 81)
SOLUTIONS = np.array([s for _, s in _PAIRS], dtype=np.int8)  # (6, 81)
