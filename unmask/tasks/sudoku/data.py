"""Sudoku files, tokens, scoring and symmetry augmentation.

Files follow the common Kaggle schema: CSV with header ``quizzes,solutions`` (``solutions`` may be
absent), one 81-character grid per field, ``0`` or ``.`` for a blank.

Tokens: digit d (1..9) is token d-1; :data:`MASK_ID` (9) marks a blank. The model predicts over
the :data:`VOCAB_SIZE` (9) digit tokens only.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from unmask.errors import UnmaskError
from unmask.io import atomic_write, read_text
from unmask.tasks.sudoku.grid import BOX, COL, ROW, UNITS

VOCAB_SIZE = 9  # digits 1..9 as tokens 0..8
MASK_ID = 9  # the blank / mask token
POSITION_FEATURES = torch.tensor([ROW, COL, BOX]).T.contiguous()  # (81, 3): row, column, box id
_UNITS = np.array(UNITS)  # (27, 9) cell indices of every row, column and box


@dataclass(frozen=True)
class SudokuSet:
    """Puzzles (0 = blank) and, when known, their solutions; both ``(N, 81)`` int8 in 0..9."""

    quizzes: np.ndarray  # (N, 81)
    solutions: np.ndarray | None  # (N, 81) or None

    def __len__(self) -> int:
        return len(self.quizzes)

    def __getitem__(self, rows: slice) -> SudokuSet:
        """The puzzles (and solutions) of ``rows``, e.g. ``data[:100]``."""
        return SudokuSet(self.quizzes[rows], None if self.solutions is None else self.solutions[rows])


def parse_grid(text: str, *, allow_blanks: bool = True) -> np.ndarray:
    """Parse one 81-character grid (``0``/``.`` blank) into an int8 array; UnmaskError if malformed."""
    text = text.strip()
    if len(text) != 81:
        raise UnmaskError(f"a grid needs 81 characters, got {len(text)}: {text[:20]!r}...")
    bad = sorted({ch for ch in text if ch not in "0123456789."})
    if bad:
        raise UnmaskError(f"a grid may hold only digits and '.', found {''.join(bad)!r}")
    grid = np.frombuffer(text.replace(".", "0").encode(), dtype=np.uint8).astype(np.int8) - ord("0")
    if not allow_blanks and (grid == 0).any():
        raise UnmaskError("a solution grid has blanks")
    return grid


def format_grid(grid) -> str:
    """The 81-character string of a grid (``0`` for blanks)."""
    return "".join(str(int(v)) for v in grid)


def givens_clash(quizzes: np.ndarray) -> np.ndarray:
    """``(N,)`` bool: does some row, column or box hold the same given digit twice?"""
    units = quizzes[:, _UNITS]  # (N, 27, 9)
    counts = np.stack([(units == d).sum(-1) for d in range(1, 10)], -1)  # (N, 27, 9)
    return (counts > 1).any(axis=(1, 2))


def is_valid_solution(grids: np.ndarray, quizzes: np.ndarray) -> np.ndarray:
    """``(N,)`` bool: every row, column and box is a permutation of 1..9 and every given is kept.

    A real check on values (sorting each unit), never on object identity.
    """
    grids = np.asarray(grids, dtype=np.int64)
    quizzes = np.asarray(quizzes, dtype=np.int64)
    units = np.sort(grids[:, _UNITS], axis=-1)  # (N, 27, 9)
    units_ok = (units == np.arange(1, 10)).all(axis=(1, 2))
    givens_ok = ((quizzes == 0) | (grids == quizzes)).all(axis=1)
    return units_ok & givens_ok


def score(grids: np.ndarray, data: SudokuSet) -> np.ndarray:
    """``(N,)`` bool: exact match with the known solution, or a validity check when there is none."""
    if data.solutions is not None:
        return (np.asarray(grids) == data.solutions).all(axis=1)
    return is_valid_solution(grids, data.quizzes)


def read_puzzles(path: str | os.PathLike) -> SudokuSet:
    """Read a ``quizzes[,solutions]`` CSV; UnmaskError naming the file and line for any problem."""
    text = read_text(path)  # (before Path, which turns '' into '.')
    path = Path(path)
    reader = csv.reader(io.StringIO(text, newline=""))
    quizzes, solutions, lines = [], [], []
    try:
        header = [h.strip() for h in next(reader, [])]
        if not header or header[0] != "quizzes" or header[1:] not in ([], ["solutions"]):
            raise UnmaskError(f"{path}: header must be 'quizzes' or 'quizzes,solutions', got {','.join(header)[:100]!r}")
        has_sol = len(header) == 2
        for row in reader:
            if not row:
                continue
            if len(row) != len(header):
                raise UnmaskError(f"{path}:{reader.line_num}: expected {len(header)} fields, got {len(row)}")
            lines.append(reader.line_num)
            try:
                quizzes.append(parse_grid(row[0]))
                if has_sol:
                    solutions.append(parse_grid(row[1], allow_blanks=False))
            except UnmaskError as e:
                raise UnmaskError(f"{path}:{reader.line_num}: {e}") from None
    except csv.Error as e:  # e.g. a field over the csv module's 128 kB limit
        raise UnmaskError(f"{path}:{reader.line_num}: not a puzzle CSV ({e})") from None
    if not quizzes:
        raise UnmaskError(f"{path}: no puzzles")
    data = SudokuSet(np.stack(quizzes), np.stack(solutions) if has_sol else None)
    _check(data, path, lines)
    return data


def _check(data: SudokuSet, path: Path, lines: list[int]) -> None:
    """Refuse clashing givens and solutions that are invalid or disagree with their puzzle.

    ``lines``: the file line of each puzzle (blank lines are skipped when reading)."""
    clash = np.flatnonzero(givens_clash(data.quizzes))
    if clash.size:
        raise UnmaskError(f"{path}:{lines[clash[0]]}: the puzzle's givens repeat a digit in a row, column or box")
    if data.solutions is not None:
        bad = np.flatnonzero(~is_valid_solution(data.solutions, data.quizzes))
        if bad.size:
            raise UnmaskError(f"{path}:{lines[bad[0]]}: the solution is not a valid grid agreeing with the puzzle")


def write_puzzles(path: str | os.PathLike, data: SudokuSet) -> None:
    """Write a ``quizzes[,solutions]`` CSV atomically."""

    def write(tmp: str) -> None:
        with open(tmp, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["quizzes", "solutions"] if data.solutions is not None else ["quizzes"])
            for k, q in enumerate(data.quizzes):
                w.writerow([format_grid(q)] + ([format_grid(data.solutions[k])] if data.solutions is not None else []))

    atomic_write(path, write)


def to_tokens(grids: np.ndarray) -> torch.Tensor:
    """Grids (0 = blank) → token ids ``(N, 81)`` with blanks as :data:`MASK_ID`."""
    g = torch.as_tensor(np.asarray(grids), dtype=torch.long)
    return torch.where(g == 0, torch.full_like(g, MASK_ID), g - 1)


def from_tokens(tokens: torch.Tensor) -> np.ndarray:
    """Token ids → grids (masks become 0)."""
    t = tokens.long()
    return torch.where(t == MASK_ID, torch.zeros_like(t), t + 1).cpu().numpy().astype(np.int8)


def _random_perms(n: int, k: int, gen: torch.Generator) -> torch.Tensor:
    """``(n, k)`` independent uniform permutations of ``range(k)``."""
    return torch.rand(n, k, generator=gen).argsort(dim=1)


def augment(tokens: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Random validity-preserving symmetries of solution grids ``(B, 81)``, one draw per row.

    Digit relabelling, band/stack permutations, row/column permutations inside them, transpose.
    Together they generate the full Sudoku symmetry group (9! · 6^8 · 2 elements).
    """
    return _apply_symmetry(tokens, *_draw_symmetry(tokens.shape[0], gen))


