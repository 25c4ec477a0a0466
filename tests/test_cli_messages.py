"""Messages, help and silent results of the reliability round (issue 50): each mistaken command gets one
line that says what is wrong (exit 2), each help page says what a flag does and its real default, and
what ran says what it did. Each test names the failure it was written for.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
from pathlib import Path

import pytest

from unmask.cli import build_parser, main
from unmask.tasks.sudoku.data import read_puzzles


def refused(cli, argv: list, message: str) -> str:
    """``argv`` exits with 2 and one stderr line (progress bars aside) holding ``message``; that line."""
    code, _, err = cli(argv)
    lines = [line for line in err.replace("\r", "\n").splitlines() if line.strip() and "%|" not in line]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("unmask: error:") and message in lines[0], err
    return lines[0]


def leaf_parsers(parser: argparse.ArgumentParser, name: str = "unmask"):
    """``(name, parser)`` of every command, the hidden old spellings too."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, p in action.choices.items():
                yield from leaf_parsers(p, f"{name} {sub}")


# --- misleading messages ----------------------------------------------------------------------------


def test_an_empty_file_name_says_so(sudoku_files, tmp_path, cli):
    # Failure: `--reference ''` (and any '' file) reported as "`.`: is a folder".
    model_dir, puzzles = sudoku_files
    fasta = tmp_path / "g.fasta"
    fasta.write_text(">a\nMKV\n")
    refused(cli, ["proteins", "eval", "--generated", fasta, "--reference", ""], "'': an empty file name")
    refused(cli, ["sudoku", "eval", "--puzzles", "", "--model", model_dir], "'': an empty file name")
    refused(cli, ["sudoku", "eval", "--puzzles", puzzles, "--model", model_dir, "--out", ""], "'': an empty file name")


def test_a_value_starting_with_a_dash(cli):
    # Failure: `--length -5:60` answered by argparse's bare "expected one argument".
    line = refused(cli, ["proteins", "generate", "--length", "-5:60", "--out", "x.fasta"], "expected one argument")
    assert "--length=VALUE" in line
    refused(cli, ["proteins", "generate", "--length=-5:60", "--out", "x.fasta"], "need 1 <= LO <= HI, got '-5:60'")
    assert "=VALUE" not in refused(cli, ["sudoku", "eval", "--puzzles"], "expected one argument")  # a value simply missing


@pytest.mark.parametrize("low", ["0", "1", "-3"])
def test_widen_bounds_have_one_rule(sudoku_files, tmp_path, cli, low):
    # Failure: --low 0 refused as "must be >= 1" and --low 1 as "need 2 <= --low": two bounds for one flag.
    _, puzzles = sudoku_files
    line = refused(cli, ["sudoku", "widen", "--puzzles", puzzles, "--out", tmp_path / "w.csv", f"--low={low}"],
                   "need 2 <= --low <= --high")
    assert f"--low {low}" in line
    refused(cli, ["sudoku", "widen", "--puzzles", puzzles, "--out", tmp_path / "w.csv", "--low", "9", "--high", "4"],
            "need 2 <= --low <= --high")


def test_a_grid_of_the_wrong_length_is_not_called_a_missing_file(sudoku_files, tmp_path, cli):
    # Failure: an 80-digit grid given to mi map --examples reported as "no such file".
    model_dir, puzzles = sudoku_files
    grid = "".join(read_puzzles(puzzles).quizzes[0].astype(str))
    line = refused(cli, ["mi", "map", "--examples", grid[:80], "--model", model_dir, "--out", tmp_path / "m.png"],
                   "a grid has 81 characters 0-9 or '.', this has 80")
    assert "no such file, nor a puzzle grid" in line
    refused(cli, ["sudoku", "eval", "--puzzles", grid + "1", "--model", model_dir], "this has 82")


@pytest.mark.parametrize("flag, value, message", [
    ("--states", "0", "states must be an integer >= 1, got 0"),
    ("--shard-size", "0", "shard_size must be an integer >= 1, got 0"),
    ("--rows", "-1", "rows must be an integer >= 0, got -1"),
])
def test_mi_data_names_the_field_and_the_value(sudoku_files, tmp_path, cli, flag, value, message):
    # Failure: "states and shard_size must be positive, rows >= 0" whichever one was wrong, without its value.
    model_dir, puzzles = sudoku_files
    refused(cli, ["mi", "data", "--examples", puzzles, "--model", model_dir, "--out", tmp_path / "d", f"{flag}={value}"],
            message)
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("argv", [
    ["sudoku", "eval", "--puzzles", "P", "--model", "MODEL"],
    ["sudoku", "generate", "--n", "2", "--out", "OUT"],
    ["sudoku", "widen", "--puzzles", "P", "--out", "OUT"],
    ["sudoku", "demo", "--model", "nowhere"],  # refused at the flag, before the model loads (nowhere is no model)
    ["maths", "demo", "--model", "nowhere"],
    ["maths", "generate", "--n", "2", "--out", "OUT"],
    ["sudoku", "train", "--data", "P", "--out", "OUT", "--steps", "1"],
    ["sudoku", "train-order", "--data", "P", "--out", "OUT", "--steps", "1"],
])
def test_negative_seeds_are_refused_alike_at_the_flag(sudoku_files, tmp_path, cli, argv):
    # Failure: --seed -1 accepted by eval, refused by generate, and by demo only after the model had loaded.
    model_dir, puzzles = sudoku_files
    names = {"P": puzzles, "MODEL": model_dir, "OUT": tmp_path / "out"}
    argv = [names.get(a, a) for a in argv]
    seed = "--val-seed" if "train-order" in argv else "--seed"
    refused(cli, [*argv, seed, "-1"], "a seed must be >= 0, got -1")
    assert not (tmp_path / "out").exists()


