"""Sudoku training batches (SudokuTraining.sample): solution grids, and puzzles whose givens stay visible."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from unmask.cli import main
from unmask.errors import UnmaskError
from unmask.model import TransformerDenoiser, load_model, save_model
from unmask.tasks.sudoku.data import (
    MASK_ID,
    POSITION_FEATURES,
    SudokuSet,
    from_tokens,
    is_valid_solution,
    read_puzzles,
    to_tokens,
    write_puzzles,
)
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


@pytest.mark.parametrize("prob, n, k", [(0.5, 16, 8), (0.25, 10, 3), (1.0, 6, 6)])
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


def test_puzzle_rows_split_evenly_between_sets_and_the_remainder_at_random():
    kaggle = SudokuSet(np.array([q for q, _ in _GRIDS], dtype=np.int8), SOLUTIONS)  # 30-36 givens
    task = SudokuTraining(SOLUTIONS, puzzles=(kaggle, PUZZLES), puzzle_prob=0.5)  # minimal ones: fewer than 30
    g = gen(2)
    firsts = set()
    for _ in range(20):
        _, maskable = task.sample(g, 10)  # 5 puzzle rows: 2 from each set and one more from either
        givens = (~maskable[5:]).sum(1)
        first = int((givens >= 30).sum())
        assert (givens[:first] >= 30).all() and (givens[first:] < 30).all()  # grouped by set, in order
        firsts.add(first)
    assert firsts == {2, 3}
    _, maskable = task.sample(gen(0), 2)  # one puzzle row: from either set
    assert maskable[:1].all() and not maskable[1].all()


def test_puzzle_prob_is_checked():
    with pytest.raises(UnmaskError, match="needs training puzzles"):
        SudokuTraining(SOLUTIONS, puzzle_prob=0.5)
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(UnmaskError, match="puzzle_prob"):
            SudokuTraining(SOLUTIONS, puzzles=(PUZZLES,), puzzle_prob=bad)
    with pytest.raises(UnmaskError, match="set 1 has no solutions"):
        SudokuTraining(SOLUTIONS, puzzles=(SudokuSet(PUZZLES.quizzes, None),), puzzle_prob=0.5)
    solved = SudokuSet(PUZZLES.solutions, PUZZLES.solutions)  # nothing left to mask: a NaN loss under elbo_weight
    with pytest.raises(UnmaskError, match="set 2 holds a puzzle with no blank"):
        SudokuTraining(SOLUTIONS, puzzles=(PUZZLES, solved), puzzle_prob=0.5)


def test_cli_trains_on_puzzles_from_a_model_and_resume_keeps_the_mix(tmp_path, sudoku_files, capsys):
    model_dir, puzzles = sudoku_files
    val = tmp_path / "val.csv"
    assert main(["sudoku", "generate", "--n", "2", "--seed", "9", "--out", str(val)]) == 0
    run = tmp_path / "run"
    base = ["sudoku", "train", "--data", str(puzzles), "--out", str(run), "--batch-size", "4", "--no-bf16",
            "--eval-every", "2", "--val", str(val), "--val-n", "2", "--lr", "1e-9", "--warmup", "0"]
    assert main(base + ["--steps", "2", "--puzzles", str(puzzles), "--init", str(model_dir), "--n-layers", "4"]) == 0
    state = torch.load(run / "checkpoint.pt", weights_only=False)
    assert state["model_config"]["n_layers"] == 4  # the small model's one block, stacked four times
    init = load_model(model_dir).state_dict()
    for k in range(4):  # at a learning rate of 1e-9 every block is still the init's one block
        for name, value in init.items():
            if name.startswith("blocks.0."):
                assert torch.allclose(state["model"][name.replace("blocks.0.", f"blocks.{k}.")], value, atol=1e-6), name
    assert set(state["source"]) == {"data_sha256", "init_sha256", "puzzles_sha256", "puzzle_prob"}
    assert state["source"]["puzzle_prob"] == 0.5
    capsys.readouterr()
    assert main(base + ["--steps", "3", "--resume"]) == 2  # without --puzzles: another data mix
    assert "another data mix" in capsys.readouterr().err
    other = tmp_path / "other"
    save_model(TransformerDenoiser(load_model(model_dir).cfg, POSITION_FEATURES), other)
    assert main(base + ["--steps", "3", "--resume", "--puzzles", str(puzzles), "--init", str(other)]) == 2
    assert "did not start from this model" in capsys.readouterr().err
    assert main(base + ["--steps", "3", "--resume", "--puzzles", str(puzzles), "--init", str(model_dir)]) == 0
    assert main(base + ["--steps", "4", "--resume", "--puzzles", str(puzzles)]) == 0  # --init may be left out
    assert torch.load(run / "checkpoint.pt", weights_only=False)["source"] == state["source"]


def test_cli_resume_of_a_run_without_puzzles_refuses_them_and_an_init(tmp_path, sudoku_files, capsys):
    model_dir, puzzles = sudoku_files
    run = tmp_path / "run"
    base = ["sudoku", "train", "--data", str(puzzles), "--out", str(run), "--batch-size", "2", "--no-bf16", "--warmup", "0",
            "--n-layers", "1", "--d-model", "16", "--n-heads", "2", "--d-ff", "32"]
    assert main(base + ["--steps", "1"]) == 0
    state = torch.load(run / "checkpoint.pt", weights_only=False)
    state["source"].pop("puzzle_prob")  # as a checkpoint written before training puzzles existed
    torch.save(state, run / "checkpoint.pt")
    resume = base[:6] + ["--batch-size", "2", "--no-bf16", "--warmup", "0", "--steps", "2", "--resume"]
    capsys.readouterr()
    assert main(resume + ["--puzzles", str(puzzles)]) == 2
    assert "another data mix" in capsys.readouterr().err
    assert main(resume + ["--init", str(model_dir)]) == 2
    assert "did not start from this model" in capsys.readouterr().err
    assert main(resume + ["--init", str(tmp_path / "nowhere")]) == 2
    assert "no model.safetensors there" in capsys.readouterr().err
    assert main(resume) == 0


@pytest.mark.parametrize("extra, message", [
    (["--puzzle-prob", "0.3"], "--puzzle-prob needs --puzzles"),
    (["--puzzles", "PUZ", "--puzzle-prob", "2"], "puzzle_prob must be in"),
    (["--puzzles", "PUZ", "--puzzle-prob", "0.2"], "is no puzzle row"),  # 0.2 of a batch of 2
    (["--puzzles", "PUZ", "--val", "PUZ"], "are in the validation set"),
    (["--puzzles", "SOLVED"], "has no blank cell"),
    (["--init", "MODEL", "--n-heads", "4"], "--init"),
    (["--init", "MODEL", "--d-model", "32"], "d_model"),
    (["--init", "NOWHERE"], "NOWHERE"),
])
def test_cli_refusals_are_one_line(tmp_path, sudoku_files, capsys, extra, message):
    model_dir, puzzles = sudoku_files
    solved = tmp_path / "solved.csv"
    data = read_puzzles(puzzles)
    write_puzzles(solved, SudokuSet(data.solutions, data.solutions))
    names = {"PUZ": puzzles, "MODEL": model_dir, "NOWHERE": tmp_path / "NOWHERE", "SOLVED": solved}
    extra = [str(names.get(a, a)) for a in extra]
    args = ["sudoku", "train", "--data", str(puzzles), "--out", str(tmp_path / "r"), "--steps", "1", "--warmup", "0",
            "--batch-size", "2"]
    assert main(args + extra) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "r").exists()  # refused before any work
