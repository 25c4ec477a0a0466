"""``unmask <task> train-order --objective rl`` end to end: the task's own check is the reward."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from unmask.tasks.sudoku.data import SudokuSet


def test_sudoku_rl_reads_the_puzzles_own_check(sudoku_files, tmp_path, cli):
    """Bug caught: --objective not reaching the trainer (the ELBO trained instead: no train_success in the log)."""
    model_dir, puzzles = sudoku_files
    code, out, err = cli(["sudoku", "train-order", "--model", model_dir, "--data", puzzles, "--out", tmp_path / "run",
                          "--objective", "rl", "--step-cost", "0.05", "--kl-start", "0.1", "--steps", "2",
                          "--batch-size", "2", "--samples", "2", "--budget", "3", "--eval-every", "2", "--ckpt-every", "2",
                          "--warmup", "1", "--val", puzzles, "--val-n", "2"])
    assert code == 0, err
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert 0 <= log[-1]["train_success"] <= 1 and 0 <= log[-1]["train_signal"] <= 1 and "train_elbo" not in log[-1]
    meta = json.loads((tmp_path / "run" / "order_policy.json").read_text())
    assert meta["train_config"]["objective"] == "rl" and meta["train_config"]["kl_start"] == 0.1


def test_unknown_objective_is_one_line(cli):
    """Bug caught: a typo'd objective trained the ELBO for hours, or ended in a traceback."""
    code, _, err = cli(["maths", "train-order", "--data", "d.jsonl", "--out", "o", "--objective", "grpo"])
    assert code == 2 and "choose one of elbo, rl" in err and "Traceback" not in err


@pytest.mark.parametrize("kind", ["list", "sudoku"])
def test_the_reward_scores_the_examples_rolled_out(kind):
    """The reward of rollout r is the task's check of example index[r], for a list of examples (maths, seq) and a
    SudokuSet alike, with repeated and permuted numbers. Bugs caught: examples taken in file order, or by
    position in the batch; a SudokuSet indexed with a tensor on another device."""
    from unmask.commands.order import task_success

    class Parity:  # a task whose check is: the first token equals the example's number mod 2
        def score(self, tokens, examples):
            want = [e % 2 for e in examples] if isinstance(examples, list) else list(examples.quizzes[:, 0] % 2)
            return torch.tensor([int(t[0]) == int(w) for t, w in zip(tokens, want)])

    if kind == "list":
        data = list(range(10))
    else:
        data = SudokuSet(np.arange(10, dtype=np.int8)[:, None].repeat(81, 1), None)
    index = torch.tensor([3, 3, 8, 1, 0, 0])
    tokens = torch.tensor([[1], [0], [0], [1], [0], [1]])  # right, wrong, right, right, right, wrong
    got = task_success(Parity(), data)(tokens, index)
    assert got.tolist() == [1.0, 0.0, 1.0, 1.0, 1.0, 0.0]


def test_rl_is_refused_where_nothing_is_simply_right(cli):
    """Bug caught: hours of RL on a task whose check (exact recovery of a whole protein) is never met: every
    advantage 0, the untrained policy saved without a word."""
    code, _, err = cli(["proteins", "train-order", "--model", "hf:nowhere", "--data", "d.fasta", "--out", "o",
                        "--objective", "rl"])
    assert code == 2 and "never simply right or wrong" in err and "Traceback" not in err
