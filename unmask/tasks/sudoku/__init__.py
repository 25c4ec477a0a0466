"""Sudoku: puzzles with a unique solution (and widened ones with several), files, scoring, structure."""

from unmask.tasks.sudoku.generate import generate, standard_set, widened_set
from unmask.tasks.sudoku.task import SudokuTask

__all__ = ["SudokuTask", "generate", "standard_set", "widened_set"]
