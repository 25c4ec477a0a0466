"""benchmarks/sudoku_prefix_gap.py end to end on a tiny model: every row keeps its puzzles' outcomes,
the gaps come from them, and --gaps-only recomputes them alone."""

from __future__ import annotations

import json

import pytest

from tests.benchmarks.scripts import load_script


def test_prefix_gap_script_keeps_outcomes_and_bootstraps_the_gap(tmp_path, sudoku_benchmark_inputs):
    script = load_script("sudoku_prefix_gap")
    model_dir, data = sudoku_benchmark_inputs
    out = tmp_path / "out"
    argv = ["--model", str(model_dir), "--data-dir", str(data), "--n", "4", "--lams", "1", "4", "--resamples", "30",
            "--threads", "1", "--out", str(out), "--points", "20", "40", "60"]  # (a random model takes 15-55 passes)
    script.main(argv)
    result = json.loads((out / "sudoku_prefix_gap.json").read_text())
    rows = result["rows"]
    assert [(r["family"], r["policy"]) for r in rows] == (
        [("entropy budget", f"mi:gamma={g},lam=0.0") for g in script.BUDGET_GAMMAS]
        + [(f"prefix, MI head λ={lam}", f"mi_prefix:gamma={g},lam={lam}.0") for lam in (1, 4) for g in script.PREFIX_GAMMAS])
    for r in rows:  # each row's figures are its puzzles' outcomes summed up
        assert len(r["solved"]) == len(r["nfe"]) == 4
        assert r["accuracy %"] == 100 * r["solved"].count("1") / 4 and r["mean_nfe"] == pytest.approx(sum(r["nfe"]) / 4)
    gaps = result["gaps"]
    assert {(g["puzzles"], g["family"]) for g in gaps} == {(4, "prefix, MI head λ=1"), (4, "prefix, MI head λ=4")}
    for g in gaps:
        assert g["low"] <= g["high"] and 0 <= g["share of resamples ahead"] <= 1
    assert not (out / "sudoku_prefix_gap.partial.jsonl").exists()
    assert (out / "sudoku_prefix_gap.png").is_file() and (out / "sudoku_prefix_gap_gaps.png").is_file()
    assert "| entropy budget |" in (out / "sudoku_prefix_gap.md").read_text()
    # --gaps-only rebuilds the gaps from the rows alone: a planted wrong gap is replaced by the same figures.
    (out / "sudoku_prefix_gap.json").write_text(json.dumps({**result, "gaps": [{"family": "planted"}]}))
    script.main(["--out", str(out), "--gaps-only", "--resamples", "30", "--points", "20", "40", "60"])
    assert json.loads((out / "sudoku_prefix_gap.json").read_text())["gaps"] == gaps
    # --exact-n adds the oracle on the first puzzles (the other rows measured again, as the finished run
    # removed its cache, and the same but for their timings), and compares every family there on those
    # puzzles alone: the budget's outcomes cut to the same first 2.
    script.main(argv + ["--exact-n", "2", "--exact-gammas", "30"])
    got = json.loads((out / "sudoku_prefix_gap.json").read_text())

    def untimed(rs):
        return [{k: v for k, v in r.items() if k != "seconds"} for r in rs]

    assert untimed(got["rows"][:-1]) == untimed(rows)
    oracle = got["rows"][-1]
    assert (oracle["family"], oracle["policy"], oracle["puzzles"]) == (
        "exact MI prefix λ=2 (oracle)", "exact_prefix:gamma=30.0,lam=2.0,charge=mi,eps=0.001", 2)
    assert len(oracle["solved"]) == 2 and oracle["extra_passes"] > 0
    assert {(g["puzzles"], g["family"]) for g in got["gaps"]} == {
        (4, "prefix, MI head λ=1"), (4, "prefix, MI head λ=4"),
        (2, "prefix, MI head λ=1"), (2, "prefix, MI head λ=4"), (2, "exact MI prefix λ=2 (oracle)")}
    assert [g for g in got["gaps"] if g["puzzles"] == 4] == gaps  # the full-set gaps do not move


def test_prefix_gap_script_refuses_bad_arguments_in_one_line(tmp_path, capsys):
    script = load_script("sudoku_prefix_gap")
    for argv in (["--lams", "0"], ["--n", "0"], ["--gaps-only", "--out", str(tmp_path)], ["--n", "5", "--exact-n", "6"]):
        with pytest.raises(SystemExit) as e:
            script.main(argv)
        assert e.value.code == 2
    assert "no " in capsys.readouterr().err
