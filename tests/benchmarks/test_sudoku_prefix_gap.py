"""benchmarks/mi/sudoku_prefix_gap.py end to end on a tiny model: every row keeps its puzzles' outcomes,
the gaps come from them (on all puzzles and on the oracle's first ones), --gaps-only recomputes them
alone, an interrupted run resumes, and bad arguments get one line and exit 2."""

from __future__ import annotations

import json

import pytest

from tests.benchmarks.scripts import load_script
from unmask.eval import mixture_frontier

LAMS = ("prefix, MI head λ=1", "prefix, MI head λ=4")


def first(row: dict, n: int) -> dict:
    """A row's figures on its first n puzzles alone."""
    return {"mean_nfe": sum(row["nfe"][:n]) / n, "accuracy %": 100 * row["solved"][:n].count("1") / n}


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
    assert {(g["puzzles"], g["family"]) for g in gaps} == {(4, f) for f in LAMS}
    assert (result["points"], result["resamples"]) == ([20.0, 40.0, 60.0], 30)
    for g in gaps + result["row_gaps"]:
        assert g["low"] <= g["high"] and 0 <= g["share of resamples ahead"] <= 1 and 0 < g["defined"] <= 1
    # One row gap per MI row, each at that row's own cost and accuracy.
    assert [(g["family"], g["policy"], g["mean_nfe"]) for g in result["row_gaps"]] == [
        (r["family"], r["policy"], round(r["mean_nfe"], 2)) for r in rows if r["family"] != "entropy budget"]
    assert not (out / "sudoku_prefix_gap.partial.jsonl").exists()
    assert (out / "sudoku_prefix_gap.png").is_file() and (out / "sudoku_prefix_gap_gaps.png").is_file()
    assert "| entropy budget |" in (out / "sudoku_prefix_gap.md").read_text()
    # --gaps-only rebuilds the gaps from the rows alone: a planted wrong gap is replaced by the same figures.
    (out / "sudoku_prefix_gap.json").write_text(json.dumps({**result, "gaps": [{"family": "planted"}], "row_gaps": []}))
    script.main(["--out", str(out), "--gaps-only", "--resamples", "30", "--points", "20", "40", "60"])
    again = json.loads((out / "sudoku_prefix_gap.json").read_text())
    assert (again["gaps"], again["row_gaps"]) == (gaps, result["row_gaps"])
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
    assert {(g["puzzles"], g["family"]) for g in got["gaps"]} == {(4, f) for f in LAMS} | {
        (2, f) for f in (*LAMS, "exact MI prefix λ=2 (oracle)")}
    assert [g for g in got["gaps"] if g["puzzles"] == 4] == gaps  # the full-set gaps do not move
    # A gap on the first 2 is read off both families' rows cut to those 2 puzzles (not the last 2, not
    # the NFE alone). Bug caught: the oracle compared with the budget on all 4 puzzles.
    base = [first(r, 2) for r in got["rows"] if r["family"] == "entropy budget"]
    for g in (g for g in got["gaps"] if g["puzzles"] == 2):
        mine = [first(r, 2) for r in got["rows"] if r["family"] == g["family"]]
        assert g["gap"] == pytest.approx(mixture_frontier(mine, g["nfe"]) - mixture_frontier(base, g["nfe"]), abs=0.051)


def test_an_interrupted_prefix_gap_run_resumes_where_it_stopped(tmp_path, sudoku_benchmark_inputs, monkeypatch):
    script = load_script("sudoku_prefix_gap")
    model_dir, data = sudoku_benchmark_inputs
    out = tmp_path / "out"
    argv = ["--model", str(model_dir), "--data-dir", str(data), "--n", "2", "--lams", "1", "--resamples", "5",
            "--threads", "1", "--out", str(out), "--points", "30"]
    decode_all, calls = script.decode_all, []

    def counted(*a, **k):
        calls.append(1)
        if len(calls) == 5:
            raise KeyboardInterrupt  # killed while decoding the fifth row
        return decode_all(*a, **k)

    monkeypatch.setattr(script, "decode_all", counted)
    with pytest.raises(KeyboardInterrupt):
        script.main(argv)
    assert (out / "sudoku_prefix_gap.partial.jsonl").is_file() and not (out / "sudoku_prefix_gap.json").exists()
    calls.clear()
    monkeypatch.setattr(script, "decode_all", lambda *a, **k: calls.append(1) or decode_all(*a, **k))
    script.main(argv)
    rows = json.loads((out / "sudoku_prefix_gap.json").read_text())["rows"]
    assert len(calls) == len(rows) - 4  # the four rows finished before the kill were not decoded again


@pytest.mark.parametrize("argv, says", [
    (["--lams", "0"], "every λ and γ"), (["--lams", "nan"], "every λ and γ"), (["--exact-gammas", "0"], "every λ and γ"),
    (["--n", "0"], "--n"), (["--n", "5", "--exact-n", "6"], "--exact-n"), (["--set", "nowhere"], "invalid choice"),
    (["--gaps-only", "--out", "{tmp}"], "no "),
])
def test_prefix_gap_script_refuses_bad_arguments_in_one_line(tmp_path, capsys, argv, says):
    script = load_script("sudoku_prefix_gap")
    with pytest.raises(SystemExit) as e:
        script.main([a.format(tmp=tmp_path) for a in argv])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert says in err[-1] and "Traceback" not in "".join(err)
