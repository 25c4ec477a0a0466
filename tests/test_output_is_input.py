"""An output that is one of the command's inputs is refused before any work (issue 50): through the same
path, `.`/`..` or a link alike, with exit 2, one line, and the input left as it was."""

from __future__ import annotations

import os

import pytest

from unmask.errors import UnmaskError
from unmask.io import check_output_file


def test_the_same_file_by_any_path_is_refused(tmp_path):
    # Bug caught: comparing path strings, which misses `./f`, `d/../f` and a link to f.
    f = tmp_path / "data.csv"
    f.write_text("x\n")
    (tmp_path / "d").mkdir()
    link = tmp_path / "link.csv"
    link.symlink_to(f)
    for out in (f, tmp_path / "." / "data.csv", tmp_path / "d" / ".." / "data.csv", link):
        with pytest.raises(UnmaskError, match="is also an input of this command"):
            check_output_file(out, [str(f)])
    check_output_file(tmp_path / "new.csv", [str(f)])  # another file, or one that does not exist yet: fine
    check_output_file(f, [None, ""])


FASTA = ">a\nEVQLVESGGGLVQPGGSLRLSCAASGFTFSSYAMSWVRQAPGKGLEWVS\n"


def _cases(sudoku_files, tmp_path):
    model_dir, puzzles = sudoku_files
    fasta = tmp_path / "chains.fasta"
    fasta.write_text(FASTA)
    problems = tmp_path / "problems.jsonl"
    problems.write_text('{"question": "1 + 1?", "answer": "2 #### 2"}\n')
    return {
        "sudoku eval": (["sudoku", "eval", "--puzzles", puzzles, "--model", model_dir, "--out", puzzles], puzzles),
        "sudoku widen": (["sudoku", "widen", "--puzzles", puzzles, "--n", "1", "--out", puzzles], puzzles),
        "maths generate": (["maths", "generate", "--n", "2", "--exclude", problems, "--out", problems], problems),
        "proteins generate": (["proteins", "generate", "--reference", fasta, "--out", fasta], fasta),
        "proteins infill": (["proteins", "infill", "--model", "hf:" + str(tmp_path), "--antibodies", fasta,
                             "--out", fasta], fasta),
        "mi map": (["mi", "map", "--task", "sudoku", "--model", model_dir, "--examples", puzzles, "--cell", "1,1",
                    "--out", puzzles], puzzles),
    }


@pytest.mark.parametrize("command", ["sudoku eval", "sudoku widen", "maths generate", "proteins generate",
                                     "proteins infill", "mi map"])
def test_a_command_never_writes_over_its_input(cli, sudoku_files, tmp_path, command):
    # Bug caught: `--out F` naming the command's own input: the input overwritten with exit 0 (later
    # scores then computed against corrupted targets).
    argv, given = _cases(sudoku_files, tmp_path)[command]
    before = given.read_bytes()
    code, _, err = cli(argv)
    lines = [line for line in err.splitlines() if line.startswith("unmask:")]  # (the fixture's progress bar aside)
    assert code == 2 and len(lines) == 1 and "is also an input of this command" in lines[0], err
    assert given.read_bytes() == before
    assert os.path.isfile(given)
