"""Benchmark scripts end to end on tiny models (they produce README tables; here only that they run and
write consistent files, and that the frontier arithmetic is right)."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


def load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_frontier_picks_the_best_accuracy_within_the_passes():
    frontier = load_script("sudoku_frontier")
    rows = [{"mean_nfe": 3.0, "accuracy %": 50.0}, {"mean_nfe": 5.5, "accuracy %": 70.0}, {"mean_nfe": 2.0, "accuracy %": 60.0}]
    assert frontier.frontier(rows, 1) is None
    assert frontier.frontier(rows, 3) == 60.0  # the cheaper, better row counts at n = 3
    assert frontier.frontier(rows, 6) == 70.0
    both = [{"set": "test-kaggle", "family": "entropy budget", **rows[0]},
            {"set": "test-kaggle", "family": "MI head λ=2", "mean_nfe": 2.5, "accuracy %": 55.0}]
    g = {r["nfe_at_most"]: r["gap"] for r in frontier.gaps(both, ["test-kaggle"], ["MI head λ=2"])}
    assert g == {3: 5.0, 4: 5.0, 5: 5.0, 6: 5.0}  # n = 1, 2: the entropy budget has no row that cheap


def test_frontier_script_runs_on_a_tiny_model(tmp_path, sudoku_files):
    from unmask.mi.estimator import HeadConfig, MIHead, save_head

    frontier = load_script("sudoku_frontier")
    model_dir, puzzles = sudoku_files
    data = tmp_path / "sudoku"
    data.mkdir()
    for name in ("test-kaggle", "test-hard"):
        shutil.copy(puzzles, data / f"{name}.csv")
    torch.manual_seed(0)
    save_head(MIHead(HeadConfig(d_in=16, d_hidden=8, rank=4, link="relu")), model_dir)
    frontier.main(["--model", str(model_dir), "--data-dir", str(data), "--n", "4", "--exact-n", "2", "--quick",
                   "--out", str(tmp_path / "out")])
    result = json.loads((tmp_path / "out" / "sudoku_frontier.json").read_text())
    families = {r["family"] for r in result["rows"]}
    assert families == set(frontier.FAMILIES) | {"exact MI λ=2"}
    assert all(r["n"] == (2 if "(first" in r["set"] else 4) for r in result["rows"])
    assert all(0 <= r["accuracy %"] <= 100 and r["mean_nfe"] >= 1 for r in result["rows"])
    assert any("extra_passes" in r for r in result["rows"] if r["family"] == "exact MI λ=2")
    assert (tmp_path / "out" / "sudoku_frontier.md").is_file() and (tmp_path / "out" / "sudoku_frontier.png").is_file()
