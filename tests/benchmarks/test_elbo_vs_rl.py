"""benchmarks/order/elbo_vs_rl.py end to end on a tiny Sudoku model with an ELBO and an RL order policy trained
for two steps, and its paired gaps checked by hand."""

from __future__ import annotations

import json

import pytest

from tests.benchmarks.scripts import load_script


def test_paired_gap_is_the_difference_of_the_outcomes():
    """Bugs caught: the gap taken the wrong way round, or from unpaired resamples (a far wider interval)."""
    bench = load_script("elbo_vs_rl")
    a, b = "1111011110" * 10, "1011011010" * 10  # a solves 20 more of 100, never fewer
    g = bench.paired_gap(a, b, resamples=500)
    assert g["gap"] == 20.0 and 0 < g["low"] <= 20 <= g["high"] and g["high"] - g["low"] < 20
    assert bench.paired_gap(b, a, resamples=500)["gap"] == -20.0
    assert bench.paired_gap(a, a, resamples=50) | {} == {"gap": 0.0, "95% interval": "+0.0…+0.0", "low": 0.0, "high": 0.0}


def test_script_compares_both_objectives_at_every_budget(tmp_path, sudoku_files, cli):
    """Bugs caught: a learned policy run only at its trained budget, the RL policy measured as the ELBO's
    (the same row twice), gaps against another budget's Margin row, or a resume that re-measures."""
    bench = load_script("elbo_vs_rl")
    model_dir, puzzles = sudoku_files
    common = ["sudoku", "train-order", "--model", str(model_dir), "--data", str(puzzles), "--budget", "3", "--steps", "2",
              "--warmup", "1", "--batch-size", "2", "--samples", "2", "--d-hidden", "8", "--eval-every", "2",
              "--ckpt-every", "2", "--tau", "0.3"]
    for name, extra in (("elbo", ["--step-cost", "0.5"]), ("rl", ["--objective", "rl", "--step-cost", "0.05", "--lr", "0.5"])):
        code, _, err = cli([*common, *extra, "--out", str(tmp_path / name)])
        assert code == 0, err
    curve = load_script("order_curve")  # each run's curves, with the panels of its objective
    for name, key in (("elbo", "train_elbo"), ("rl", "train_success")):
        curve.main([str(tmp_path / name), "--out", str(tmp_path / f"curve-{name}")])
        assert key in (tmp_path / f"curve-{name}.md").read_text() and (tmp_path / f"curve-{name}.png").is_file()
    out = tmp_path / "out"
    argv = ["--task", "sudoku", "--model", str(model_dir), "--sets", f"t={puzzles}", "--n", "6", "--budgets", "1", "2", "3",
            "--adaptive", "threshold:tau=0.9", "eb:gamma=1", "--learned", f"elbo={tmp_path / 'elbo'}",
            f"rl={tmp_path / 'rl'}", "--resamples", "50", "--out", str(out)]
    bench.main(argv)
    result = json.loads((out / "elbo_vs_rl.json").read_text())
    policies = [r["policy"] for r in result["rows"]]
    assert policies[:6] == [f"learned[{n}]:steps={t}" for t in (1, 2, 3) for n in ("elbo", "rl")]
    assert "margin:steps=2" in policies and "margin:steps=3" in policies and "eb:gamma=1.0,metric=entropy" in policies
    assert result["meta"]["learned"]["rl"]["objective"] == "rl" and result["meta"]["learned"]["elbo"]["objective"] == "elbo"
    by = {r["policy"]: r for r in result["rows"]}
    assert all(r["max_nfe"] <= 3 for p, r in by.items() if p.endswith("steps=3"))
    for g in bench.gaps(result["rows"], ["elbo", "rl"], 50):
        t = g["budget T"]
        margin = by[f"margin:steps={t}"]["solved"]
        mine = by[g["policy"]]["solved"]
        want = round(100 * (mine.count("1") - margin.count("1")) / len(mine), 1)
        assert g["vs Margin"] == want
        if g["policy"].startswith("learned[elbo]"):
            rl = by[f"learned[rl]:steps={t}"]["solved"]
            assert g["elbo − rl"] == round(100 * (mine.count("1") - rl.count("1")) / len(mine), 1)
    assert (out / "frontier.md").read_text().count("learned[") == 6  # the heuristics' hull spans 1 pass and more
    assert (out / "elbo_vs_rl-t.png").is_file()
    before = (out / "fixed_budgets.md").read_text()
    bench.main(["--task", "sudoku", "--out", str(out), "--tables-only"])
    assert (out / "fixed_budgets.md").read_text() == before
    meta = json.loads((tmp_path / "rl" / "order_policy.json").read_text())  # a policy of another model: one line
    meta["base_model_sha256"] = "0" * 16
    (tmp_path / "rl" / "order_policy.json").write_text(json.dumps(meta))
    for bad in ([*argv[:-1], str(tmp_path / "elsewhere")], [*argv[:-1], "--n", "0", str(tmp_path / "o2")],
                [*argv[:-1], "--learned", "elbo", str(tmp_path / "o3")],
                [*argv[:-1], "--learned", f"a={tmp_path / 'elbo'}", f"a={tmp_path / 'elbo'}", str(tmp_path / "o4")]):
        with pytest.raises(SystemExit) as e:
            bench.main(bad)
        assert e.value.code == 2


@pytest.mark.parametrize("log", [None, "", "not json\n"])
def test_order_curve_refuses_a_missing_or_empty_log_in_one_line(tmp_path, log, capsys):
    """Bug caught: a traceback (FileNotFoundError, IndexError at rows[0]) for a run that has not logged yet."""
    curve = load_script("order_curve")
    run = tmp_path / "run"
    run.mkdir()
    if log is not None:
        (run / "log.jsonl").write_text(log)
    with pytest.raises(SystemExit) as e:
        curve.main([str(run), "--out", str(tmp_path / "c")])
    assert e.value.code == 2 and "Traceback" not in capsys.readouterr().err
