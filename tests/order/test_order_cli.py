"""``unmask <task> train-order --objective rl`` end to end: the task's own check is the reward."""

from __future__ import annotations

import json


def test_sudoku_rl_reads_the_puzzles_own_check(sudoku_files, tmp_path, cli):
    """Bugs caught: --objective not reaching the trainer (the ELBO trained instead: no train_success in the
    log), or the reward scoring other puzzles than the ones rolled out (index mapping into a SudokuSet)."""
    model_dir, puzzles = sudoku_files
    code, out, err = cli(["sudoku", "train-order", "--model", model_dir, "--data", puzzles, "--out", tmp_path / "run",
                          "--objective", "rl", "--step-cost", "0.05", "--kl-start", "0.1", "--steps", "2",
                          "--batch-size", "2", "--samples", "2", "--budget", "3", "--eval-every", "2", "--ckpt-every", "2",
                          "--warmup", "1", "--val", puzzles, "--val-n", "2"])
    assert code == 0, err
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert 0 <= log[-1]["train_success"] <= 1 and "train_elbo" not in log[-1]
    meta = json.loads((tmp_path / "run" / "order_policy.json").read_text())
    assert meta["train_config"]["objective"] == "rl" and meta["train_config"]["kl_start"] == 0.1


def test_unknown_objective_is_one_line(cli):
    """Bug caught: a typo'd objective trained the ELBO for hours, or ended in a traceback."""
    code, _, err = cli(["maths", "train-order", "--data", "d.jsonl", "--out", "o", "--objective", "grpo"])
    assert code == 2 and "choose one of elbo, rl" in err and "Traceback" not in err
