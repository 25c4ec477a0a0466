"""Hostile and mistaken input, one case per line of the reliability issue: each gets one clear line and
exit code 2 (never a traceback), or is refused instead of doing the wrong thing without a word.

Each test names the failure it was written for.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.cli_checks import refused
from unmask.cli import main
from unmask.tasks.sudoku.data import read_puzzles
from unmask.tasks.sudoku.task import DEFAULT_MODEL as SHIPPED_SUDOKU

TINY_SHAPE = ["--d-model", "16", "--n-layers", "1", "--n-heads", "2", "--d-ff", "32"]


@pytest.fixture
def files(sudoku_files):
    return sudoku_files


def tree_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


# --- files that are not what they should be -------------------------------------------------------


def test_binary_and_non_utf8_inputs(files, tmp_path, capsys):
    # Failure: UnicodeDecodeError tracebacks from --puzzles, mi map --puzzle and train --data.
    model_dir, _ = files
    binary = tmp_path / "binary.csv"
    binary.write_bytes(bytes(range(256)) * 8)
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes('{"question": "caf\xe9", "answer": "#### 1"}\n'.encode("latin-1"))
    refused(capsys, ["sudoku", "eval", "--puzzles", binary, "--model", model_dir], "not UTF-8 text")
    refused(capsys, ["mi", "map", "--puzzle", binary, "--model", model_dir], "not UTF-8 text")
    refused(capsys, ["sudoku", "train", "--data", binary, "--out", tmp_path / "run"], "not UTF-8 text")
    refused(capsys, ["maths", "train", "--data", latin, "--out", tmp_path / "run2"], "not UTF-8 text")
    assert not (tmp_path / "run").exists() and not (tmp_path / "run2").exists()


def test_huge_csv_field(files, tmp_path, capsys):
    # Failure: _csv.Error "field larger than field limit" as a traceback.
    model_dir, _ = files
    path = tmp_path / "huge.csv"
    path.write_text("quizzes,solutions\n" + "1" * 200_000 + ",2\n")
    refused(capsys, ["sudoku", "eval", "--puzzles", path, "--model", model_dir], "huge.csv:2: not a puzzle CSV")


def test_byte_order_mark_is_accepted(files, tmp_path, capsys):
    # Failure: a CSV saved by Excel ("CSV UTF-8", with a BOM) refused for its header.
    model_dir, puzzles = files
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + puzzles.read_bytes())
    assert main(["sudoku", "eval", "--puzzles", str(bom), "--model", str(model_dir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 6


def test_folder_as_input_says_so(files, tmp_path, capsys):
    # Failure: a folder given as --puzzles reported as "no such file".
    model_dir, _ = files
    refused(capsys, ["sudoku", "eval", "--puzzles", tmp_path, "--model", model_dir], "is a folder, not a file")
    refused(capsys, ["maths", "eval", "--problems", tmp_path], "is a folder, not a file")


# --- outputs that cannot be written ---------------------------------------------------------------


def test_generate_into_a_folder(tmp_path, capsys):
    # Failure: IsADirectoryError from the atomic rename when --out names an existing folder.
    (tmp_path / "d").mkdir()
    refused(capsys, ["sudoku", "generate", "--n", "2", "--out", tmp_path / "d"], "is a folder; give a file name")
    refused(capsys, ["maths", "generate", "--n", "2", "--out", tmp_path / "d"], "is a folder; give a file name")
    assert list((tmp_path / "d").iterdir()) == []  # no temporary file left behind


def test_folder_outputs_given_a_file(files, tmp_path, capsys):
    # Failure: FileExistsError tracebacks for train --out FILE and mi data --out FILE.
    model_dir, puzzles = files
    file = tmp_path / "file"
    file.write_text("keep me")
    refused(capsys, ["sudoku", "train", "--data", puzzles, "--out", file, "--steps", "1", "--warmup", "0"],
            "exists and is not a folder")
    refused(capsys, ["mi", "data", "--puzzles", puzzles, "--model", model_dir, "--out", file, "--states", "2"],
            "exists and is not a folder")
    assert file.read_text() == "keep me"


def test_map_outputs(files, tmp_path, capsys):
    # Failures: a missing parent folder (generate makes parents: be consistent), an unwritable place,
    # and a folder as --out (it wrote "/tmp.png" and reported "/tmp").
    model_dir, puzzles = files
    nested = tmp_path / "new" / "deeper" / "map.png"
    assert main(["mi", "map", "--puzzle", str(puzzles), "--model", str(model_dir), "--exact", "--out", str(nested)]) == 0
    assert json.loads(capsys.readouterr().out)["out"] == str(nested) and nested.stat().st_size > 0
    (tmp_path / "folder").mkdir()
    refused(capsys, ["mi", "map", "--puzzle", puzzles, "--model", model_dir, "--exact", "--out", tmp_path / "folder"],
            "is a folder")
    assert not (tmp_path / "folder.png").exists()
    refused(capsys, ["mi", "map", "--puzzle", puzzles, "--model", model_dir, "--exact", "--out", "/proc/x.png"],
            "/proc/x.png: cannot")


def test_eval_writes_the_decoded_examples(files, tmp_path, capsys):
    # Failure: results that could not be inspected; eval can write what it decoded.
    model_dir, puzzles = files
    out = tmp_path / "decoded" / "out.jsonl"
    assert main(["sudoku", "eval", "--puzzles", str(puzzles), "--model", str(model_dir), "--policy", "topk:k=9",
                 "--json", "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    data = read_puzzles(puzzles)
    assert len(rows) == 6 and "examples" not in summary
    assert [r["puzzle"] for r in rows] == ["".join(map(str, q)) for q in data.quizzes]
    assert sum(r["correct"] for r in rows) / 6 == summary["accuracy"]
    assert sum(r["nfe"] for r in rows) / 6 == summary["mean_nfe"]
    for r, q in zip(rows, data.quizzes):  # the givens are kept, and every blank is filled
        assert all(o == str(g) for o, g in zip(r["output"], q) if g) and "0" not in r["output"]


# --- numbers out of range -------------------------------------------------------------------------


@pytest.mark.parametrize("dropout", ["2", "-0.5", "nan"])
def test_dropout_out_of_range(files, tmp_path, capsys, dropout):
    # Failure: torch's ValueError traceback at the first forward pass.
    _, puzzles = files
    refused(capsys, ["sudoku", "train", "--data", puzzles, "--out", tmp_path / "r", "--steps", "1", "--warmup", "0",
                     "--dropout", dropout],
            "dropout must be in [0, 1)")


def test_temperature_below_float32(files, capsys):
    # Failure: --temperature 1e-45 gave NaN probabilities and 0 % accuracy without a word.
    model_dir, puzzles = files
    refused(capsys, ["sudoku", "eval", "--puzzles", puzzles, "--model", model_dir, "--temperature", "1e-45"], "below float32")


@pytest.mark.parametrize("extra,message", [
    (["--seed", str(10**20)], "out of range"),
    (["--budget", str(2**31)], "out of range"),
    (["--policy", f"topk:k={10**20}"], "is not a valid int"),
    (["--policy", f"random:steps={2**40}"], "is not a valid int"),
])
def test_integers_beyond_int64_arithmetic(files, capsys, extra, message):
    # Failure: OverflowError tracebacks from torch when a seed, budget or spec count exceeds int64 sums.
    model_dir, puzzles = files
    refused(capsys, ["sudoku", "eval", "--puzzles", puzzles, "--model", model_dir, *extra], message)


@pytest.mark.parametrize("eps", ["nan", "-1", "inf"])
def test_eps_out_of_range(files, tmp_path, capsys, eps):
    # Failure: mi map --eps nan|-1 and mi data --eps nan accepted.
    model_dir, puzzles = files
    refused(capsys, ["mi", "map", "--puzzle", puzzles, "--model", model_dir, "--exact", "--eps", eps], "eps must be")
    refused(capsys, ["mi", "data", "--puzzles", puzzles, "--model", model_dir, "--out", tmp_path / "d", "--eps", eps],
            "eps must be")


# --- nothing overwritten, resumes that would be another run ---------------------------------------


def test_mi_train_default_never_writes_the_shipped_model(files, tmp_path, capsys, monkeypatch):
    # Failure: `unmask mi train` without --out overwrote unmask/models/sudoku/mi_head.*.
    model_dir, puzzles = files
    monkeypatch.chdir(tmp_path)
    shipped = tree_digest(SHIPPED_SUDOKU)
    data = tmp_path / "mi-data"
    assert main(["mi", "data", "--puzzles", str(puzzles), "--model", str(model_dir), "--out", str(data),
                 "--states", "4", "--shard-size", "4", "--rows", "2"]) == 0
    given = tree_digest(model_dir)
    assert main(["mi", "train", "--model", str(model_dir), "--data", str(data), "--steps", "2", "--batch-size", "2"]) == 0
    capsys.readouterr()
    run = tmp_path / "runs" / "mi-head-sudoku"
    assert set(tree_digest(run)) == {"mi_head.safetensors", "mi_head.json"}  # the head alone, no copy of the model
    assert tree_digest(model_dir) == given and tree_digest(SHIPPED_SUDOKU) == shipped
    meta = json.loads((run / "mi_head.json").read_text())  # paths inside the working directory recorded relative to it
    assert (meta["base_model"], meta["data"]) == (str(model_dir.relative_to(tmp_path)), ["mi-data"])
    # the default output is usable as it is: --head RUN with the model it was trained for
    assert main(["sudoku", "eval", "--puzzles", str(puzzles), "--model", str(model_dir), "--head", str(run),
                 "--policy", "mi:lam=1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 6


def test_resume_refuses_other_data_and_model_flags(files, tmp_path, capsys):
    # Failures: --resume silently ignored a different --data and changed model flags.
    _, puzzles = files
    other = tmp_path / "other.csv"
    assert main(["sudoku", "generate", "--n", "6", "--seed", "4", "--out", str(other)]) == 0
    run = tmp_path / "run"
    base = ["sudoku", "train", "--out", str(run), "--batch-size", "4", "--eval-every", "2", "--ckpt-every", "1", "--warmup", "1"]
    assert main([*base, "--data", str(puzzles), "--steps", "2", *TINY_SHAPE]) == 0
    capsys.readouterr()
    refused(capsys, [*base, "--data", other, "--steps", "3", "--resume"], "different inputs ['data_sha256']")
    refused(capsys, [*base, "--data", puzzles, "--steps", "3", "--resume", "--d-model", "32"], "--d-model: a resumed run keeps")
    assert main([*base, "--data", str(puzzles), "--steps", "3", "--resume"]) == 0  # the same data and shape go on
    log = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [2, 3]


def test_resume_from_a_broken_checkpoint(files, tmp_path, capsys):
    # Failure: RuntimeError / ValueError tracebacks from torch.load on a truncated or garbage file.
    _, puzzles = files
    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoint.pt").write_bytes(b"garbage")
    refused(capsys, ["sudoku", "train", "--data", puzzles, "--out", run, "--steps", "2", "--warmup", "0", "--resume"],
            "unreadable checkpoint")
