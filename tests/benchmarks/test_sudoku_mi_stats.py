"""benchmarks/mi/sudoku_mi_stats.py end to end on a tiny model: the pairs it counts and the head's zeros."""

from __future__ import annotations

import json

import pytest
import torch

from tests.benchmarks.scripts import load_script
from unmask.mi.data import load_mi_data
from unmask.mi.estimator import load_head
from unmask.mi.fit import hidden_states
from unmask.model import load_model


def test_mi_stats_counts_every_ordered_pair_of_masked_cells_and_the_heads_exact_zeros(tmp_path, sudoku_benchmark_inputs):
    stats = load_script("sudoku_mi_stats")
    model_dir, data = sudoku_benchmark_inputs
    states, out = tmp_path / "states", tmp_path / "out"
    argv = ["--model", str(model_dir), "--examples", str(data / "test-kaggle.csv"), "--states", "3",
            "--states-dir", str(states), "--out", str(out)]
    stats.main(argv)
    assert torch.is_grad_enabled(), "the script must not switch autograd off for the rest of the process"
    got = json.loads((out / "sudoku_mi_stats.json").read_text())
    built = load_mi_data(states)
    model = load_model(model_dir, task="sudoku")
    masked = built["tokens"].long() == model.mask_id  # (S, L)
    m = masked.sum(1)
    # Every row is computed, so the pairs are all ordered pairs of distinct masked cells (a bug counting
    # i = j, unmasked cells or one direction only would miss this count).
    assert got["exact"]["entries"] == int((m * (m - 1)).sum()) > 0
    eye = torch.eye(masked.shape[1], dtype=torch.bool)
    pairs = masked[:, :, None] & masked[:, None, :] & ~eye
    raw = built["mi"].double()[pairs]
    assert got["exact"]["share_below_0"] == pytest.approx(float((raw < 0).double().mean()))
    assert got["exact"]["min"] == pytest.approx(float(raw.min()))
    # The relu head: its value at s = 0 is relu(b), and the share charged exactly 0 is counted as such.
    head = load_head(model_dir)
    with torch.no_grad():
        est = head(hidden_states(model, built["tokens"].long())).double()[pairs]
    assert got["head"]["link"] == "relu" and got["head"]["link_bias"] == max(0.0, got["head"]["bias"])
    assert got["head"]["share_zero"] == pytest.approx(float((est == 0).double().mean()))
    assert got["head"]["min"] == pytest.approx(float(est.min()))
    assert "| head: share of pairs charged exactly 0 |" in (out / "sudoku_mi_stats.md").read_text()
    # A rerun reuses the built states; the same folder with another model's states is refused in one line.
    before = {f.name: f.stat().st_mtime_ns for f in states.iterdir()}
    stats.main(argv)
    assert {f.name: f.stat().st_mtime_ns for f in states.iterdir()} == before


def test_mi_stats_refuses_bad_input_in_one_line(tmp_path, sudoku_benchmark_inputs, capsys):
    stats = load_script("sudoku_mi_stats")
    model_dir, data = sudoku_benchmark_inputs
    for bad, says in ((["--examples", str(tmp_path / "none.csv")], "--examples: no"),
                      (["--states", "0"], "--states must be >= 1")):
        with pytest.raises(SystemExit) as e:
            stats.main(["--model", str(model_dir), "--examples", str(data / "test-kaggle.csv"), "--out", str(tmp_path), *bad])
        assert e.value.code == 2 and says in capsys.readouterr().err
    states = tmp_path / "states"
    states.mkdir()
    (states / "manifest.json").write_text(json.dumps({"config": {}, "model": "another"}))
    with pytest.raises(SystemExit) as e:
        stats.main(["--model", str(model_dir), "--examples", str(data / "test-kaggle.csv"), "--states", "3",
                    "--states-dir", str(states), "--out", str(tmp_path / "out")])
    assert e.value.code == 2 and "MI data built with other" in capsys.readouterr().err


def test_mi_stats_builds_anew_for_another_model_in_the_same_folder(tmp_path, sudoku_benchmark_inputs, monkeypatch):
    # Bug caught: the default states folder named after the model's path alone, so a model shipped into
    # the same folder would find the old model's states there (and be refused, or time the wrong states).
    import shutil

    from safetensors.torch import load_file, save_file

    from unmask.model import WEIGHTS_FILE

    stats = load_script("sudoku_mi_stats")
    model_src, data = sudoku_benchmark_inputs
    model_dir = tmp_path / "copied-model"
    shutil.copytree(model_src, model_dir)
    monkeypatch.chdir(tmp_path)  # the default folder is runs/sudoku_mi_stats/<hash> under the working directory
    argv = ["--model", str(model_dir), "--examples", str(data / "test-kaggle.csv"), "--states", "2",
            "--out", str(tmp_path / "out")]
    stats.main(argv)
    (first,) = (tmp_path / "runs" / "sudoku_mi_stats").iterdir()
    weights = load_file(model_dir / WEIGHTS_FILE)
    name = sorted(weights)[0]
    weights[name] = weights[name] + 0.01  # another model, same folder, same shapes
    save_file(weights, model_dir / WEIGHTS_FILE)
    stats.main(argv)
    folders = sorted((tmp_path / "runs" / "sudoku_mi_stats").iterdir())
    assert len(folders) == 2 and first in folders
    stats.main(argv)  # the same model again: its folder is reused, no third one
    assert len(list((tmp_path / "runs" / "sudoku_mi_stats").iterdir())) == 2
