"""benchmarks/mi/sudoku_consistent.py end to end on a tiny model: puzzles widened to several solutions,
decoded by their exact posterior and by the model, every row keeping its puzzles' outcomes, each family
compared with the entropy budget of the same denoiser and set; bad arguments get one line and exit 2."""

from __future__ import annotations

import json

import pytest

from tests.benchmarks.scripts import load_script


def test_consistent_script_decodes_with_the_exact_posterior_and_the_model(tmp_path, sudoku_few_blanks_inputs, monkeypatch):
    script = load_script("sudoku_consistent")
    monkeypatch.setattr(script, "ORACLE_CHUNK", 2)  # the oracle's puzzles in two slices: [0, 2) and [2, 3)
    model_dir, data = sudoku_few_blanks_inputs
    out = tmp_path / "out"
    script.main(["--model", str(model_dir), "--data-dir", str(data), "--n", "3", "--model-n", "2", "--low", "2", "--high", "8",
                 "--resamples", "20", "--threads", "1", "--out", str(out), "--points", "2", "10"])
    result = json.loads((out / "sudoku_consistent.json").read_text())
    rows = result["rows"]
    want = [(s, who, family, script.policy_spec(script.parse_policy(spec)))
            for s in ("test-kaggle", "test-hard") for who in ("oracle", "model")
            for family, (users, specs) in script.FAMILIES.items() if who in users for spec in specs]
    assert [(r["set"], r["denoiser"], r["family"], r["policy"]) for r in rows] == want
    for r in rows:
        n = 3 if r["denoiser"] == "oracle" else 2
        assert r["puzzles"] == len(r["solved"]) == len(r["nfe"]) == n
        assert r["accuracy %"] == round(100 * r["solved"].count("1") / n, 1) and r["mean_nfe"] == pytest.approx(sum(r["nfe"]) / n)
        assert ("extra_passes" in r) == r["policy"].startswith("exact:")  # the probes, apart from NFE
    # The exact posterior, one uncertain cell a pass (γ = 0.01 takes the certain ones beside it), never breaks a puzzle.
    for s in ("test-kaggle", "test-hard"):
        slow = next(r for r in rows if (r["set"], r["denoiser"], r["policy"]) == (s, "oracle", "mi:gamma=0.01,lam=0.0"))
        assert slow["accuracy %"] == 100
        assert 2 <= result["puzzles"][s]["solutions_mean"] <= 8 and result["puzzles"][s]["widened"] == 3
    # Decoded a slice at a time, puzzle k still gets seed k: every oracle row as one denoiser over all three gives it.
    from unmask.decode import TokenRule
    from unmask.eval import decode_all
    from unmask.policies import build_policy
    from unmask.tasks.sudoku.generate import standard_set, widened_set

    for s in ("test-kaggle", "test-hard"):
        wide = widened_set(standard_set(data, s, 3), 2, 8)
        whole, tokens = wide.oracle(), script.SudokuTask().encode(wide.puzzles)
        for r in (r for r in rows if (r["set"], r["denoiser"]) == (s, "oracle")):
            run = decode_all(whole, tokens, build_policy(r["policy"], whole), TokenRule(temperature=1.0))
            assert run.result.nfe.tolist() == r["nfe"], r["policy"]
    families = {(g["set"], g["denoiser"], g["family"]) for g in result["row_gaps"]}
    assert families == {(s, who, f) for s, who, f, _ in want if f != script.BASE}
    for g in result["gaps"] + result["row_gaps"]:
        assert g["low"] <= g["high"] and 0 <= g["share of resamples ahead"] <= 1 and 0 < g["defined"] <= 1
    assert "| oracle |" in (out / "sudoku_consistent.md").read_text() and (out / "sudoku_consistent.png").is_file()
    assert not (out / "sudoku_consistent.partial.jsonl").exists()


@pytest.mark.parametrize("argv, message", [
    (["--low", "1"], "--low"),
    (["--low", "5", "--high", "4"], "--low"),
    (["--n", "2", "--model-n", "3"], "--model-n"),
    (["--points", "0"], "--points"),
])
def test_consistent_script_refuses_bad_arguments(argv, message, capsys):
    script = load_script("sudoku_consistent")
    with pytest.raises(SystemExit) as exit_info:
        script.main(argv)
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_gaps_only_recomputes_the_gaps_from_the_rows(tmp_path):
    script = load_script("sudoku_consistent")
    rows = []
    for family, specs in ((script.BASE, [("a", [1, 1], "00"), ("b", [3, 3], "11")]), ("exact MI λ=8", [("c", [1, 1], "11")])):
        for policy, nfe, solved in specs:
            rows.append({"set": "test-hard", "denoiser": "oracle", "puzzles": 2, "family": family, "policy": policy,
                         "mean_nfe": sum(nfe) / 2, "accuracy %": 50.0 * solved.count("1"), "solved": solved, "nfe": nfe})
    out = tmp_path / "out"
    out.mkdir()
    (out / "sudoku_consistent.json").write_text(json.dumps({"rows": rows, "puzzles": {"test-hard": {"widened": 2}}, "gaps": []}))
    script.main(["--out", str(out), "--gaps-only", "--resamples", "10", "--points", "1", "2"])
    result = json.loads((out / "sudoku_consistent.json").read_text())
    # At 1 pass the budget solves nothing, exact MI everything: +100; at 2, the budget's chord is at 50: +50.
    assert [(g["nfe"], g["gap"]) for g in result["gaps"]] == [(1.0, 100.0), (2.0, 50.0)]
    assert result["points"] == [1.0, 2.0] and result["rows"] == rows
    with pytest.raises(SystemExit):
        script.main(["--out", str(tmp_path / "none"), "--gaps-only"])
