"""Sudoku training batches (SudokuTraining.sample): solution grids, and puzzles whose givens stay visible."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from unmask.cli import main
from unmask.errors import UnmaskError
from unmask.tasks.sudoku.data import MASK_ID, SudokuSet, from_tokens, is_valid_solution, to_tokens
from unmask.tasks.sudoku.generate import PRESETS
from unmask.tasks.sudoku.grid import make_puzzle, puzzle_rng
from unmask.tasks.sudoku.task import SudokuTraining

_GRIDS = [make_puzzle(PRESETS["kaggle"], puzzle_rng(321, k)) for k in range(8)]
_HARD = [make_puzzle(PRESETS["minimal"], puzzle_rng(654, k)) for k in range(4)]
SOLUTIONS = np.array([s for _, s in _GRIDS], dtype=np.int8)  # (8, 81)
PUZZLES = SudokuSet(np.array([q for q, _ in _HARD], dtype=np.int8), np.array([s for _, s in _HARD], dtype=np.int8))


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_without_puzzles_every_cell_is_maskable_and_the_stream_is_the_old_one():
    plain = SudokuTraining(SOLUTIONS)
    with_unused = SudokuTraining(SOLUTIONS, puzzles=(PUZZLES,), puzzle_prob=0.0)
    x, maskable = plain.sample(gen(0), 16)
    y, _ = with_unused.sample(gen(0), 16)
    assert maskable.all() and torch.equal(x, y)
    assert is_valid_solution(from_tokens(x), np.zeros((16, 81), np.int8)).all()


@pytest.mark.parametrize("prob, n, k", [(0.5, 16, 8), (0.25, 10, 2), (1.0, 6, 6)])
def test_puzzle_rows_keep_their_givens_and_mask_only_blanks(prob, n, k):
    task = SudokuTraining(SOLUTIONS, puzzles=(PUZZLES,), puzzle_prob=prob)
    x, maskable = task.sample(gen(1), n)
    assert x.shape == (n, 81) and maskable.shape == (n, 81)
    assert maskable[: n - k].all()  # solution-grid rows first
    rows, allowed = x[n - k:], maskable[n - k:]  # then puzzle rows: (k, 81)
    givens = PUZZLES.quizzes.astype(bool).sum(1)  # a symmetry keeps the number of givens
    assert set((~allowed).sum(1).tolist()) <= set(givens.tolist())
    quiz = torch.where(allowed, torch.full_like(rows, MASK_ID), rows)  # the visible cells: an augmented puzzle
    q, s = from_tokens(quiz), from_tokens(rows)
    assert is_valid_solution(s, q).all()  # the row is the solution of the puzzle its visible cells form
    known = {tuple(r) for r in to_tokens(PUZZLES.solutions).tolist()}
    assert not all(tuple(r) in known for r in rows.tolist())  # augmented, not copied


def test_puzzle_rows_split_evenly_between_sets():
    kaggle = SudokuSet(np.array([q for q, _ in _GRIDS], dtype=np.int8), SOLUTIONS)  # 30-36 givens
    task = SudokuTraining(SOLUTIONS, puzzles=(kaggle, PUZZLES), puzzle_prob=0.5)  # minimal ones: fewer than 30
    _, maskable = task.sample(gen(2), 10)  # 5 puzzle rows: 3 from the first set, then 2 from the second
    givens = (~maskable[5:]).sum(1)
    assert (givens[:3] >= 30).all() and (givens[3:] < 30).all()


def test_puzzle_prob_is_checked():
    with pytest.raises(UnmaskError, match="needs training puzzles"):
        SudokuTraining(SOLUTIONS, puzzle_prob=0.5)
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(UnmaskError, match="puzzle_prob"):
            SudokuTraining(SOLUTIONS, puzzles=(PUZZLES,), puzzle_prob=bad)
    with pytest.raises(UnmaskError, match="solutions"):
        SudokuTraining(SOLUTIONS, puzzles=(SudokuSet(PUZZLES.quizzes, None),), puzzle_prob=0.5)


def test_cli_trains_on_puzzles_from_a_model_and_resume_keeps_the_mix(tmp_path, sudoku_files, capsys):
    model_dir, puzzles = sudoku_files
    run = tmp_path / "run"
    base = ["sudoku", "train", "--data", str(puzzles), "--out", str(run), "--batch-size", "4", "--no-bf16",
            "--eval-every", "2", "--val", str(puzzles), "--val-n", "2"]
    assert main(base + ["--steps", "2", "--puzzles", str(puzzles), "--init", str(model_dir), "--n-layers", "4"]) == 0
    state = torch.load(run / "checkpoint.pt", weights_only=False)
    assert state["model_config"]["n_layers"] == 4  # the small model's one block, stacked four times
    assert set(state["source"]) == {"data_sha256", "init_sha256", "puzzles_sha256", "puzzle_prob"}
    assert state["source"]["puzzle_prob"] == 0.5
    capsys.readouterr()
    assert main(base + ["--steps", "3", "--resume"]) == 2  # without --puzzles: another data mix
    assert "puzzle_prob" in capsys.readouterr().err
    assert main(base + ["--steps", "3", "--resume", "--puzzles", str(puzzles)]) == 0
    assert torch.load(run / "checkpoint.pt", weights_only=False)["source"] == state["source"]


@pytest.mark.parametrize("extra, message", [
    (["--puzzle-prob", "0.3"], "--puzzle-prob needs --puzzles"),
    (["--puzzles", "PUZ", "--puzzle-prob", "2"], "puzzle_prob must be in"),
    (["--init", "MODEL", "--n-heads", "4"], "n_heads"),
    (["--init", "MODEL", "--d-model", "32"], "d_model"),
    (["--init", "NOWHERE"], "NOWHERE"),
])
def test_cli_refusals_are_one_line(tmp_path, sudoku_files, capsys, extra, message):
    model_dir, puzzles = sudoku_files
    extra = [str(puzzles) if a == "PUZ" else str(model_dir) if a == "MODEL" else str(tmp_path / a) if a == "NOWHERE" else a
             for a in extra]
    args = ["sudoku", "train", "--data", str(puzzles), "--out", str(tmp_path / "r"), "--steps", "1", "--batch-size", "2"]
    assert main(args + extra) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