def augment_pairs(quizzes: torch.Tensor, solutions: torch.Tensor, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`augment` puzzles ``(B, 81)`` and their solutions ``(B, 81)`` by one symmetry per row,
    so each augmented solution still solves its augmented puzzle."""
    cell, relabel = _draw_symmetry(quizzes.shape[0], gen)
    return _apply_symmetry(quizzes, cell, relabel), _apply_symmetry(solutions, cell, relabel)


def _draw_symmetry(b: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``b`` random symmetries: the source cell of each target cell ``(B, 81)`` and a digit map ``(B, 9)``."""

    def lines() -> torch.Tensor:  # (B, 9): a random row (or column) order respecting bands
        bands = _random_perms(b, 3, gen)  # (B, 3)
        inner = torch.stack([_random_perms(b, 3, gen) for _ in range(3)], 1)  # (B, 3, 3)
        return (bands[:, :, None] * 3 + inner).reshape(b, 9)

    rows, cols = lines(), lines()  # (B, 9) each
    cell = rows[:, :, None] * 9 + cols[:, None, :]  # (B, 9, 9) source cell of each target cell
    flip = torch.rand(b, generator=gen) < 0.5
    cell = torch.where(flip[:, None, None], cell.transpose(1, 2), cell).reshape(b, 81)
    return cell, _random_perms(b, VOCAB_SIZE, gen)


def _apply_symmetry(tokens: torch.Tensor, cell: torch.Tensor, relabel: torch.Tensor) -> torch.Tensor:
    """Move cells by ``cell`` and relabel digits by ``relabel``; mask ids stay masks."""
    out = tokens.gather(1, cell)
    digit = out < VOCAB_SIZE
    return torch.where(digit, relabel.gather(1, out.clamp(max=VOCAB_SIZE - 1)), out)
