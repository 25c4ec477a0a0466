"""benchmarks/mi/sudoku_fixed_steps.py: the paired comparison with λ = 0, and the script end to end on a tiny model."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.benchmarks.scripts import load_script


def test_paired_difference_counts_each_puzzle_against_its_own_baseline():
    fixed = load_script("sudoku_fixed_steps")
    base = [True, True, False, False, True]
    got = fixed.paired([True, False, True, True, True], base)
    assert (got["vs λ=0"], got["gained"], got["lost"]) == (20.0, 2, 1)  # 4/5 − 3/5
    # The interval is about the per-puzzle differences: the same two accuracies, reached by swapping
    # puzzles rather than adding one, give a wider interval around the same mean.
    lo, hi = (float(x) for x in got["95% interval"].split("…"))
    assert lo < 20.0 < hi
    same = fixed.paired(base, base)
    assert (same["vs λ=0"], same["95% interval"], same["gained"], same["lost"]) == (0.0, "+0.0…+0.0", 0, 0)
    with pytest.raises(ValueError):
        fixed.paired([True], base)  # another set of puzzles is refused, not truncated
    assert got["p (McNemar)"] == 1.0 and same["p (McNemar)"] == 1.0  # 2 gained, 1 lost: as even as 3 can split


def test_mcnemar_p_is_the_exact_binomial_tail_of_the_split():
    # Bugs caught: a one-sided tail (not doubled), the tail summed on the wrong side, no cap at 1, the
    # normal approximation in place of the exact test.
    fixed = load_script("sudoku_fixed_steps")
    assert fixed.mcnemar_p(0, 0) == 1.0 and fixed.mcnemar_p(5, 5) == 1.0
    assert fixed.mcnemar_p(0, 5) == fixed.mcnemar_p(5, 0) == pytest.approx(2 / 32)
    assert fixed.mcnemar_p(3, 11) == pytest.approx(2 * (1 + 14 + 91 + 364) / 2**14)  # 0.057: not below 0.05
    assert fixed.mcnemar_p(1, 2) == 1.0


def test_fixed_steps_script_matches_passes_and_compares_with_the_budget_frontier(tmp_path, sudoku_benchmark_inputs):
    fixed = load_script("sudoku_fixed_steps")
    model_dir, data = sudoku_benchmark_inputs
    d_head = tmp_path / "d_head"
    d_head.mkdir()
    for f in model_dir.glob("mi_head.*"):
        shutil.copy(f, d_head / f.name)
    out = tmp_path / "out"
    out.mkdir()
    budget = [{"set": "test-kaggle", "family": "entropy budget", "mean_nfe": nfe, "accuracy %": acc}
              for nfe, acc in ((2.5, 0.0), (5.0, 40.0))]
    frontier = {"model": str(model_dir), "n": 4, "rows": budget}
    (out / "sudoku_frontier.json").write_text(json.dumps(frontier))
    argv = ["--model", str(model_dir), "--influence-head", str(d_head), "--data-dir", str(data), "--n", "4", "--lams", "1",
            "--steps-kaggle", "2", "3", "--steps-hard", "4", "--out", str(out)]
    fixed.main(argv)
    result = json.loads((out / "sudoku_fixed_steps.json").read_text())
    rows = result["rows"]
    assert [(r["set"], r["family"], r["policy"]) for r in rows] == [
        (s, f, f"mi_steps:steps={k},lam={lam}") for s, ks in (("test-kaggle", (2, 3)), ("test-hard", (4,)))
        for k in ks for f, lam in (("entropy order", 0), ("MI head", 1.0), ("D head", 1.0))]
    for r in rows:
        assert r["mean_nfe"] == int(r["policy"].split("steps=")[1].split(",")[0])  # exactly S passes per puzzle
        assert len(r["solved"]) == 4 and r["accuracy %"] == 100 * r["solved"].count("1") / 4
        if r["lam"]:
            base = next(b for b in rows if b["set"] == r["set"] and b["lam"] == 0 and b["mean_nfe"] == r["mean_nfe"])
            assert r["vs λ=0"] == r["accuracy %"] - base["accuracy %"]
    # The budget's mixture frontier is interpolated at each row's passes, on test-kaggle only (test-hard has no
    # rows), and left out below its cheapest row (2 passes: no mixture of the budget's γ reaches them).
    assert [r.get("budget mixture %") for r in rows if r["set"] == "test-kaggle"] == [None] * 3 + [8.0] * 3
    assert ([r.get("vs budget mixture") for r in rows if r["set"] == "test-kaggle"][3:]
            == [r["accuracy %"] - 8.0 for r in rows[3:6]])
    assert all("budget mixture %" not in r for r in rows if r["set"] == "test-hard")
    assert result["heads"] == {"MI head": str(model_dir), "D head": str(d_head)}
    assert not (out / "sudoku_fixed_steps.partial.jsonl").exists()
    assert (out / "sudoku_fixed_steps.png").is_file() and "| entropy order |" in (out / "sudoku_fixed_steps.md").read_text()
    # --tables-only derives every comparison again from the measured rows alone.
    written = (out / "sudoku_fixed_steps.json").read_text()
    (out / "sudoku_fixed_steps.json").write_text(json.dumps({**result, "rows": [
        {k: v for k, v in r.items() if k not in fixed.DERIVED} for r in rows]}, indent=1) + "\n")
    fixed.main(["--out", str(out), "--tables-only"])
    assert json.loads((out / "sudoku_fixed_steps.json").read_text()) == json.loads(written)
    # A frontier file of another number of puzzles is not compared with.
    (out / "sudoku_frontier.json").write_text(json.dumps({**frontier, "n": 5}))
    fixed.main(argv)
    assert all("budget mixture %" not in r for r in json.loads((out / "sudoku_fixed_steps.json").read_text())["rows"])
    # --exact-only adds the exact-charge oracle on the first puzzles, paired with entropy order there, and
    # keeps every head row as it was.
    before = json.loads((out / "sudoku_fixed_steps.json").read_text())["rows"]
    fixed.main(argv + ["--exact-only", "--exact-n", "2", "--exact-steps", "2", "--exact-charges", "influence", "mi"])
    got = json.loads((out / "sudoku_fixed_steps.json").read_text())
    assert got["rows"][: len(before)] == before and got["exact_n"] == 2
    oracle = got["rows"][len(before):]
    assert [(r["set"], r["family"], r["policy"]) for r in oracle] == [
        ("test-hard (first 2)", "entropy order", "mi_steps:steps=2,lam=0"),
        ("test-hard (first 2)", "exact D", "exact_steps:steps=2,lam=1.0,charge=influence"),
        ("test-hard (first 2)", "exact MI", "exact_steps:steps=2,lam=1.0,charge=mi")]
    assert all(r["mean_nfe"] == 2 and len(r["solved"]) == 2 for r in oracle)
    assert all(r["extra_passes"] > 0 and r["vs λ=0"] == r["accuracy %"] - oracle[0]["accuracy %"] for r in oracle[1:])
    # Another --exact-only run reuses the oracle rows the file has (a planted mark survives) and measures
    # only the new λ. Bug caught: every oracle row measured again (the earlier rows dropped).
    got["rows"][len(before) + 1]["seconds"] = -1.0
    (out / "sudoku_fixed_steps.json").write_text(json.dumps(got, indent=1) + "\n")
    fixed.main(argv + ["--exact-only", "--exact-n", "2", "--exact-steps", "2", "--exact-charges", "influence",
                       "--exact-lams", "1", "2"])
    wider = json.loads((out / "sudoku_fixed_steps.json").read_text())
    assert [r["policy"] for r in wider["rows"][len(before):]] == [
        "mi_steps:steps=2,lam=0", "exact_steps:steps=2,lam=1.0,charge=influence", "exact_steps:steps=2,lam=2.0,charge=influence",
        "exact_steps:steps=2,lam=1.0,charge=mi"]  # the earlier row not asked for is kept (bug caught: dropped)
    assert wider["rows"][len(before) + 1]["seconds"] == -1.0 and wider["reused_rows"] == 2
    assert wider["rows"][-1] == got["rows"][-1]
    # --remeasure measures the rows asked for afresh (the planted mark is gone).
    fixed.main(argv + ["--exact-only", "--remeasure", "--exact-n", "2", "--exact-steps", "2", "--exact-charges", "influence"])
    fresh = json.loads((out / "sudoku_fixed_steps.json").read_text())
    assert fresh["rows"][len(before) + 1]["seconds"] >= 0 and fresh["reused_rows"] == 0
    # --frontier names the file compared with (e.g. a 300-puzzle frontier kept under its own name).
    (out / "frontier_4.json").write_text(json.dumps(frontier))
    fixed.main(["--out", str(out), "--tables-only", "--frontier", "frontier_4"])
    again = json.loads((out / "sudoku_fixed_steps.json").read_text())
    assert again["budget_frontier_from"] == "frontier_4.json"
    assert [r.get("budget mixture %") for r in again["rows"] if r["set"] == "test-kaggle"] == [None] * 3 + [8.0] * 3


def test_fixed_steps_script_refuses_bad_settings_in_one_line(tmp_path, sudoku_benchmark_inputs, capsys):
    fixed = load_script("sudoku_fixed_steps")
    model_dir, data = sudoku_benchmark_inputs
    for bad, says in ((["--lams", "0"], "every λ must be > 0"), (["--steps-hard", "0"], "passes must be >= 1"),
                      (["--exact-only", "--exact-n", "3"], "--exact-only needs --exact-n > 0 and"),
                      (["--remeasure"], "--remeasure applies to the oracle rows"),
                      (["--exact-lams", "0"], "--exact-lams: every λ must be > 0"),
                      (["--influence-head", str(tmp_path)], "D head: no mi_head.safetensors")):
        with pytest.raises(SystemExit) as e:
            fixed.main(["--model", str(model_dir), "--data-dir", str(data), "--out", str(tmp_path / "out"), *bad])
        assert e.value.code == 2 and says in capsys.readouterr().err
