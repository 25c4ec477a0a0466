"""benchmarks/mi/sudoku_mi.py: which baseline rows it takes from a policy table instead of measuring them."""

from __future__ import annotations

import json

from tests.benchmarks.scripts import load_script


def test_baselines_are_reused_only_from_the_same_model_and_size(tmp_path):
    bench = load_script("sudoku_mi")
    rows = [{"set": "test-kaggle", "policy": "sequential:metric=entropy", "accuracy": 1.0},
            {"set": "test-hard", "policy": "sequential:metric=entropy", "accuracy": 0.5},
            {"set": "test-kaggle", "policy": "mi:gamma=0.5,lam=0.0", "accuracy": 1.0}]  # not a baseline
    path = tmp_path / "sudoku_policies.json"
    path.write_text(json.dumps({"meta": {"model": "m", "parameters": 10, "n": 5}, "rows": rows}))
    assert bench.reuse_baselines(path, 5, ["test-kaggle", "test-hard"], "m", 10) == rows[:2]
    assert bench.reuse_baselines(path, 5, ["test-hard"], "m", 10) == rows[1:2]  # only the sets asked for
    assert bench.reuse_baselines(path, 6, ["test-kaggle"], "m", 10) == []  # other puzzles
    assert bench.reuse_baselines(path, 5, ["test-kaggle"], "other", 10) == []  # another model's folder
    assert bench.reuse_baselines(path, 5, ["test-kaggle"], "m", 11) == []  # another model in the same folder
    assert bench.reuse_baselines(tmp_path / "none.json", 5, ["test-kaggle"], "m", 10) == []
