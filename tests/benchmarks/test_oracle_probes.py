"""benchmarks/mi/oracle_probes.py: the exact rules' probe passes against probing every row, end to end."""

from __future__ import annotations

import json
from unittest import mock

import pytest

import unmask.mi.policies as mi_policies
from tests.benchmarks.scripts import load_script
from unmask.decode import decode
from unmask.model import load_model
from unmask.policies import build_policy
from unmask.tasks.sudoku.generate import standard_set
from unmask.tasks.sudoku.task import SudokuTask

SPECS = ["exact:gamma=1,lam=2", "exact_prefix:gamma=3,lam=8,charge=influence"]


def test_probe_counts_and_the_choices_check(tmp_path, sudoku_few_blanks_inputs):
    # Bugs caught: the every-row count not what probing every row spends (checked by running it), the
    # savings not the ratios of the counts, the check comparing nothing, rows of a set lost.
    script = load_script("oracle_probes")
    model_dir, data = sudoku_few_blanks_inputs
    script.main(["--model", str(model_dir), "--data-dir", str(data), "--n", "3", "--check", "2", "--threads", "1",
                 "--specs", *SPECS, "--out", str(tmp_path)])
    result = json.loads((tmp_path / "oracle_probes.json").read_text())
    assert [(r["set"], r["policy"].split(":")[0]) for r in result["rows"]] == [
        (s, p.split(":")[0]) for s in ("test-kaggle", "test-hard") for p in SPECS]
    model = load_model(model_dir)
    puzzles = standard_set(data, "test-hard", 3)
    for r in result["rows"]:
        assert r["same_choices"] is True and r["puzzles"] == 3
        assert r["probe_passes"] <= r["every_row_passes"] <= r["plain_passes"]
        assert r["saving_vs_every_row_x"] == pytest.approx(r["every_row_passes"] / r["probe_passes"])
        assert r["saving_vs_plain_x"] == pytest.approx(r["plain_passes"] / r["probe_passes"])
        if r["set"] == "test-hard":  # probing every row, run for real, spends what was counted
            policy = build_policy(SPECS[0] if r["policy"].startswith("exact:") else SPECS[1], model, model_dir)
            with mock.patch.object(mi_policies, "RowProbes", script.EveryRow):
                ref = decode(model, SudokuTask().encode(puzzles), policy)
            assert float(ref.extra_passes.double().mean()) == pytest.approx(r["every_row_passes"])
    assert any(r["probe_passes"] < r["every_row_passes"] for r in result["rows"])
    assert (tmp_path / "oracle_probes.md").read_text().count("\n") == 2 + len(result["rows"])


@pytest.mark.parametrize("bad", [["--specs", "mi:gamma=1"], ["--specs", "exact_steps:steps=3"], ["--specs", "no_such_rule"],
                                 ["--n", "2", "--check", "3"], ["--n", "0"]])
def test_bad_settings_are_refused_in_one_line(tmp_path, sudoku_few_blanks_inputs, capsys, bad):
    script = load_script("oracle_probes")
    model_dir, data = sudoku_few_blanks_inputs
    with pytest.raises(SystemExit) as e:
        script.main(["--model", str(model_dir), "--data-dir", str(data), *bad, "--out", str(tmp_path)])
    assert e.value.code == 2 and len(capsys.readouterr().err.strip().splitlines()[-1]) > 0
    assert not (tmp_path / "oracle_probes.json").exists()
