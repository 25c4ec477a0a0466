"""Every JSON the package prints or writes is strict JSON: a NaN or infinite number is ``null`` (or the
command refuses it), never ``NaN``/``Infinity``, which JSON does not have and strict parsers reject.

Each test names the planted bug it is there to catch.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from tests.fixtures.protein_models import HEAVY
from unmask.io import dumps_strict
from unmask.runs import RowCache, append_log


def strict_loads(text: str):
    """``json.loads`` that refuses ``NaN``, ``Infinity`` and ``-Infinity`` as JSON does."""

    def refuse(name: str):
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def test_dumps_strict_writes_null_for_non_finite_numbers():
    # Bug caught: allow_nan left on (NaN/Infinity written), or the conversion missing nested values.
    obj = {"a": math.nan, "b": [1.5, math.inf, {"c": -math.inf}], "d": (2, float("nan")), "e": "NaN", "f": True}
    text = dumps_strict(obj)
    assert strict_loads(text) == {"a": None, "b": [1.5, None, {"c": None}], "d": [2, None], "e": "NaN", "f": True}


def test_dumps_strict_changes_nothing_finite():
    # Bug caught: a conversion that reorders keys, turns ints or bools into floats or drops keywords: the
    # shipped models' JSON files would no longer be byte-identical.
    obj = {"z": 1, "a": [0.1, 2, False, None, "x"], "m": {"k": 1e-300, "j": -0.0}}
    for kw in ({}, {"indent": 2}, {"indent": 1}, {"sort_keys": True}):
        assert dumps_strict(obj, **kw) == json.dumps(obj, **kw)


def test_run_logs_and_row_caches_are_strict(tmp_path):
    # Bug caught: a training log or a benchmark's resumable rows written with NaN (a diverged loss).
    append_log(tmp_path, {"step": 1, "loss": math.nan, "val": math.inf})
    assert strict_loads((tmp_path / "log.jsonl").read_text()) == {"step": 1, "loss": None, "val": None}
    cache = RowCache(tmp_path / "rows.jsonl", {"model": "m"})
    cache.put({"k": 1}, {"accuracy": math.nan})
    for line in (tmp_path / "rows.jsonl").read_text().splitlines():
        strict_loads(line)


def test_no_json_is_written_but_through_dumps_strict():
    # Bug caught: a new json.dump/json.dumps call in the package that bypasses the strict writer.
    root = Path(__file__).resolve().parents[1] / "unmask"
    sites = [f"{p.relative_to(root)}:{i}" for p in sorted(root.rglob("*.py")) if p.name != "io.py"
             for i, line in enumerate(p.read_text().splitlines(), 1) if re.search(r"\bjson\.dumps?\(", line)]
    assert not sites, sites


def test_proteins_eval_json_is_strict(tmp_path, cli):
    # Bug caught (the case): a one-residue set has no dipeptides, its JSD is NaN, and --json printed NaN.
    (tmp_path / "g.fasta").write_text(">g\nA\n")
    (tmp_path / "r.fasta").write_text(">r\nMKVLAAGICLLWSS\n")
    code, out, err = cli(["proteins", "eval", "--generated", tmp_path / "g.fasta", "--reference", tmp_path / "r.fasta",
                          "--json"])
    assert code == 0, err
    m = strict_loads(out)
    assert m["jsd_dipeptide"] is None and m["jsd_aa"] > 0


@pytest.mark.parametrize("temperature", ["inf", "Infinity", "-1", "nan"])
def test_sudoku_eval_refuses_an_infinite_temperature_at_the_flag(sudoku_files, cli, temperature):
    # Bug caught (the case): --temperature inf decoded (NaN probabilities) and --json printed
    # "temperature": Infinity; now one line, exit 2, before the model loads.
    model_dir, puzzles = sudoku_files
    code, out, err = cli(["sudoku", "eval", "--puzzles", puzzles, "--model", model_dir, "--temperature", temperature,
                          "--json"])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--temperature: must be a finite number >= 0" in err


def test_sudoku_eval_json_and_out_are_strict(sudoku_files, tmp_path, cli):
    # Bug caught: --json or --out JSONL written by plain json.dumps (any NaN metric would leak).
    model_dir, puzzles = sudoku_files
    code, out, err = cli(["sudoku", "eval", "--puzzles", puzzles, "--model", model_dir, "--policy", "topk:k=20",
                          "--temperature", "1", "--json", "--out", tmp_path / "o.jsonl"])
    assert code == 0, err
    assert strict_loads(out)["temperature"] == 1.0
    assert len([strict_loads(line) for line in (tmp_path / "o.jsonl").read_text().splitlines()]) == 6


def test_proteins_infill_json_is_strict(tmp_path, cli, esm2_dir):
    # Bug caught (the case): one sample per antibody has no diversity and one antibody no standard
    # error; --json printed NaN for both.
    import shutil

    model = tmp_path / "esm2"  # (the judge's metrics are named after its folder)
    shutil.copytree(esm2_dir, model)
    one = tmp_path / "one.fasta"
    one.write_text("\n".join(HEAVY.read_text().splitlines()[:3]) + "\n")  # the first antibody
    code, out, err = cli(["proteins", "infill", "--model", f"hf:{model}", "--antibodies", one, "--samples", "1",
                          "--judge", f"hf:{model}", "--policy", "topk:k=64", "--json"])
    assert code == 0, err
    m = strict_loads(out)
    assert m["antibodies"] == 1 and m["diversity"] is None and m["pll_esm2_se"] is None
