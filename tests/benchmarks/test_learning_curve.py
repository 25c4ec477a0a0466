"""benchmarks/tools/learning_curve.py: one run's curve, and several runs chained into one."""

from __future__ import annotations

import json

from tests.benchmarks.scripts import load_script


def write_log(path, records) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def record(step: int, minutes: float, hard: float) -> dict:
    return {"step": step, "minutes": minutes, "device": "cuda", "train_loss": 0.3, "val-kaggle_acc": 0.9, "val-hard_acc": hard}


def test_chained_runs_count_steps_and_minutes_on(tmp_path):
    # Bugs caught: a later run's steps restarting at its own 0 (two points at one step), its minutes not
    # added to the first run's, the offset taken from the first record instead of the last.
    curve = load_script("learning_curve")
    first, second = tmp_path / "phase1.jsonl", tmp_path / "phase2"
    write_log(first, [record(100, 1.0, 0.5), record(200, 2.5, 0.6)])
    second.mkdir()
    write_log(second / "log.jsonl", [record(50, 0.25, 0.7), record(100, 0.5, 0.8)])
    rows = curve.chained([first, second])
    assert [r["step"] for r in rows] == [100, 200, 250, 300]
    assert [r["minutes"] for r in rows] == [1.0, 2.5, 2.75, 3.0]
    assert [r["run"] for r in rows] == ["phase1", "phase1", "phase2", "phase2"]
    curve.main([str(first), str(second), "--out", str(tmp_path / "out" / "curve")])
    table = (tmp_path / "out" / "curve.md").read_text().splitlines()
    assert table[0] == "| step | minutes | device | run | train_loss | val-kaggle_acc | val-hard_acc |"
    assert table[-1] == "| 300 | 3 | cuda | phase2 | 0.3 | 90 | 80 |"
    assert (tmp_path / "out" / "curve.png").read_bytes()[:4] == b"\x89PNG"


def test_one_run_has_no_run_column(tmp_path):
    curve = load_script("learning_curve")
    write_log(tmp_path / "log.jsonl", [record(100, 1.0, 0.5)])
    curve.main([str(tmp_path), "--out", str(tmp_path / "curve")])
    assert (tmp_path / "curve.md").read_text().splitlines()[0] == \
        "| step | minutes | device | train_loss | val-kaggle_acc | val-hard_acc |"
