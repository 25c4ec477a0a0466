"""The ``unmask`` command: output formats, and one clear line with exit code 2 for bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from unmask.cli import main
from unmask.tasks.sudoku.data import read_puzzles
from unmask.tasks.sudoku.task import DEFAULT_MODEL as DEFAULT_SUDOKU_MODEL


@pytest.fixture
def files(sudoku_files):
    return sudoku_files


def test_generate_writes_a_readable_set(files):
    _, puzzles = files
    data = read_puzzles(puzzles)
    assert len(data) == 6 and data.solutions is not None


def test_eval_json(files, capsys):
    model_dir, puzzles = files
    assert main(["sudoku", "eval", "--puzzles", str(puzzles), "--model", str(model_dir), "--policy", "topk:k=7", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"accuracy", "mean_nfe", "n", "policy", "examples_per_s", "model", "temperature", "seed"} <= set(out)
    assert out["n"] == 6 and out["policy"] == "topk:k=7,metric=entropy"
    assert out["temperature"] == 0.0 and out["seed"] == 0 and out["model"].endswith("model")
    blanks = (read_puzzles(puzzles).quizzes == 0).sum(1)
    assert out["mean_nfe"] == pytest.approx(((blanks + 6) // 7).mean())


def test_eval_text(files, capsys):
    model_dir, puzzles = files
    assert main(["sudoku", "eval", "--puzzles", str(puzzles), "--model", str(model_dir)]) == 0
    assert "accuracy" in capsys.readouterr().out


def test_an_old_policy_name_is_noted_in_one_line(files, capsys):
    # Bugs caught: a renamed spec (mi_exact is now exact) refused, shown as Python's two-line warning
    # (file:line, then the source line), or noted twice (the spec is checked before the load, then built).
    model_dir, puzzles = files
    assert main(["sudoku", "eval", "--puzzles", str(puzzles), "--model", str(model_dir), "--policy", "mi_exact:gamma=0.01,lam=1",
                 "--json"]) == 0
    out = capsys.readouterr()
    assert out.err.splitlines() == ["unmask: note: policy spec 'mi_exact:gamma=0.01,lam=1' "
                                    "is now 'exact:gamma=0.01,lam=1,charge=mi'"]
    assert json.loads(out.out)["policy"] == "exact:gamma=0.01,lam=1.0,charge=mi,eps=0.001"


@pytest.mark.parametrize("spec", ["learned", "mi:lam=2"])
def test_mi_data_refuses_a_policy_that_needs_resources_whatever_was_imported(files, capsys, tmp_path, spec):
    # Bug caught: `mi data --policy learned` answered "unknown policy 'learned'" (the learned family
    # not registered by the modules that command imports) instead of saying why it cannot be used.
    model_dir, puzzles = files
    assert main(["mi", "data", "--puzzles", str(puzzles), "--model", str(model_dir), "--out", str(tmp_path / "d"),
                 "--policy", spec]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "choose a policy that needs none" in err and "unknown policy" not in err


BAD = [
    (["--policy", "nope"], "unknown policy 'nope'"),
    (["--policy", "topk:k=seven"], "k='seven' is not a valid int"),
    (["--policy", "topk:q=1"], "bad argument 'q=1'"),
    (["--policy", "eb:gamma=-1"], "gamma must be >= 0"),
    (["--policy", "sequential:metric=vibes"], "unknown confidence metric"),
    (["--temperature", "-1"], "must be a finite number >= 0, got -1"),
]


@pytest.mark.parametrize("extra,message", BAD)
def test_bad_specs_exit_2_with_one_line(files, cli, extra, message):
    model_dir, puzzles = files
    code, _, err = cli(["sudoku", "eval", "--puzzles", str(puzzles), "--model", str(model_dir), *extra])
    assert code == 2
    assert message in err and err.count("\n") == 1 and err.startswith("unmask: error:")


def test_bad_files_exit_2(files, tmp_path, capsys):
    model_dir, puzzles = files
    cases = {
        "missing.csv": None,
        "short.csv": "quizzes,solutions\n123,456\n",
        "clash.csv": "quizzes\n" + "11" + "0" * 79 + "\n",
        "header.csv": "puzzle\n" + "0" * 81 + "\n",
    }
    for name, text in cases.items():
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
        assert main(["sudoku", "eval", "--puzzles", str(path), "--model", str(model_dir)]) == 2, name
        assert capsys.readouterr().err.count("\n") == 1
    assert main(["sudoku", "eval", "--puzzles", str(puzzles), "--model", str(tmp_path)]) == 2
    assert "not a model directory" in capsys.readouterr().err


@pytest.mark.parametrize("argv,message", [
    (["sudoku", "eval", "--puzzles", "x.csv", "--batch-size", "0"], "--batch-size: must be >= 1"),
    (["sudoku", "demo", "--n", "-3"], "--n: must be >= 1"),
    (["sudoku", "train", "--data", "x", "--out", "y", "--steps", "zero"], "invalid integer value"),
    (["train", "sudoku", "--data", "x", "--out", "y", "--steps", "zero"], "invalid integer value"),  # the old spelling
    (["sudoku", "eval", "--puzzles", "x.csv", "--budget", "0"], "--budget: must be >= 1"),
    (["bogus"], "invalid choice: 'bogus'"),
])
def test_argument_errors_are_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and message in err and err.count("\n") == 1


def test_map_cell_errors(files, capsys):
    model_dir, puzzles = files
    for cell in ("a,b", "1", "10,1"):
        assert main(["mi", "map", "--model", str(model_dir), "--examples", str(puzzles), "--cell", cell, "--exact"]) == 2
        err = capsys.readouterr().err
        assert f"cell {cell}:" in err.replace("'", "") and err.count("\n") == 1
    # The old --puzzle flag and an explicit --task sudoku still name the same thing.
    assert main(["mi", "map", "--task", "sudoku", "--model", str(model_dir), "--puzzle", str(puzzles), "--cell", "a,b",
                 "--exact"]) == 2
    assert "cell 'a,b': expected ROW,COLUMN" in capsys.readouterr().err


def test_console_script_has_no_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "unmask.cli", "sudoku", "eval", "--puzzles", str(tmp_path / "x.csv")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"unmask: error: {tmp_path / 'x.csv'}: no such file"]


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.startswith("unmask ")


def test_shipped_model_is_the_default():
    assert (DEFAULT_SUDOKU_MODEL / "model.safetensors").is_file(), "the shipped Sudoku model is missing"


def test_map_joint_adds_the_probe_joint_map(files, tmp_path, capsys):
    # Failure: --joint ignored, or the joint map computed from something other than exact_mi's joint.
    import numpy as np
    import torch

    from unmask.mi import exact_mi
    from unmask.mi.exact import symmetrise
    from unmask.mi.maps import structure_score
    from unmask.model import load_model
    from unmask.tasks.sudoku.task import SudokuTask

    model_dir, puzzles = files
    out = tmp_path / "map.png"
    assert main(["mi", "map", "--puzzle", str(puzzles), "--model", str(model_dir), "--joint", "--out", str(out)]) == 0
    structure = json.loads(capsys.readouterr().out)["structure"]
    assert {"exact", "exact joint"} <= set(structure) and out.stat().st_size > 0
    task, model = SudokuTask(), load_model(model_dir)
    tokens = task.encode(read_puzzles(puzzles))[:1]
    masked = tokens == model.mask_id
    pairs = masked[:, :, None] & masked[:, None, :] & ~torch.eye(tokens.shape[1], dtype=torch.bool)
    res = exact_mi(model, tokens, eps=1e-3)
    want = structure_score(symmetrise(res.joint, res.rows).float() * pairs, pairs, task.related_pairs())
    assert structure["exact joint"] == pytest.approx(want)
    assert not np.allclose(res.joint.numpy(), res.raw.numpy())  # the two maps differ on this model