def test_interrupted_starts_its_own_line_after_an_open_progress_bar(monkeypatch, cli):
    # Failure: "unmask: interrupted" written on the progress bar's line ("...it/s]unmask: interrupted").
    from tqdm import tqdm

    from unmask.commands import sudoku

    def interrupted(args, close: bool):
        bar = tqdm(total=3, desc="decode")
        bar.update(1)
        if close:
            bar.close()
        raise KeyboardInterrupt

    for close in (False, True):
        monkeypatch.setattr(sudoku, "_generate", lambda args, close=close: interrupted(args, close))
        code, _, err = cli(["sudoku", "generate", "--n", "2", "--out", "x.csv"])
        assert code == 130 and err.endswith("]\nunmask: interrupted\n"), err  # the bar's line ended, nothing after


# --- help -------------------------------------------------------------------------------------------


def test_help_pages_are_plain_and_complete():
    # Failures: `hf-eval ==SUPPRESS==` in `unmask maths --help`; ``x``, :mod:`x` and :class:`x` (reST) in the
    # policy list; --budget naming three of the six fixed-budget policies; the 0 and 0.0 defaults not shown.
    from unmask.policies import budget_policies

    assert {"random", "top_prob", "margin", "mi_steps", "exact_steps", "learned"} <= set(budget_policies())
    for name, parser in leaf_parsers(build_parser()):
        text = parser.format_help()
        assert "SUPPRESS" not in text and "``" not in text and ":mod:" not in text and ":class:" not in text, name
        if "fixed-budget policy" in " ".join(text.split()):  # (train-order's --budget is its learned policy's)
            flat = " ".join(text.split())
            assert f"fixed-budget policy ({', '.join(budget_policies())};" in flat, name
    eval_help = " ".join(dict(leaf_parsers(build_parser()))["unmask sudoku eval"].format_help().split())
    assert "= sample (default: 0.0)" in eval_help and "(batch-invariant) (default: 0)" in eval_help


def test_sudoku_eval_takes_n(sudoku_files, cli):
    # Failure: --n on maths eval but not on sudoku eval.
    model_dir, puzzles = sudoku_files
    code, out, err = cli(["sudoku", "eval", "--puzzles", puzzles, "--model", model_dir, "--n", "2", "--json"])
    assert code == 0, err
    assert json.loads(out)["n"] == 2


@pytest.mark.parametrize("spelling", ["--examples", "--puzzles", "--puzzle", "--problems"])
def test_mi_map_and_mi_data_take_the_same_spellings(spelling):
    # Failure: mi map took --puzzle where mi data and every other command take --puzzles (the old one still works).
    parser = build_parser()
    for verb in ("map", "data"):
        args = parser.parse_args(["mi", verb, spelling, "grid.csv", "--out", "o.png"])
        assert args.examples == "grid.csv", (verb, spelling)


def test_train_order_prints_json(sudoku_files, tmp_path, cli):
    # Failure: train-order printed its validation record as a Python dict ({'step': 2, ...}), train prints JSON.
    model_dir, puzzles = sudoku_files
    code, out, err = cli(["sudoku", "train-order", "--model", model_dir, "--data", puzzles, "--out", tmp_path / "run",
                          "--steps", "2", "--batch-size", "2", "--samples", "2", "--budget", "3", "--eval-every", "2",
                          "--ckpt-every", "2", "--warmup", "1", "--val", puzzles, "--val-n", "2"])
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert records and records[-1]["step"] == 2, out


# --- silent wrong results ---------------------------------------------------------------------------


@pytest.mark.parametrize("cdrs, message", [("H1,H1", "H1 given more than once"), ("H3,H1,H3", "H3 given more than once"),
                                           ("H4", "must be among H1, H2, H3")])
def test_cdrs_are_each_given_once(cli, cdrs, message):
    # Failure: --cdrs H1,H1 accepted, H1 counted twice in the recovery and diversity averages.
    refused(cli, ["proteins", "infill", "--antibodies", "a.fasta", "--model", "hf:nowhere", "--cdrs", cdrs], message)


def test_an_output_ending_in_a_slash_is_refused(sudoku_files, tmp_path, cli):
    # Failure: --out dir/ (not existing) wrote a file named dir.
    model_dir, puzzles = sudoku_files
    for argv in (["sudoku", "generate", "--n", "2"], ["maths", "generate", "--n", "2"],
                 ["sudoku", "eval", "--puzzles", puzzles, "--model", model_dir]):
        refused(cli, [*argv, "--out", f"{tmp_path / 'dir'}/"], "names a folder (it ends in a slash)")
        assert not (tmp_path / "dir").exists()


def test_output_files_are_readable_by_all(tmp_path):
    # Failure: files written 0600 (mkstemp's mode) where a model or data set is meant to be shared.
    from unmask.io import atomic_write

    atomic_write(tmp_path / "x.json", lambda tmp: Path(tmp).write_text("{}"))
    assert stat.S_IMODE(os.stat(tmp_path / "x.json").st_mode) == 0o644
    assert main(["sudoku", "generate", "--n", "2", "--out", str(tmp_path / "p.csv")]) == 0
    assert stat.S_IMODE(os.stat(tmp_path / "p.csv").st_mode) == 0o644


def test_demo_takes_policy_as_eval_does():
    # Failure: `sudoku demo --policy topk:k=5` refused (the demo spelled it --policies, eval --policy).
    for task in ("sudoku", "maths"):
        args = build_parser().parse_args([task, "demo", "--policy", "topk:k=5", "eb"])
        assert args.policies == ["topk:k=5", "eb"]
