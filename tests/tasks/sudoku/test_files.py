"""Sudoku puzzle files (data.py): read and write round trips, the formats accepted, and one clear error per bad file."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.tasks.sudoku.puzzles import QUIZZES, SOLUTIONS
from unmask.errors import UnmaskError
from unmask.tasks.sudoku.data import SudokuSet, format_grid, read_puzzles, write_puzzles


def write_csv(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def grid_str(g) -> str:
    return format_grid(g)


def test_write_read_round_trip_with_solutions(tmp_path):
    data = SudokuSet(QUIZZES, SOLUTIONS)
    path = tmp_path / "sub" / "set.csv"
    write_puzzles(path, data)
    lines = path.read_text().splitlines()
    assert lines[0] == "quizzes,solutions"
    assert lines[1] == f"{grid_str(QUIZZES[0])},{grid_str(SOLUTIONS[0])}"
    assert len(lines) == 7
    back = read_puzzles(path)
    assert back.quizzes.dtype == np.int8 and back.solutions.dtype == np.int8
    np.testing.assert_array_equal(back.quizzes, QUIZZES)
    np.testing.assert_array_equal(back.solutions, SOLUTIONS)
    assert [p.name for p in path.parent.iterdir()] == ["set.csv"]  # no temporary left behind
    assert oct(path.stat().st_mode & 0o777) == oct(0o644)


def test_write_read_round_trip_without_solutions(tmp_path):
    path = tmp_path / "q.csv"
    write_puzzles(path, SudokuSet(QUIZZES, None))
    assert path.read_text().splitlines()[0] == "quizzes"
    back = read_puzzles(str(path))
    assert back.solutions is None
    np.testing.assert_array_equal(back.quizzes, QUIZZES)
    # overwriting replaces the whole file
    write_puzzles(path, SudokuSet(QUIZZES[:2], SOLUTIONS[:2]))
    back = read_puzzles(path)
    assert len(back) == 2 and back.solutions is not None


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(
        st.tuples(st.integers(0, 5), st.lists(st.booleans(), min_size=81, max_size=81)),
        min_size=1,
        max_size=5,
    ),
    with_solutions=st.booleans(),
)
def test_round_trip_property(rows, with_solutions):
    sols = SOLUTIONS[[k for k, _ in rows]]
    keep = np.array([m for _, m in rows])
    quizzes = np.where(keep, sols, 0).astype(np.int8)  # any subset of a solution never clashes
    data = SudokuSet(quizzes, sols if with_solutions else None)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "p.csv"
        write_puzzles(path, data)
        back = read_puzzles(path)
    np.testing.assert_array_equal(back.quizzes, quizzes)
    if with_solutions:
        np.testing.assert_array_equal(back.solutions, sols)
    else:
        assert back.solutions is None


def test_read_accepts_dots_spaces_blank_lines_and_crlf(tmp_path):
    q, s = grid_str(QUIZZES[0]), grid_str(SOLUTIONS[0])
    path = tmp_path / "dots.csv"
    path.write_bytes(
        (f"quizzes, solutions\r\n{q.replace('0', '.')},{s}\r\n\r\n {grid_str(QUIZZES[1])} ,{grid_str(SOLUTIONS[1])}\r\n").encode()
    )
    back = read_puzzles(path)
    np.testing.assert_array_equal(back.quizzes, QUIZZES[:2])
    np.testing.assert_array_equal(back.solutions, SOLUTIONS[:2])


def _error(path, *, line: int | None = None, match: str | None = None) -> str:
    with pytest.raises(UnmaskError) as info:
        read_puzzles(path)
    msg = str(info.value)
    assert str(path) in msg
    if line is not None:
        assert f"{path}:{line}:" in msg
    if match is not None:
        assert match in msg
    assert "\n" not in msg
    return msg


def test_read_errors_name_file_and_line(tmp_path):
    q = [grid_str(x) for x in QUIZZES]
    s = [grid_str(x) for x in SOLUTIONS]
    header = "quizzes,solutions"

    _error(tmp_path / "missing.csv", match="no such file")
    _error(tmp_path, match="is a folder, not a file")

    _error(write_csv(tmp_path / "h1.csv", ["puzzles,solutions", f"{q[0]},{s[0]}"]), match="header")
    _error(write_csv(tmp_path / "h2.csv", ["quizzes,answers", f"{q[0]},{s[0]}"]), match="header")
    _error(write_csv(tmp_path / "h3.csv", ["quizzes,solutions,extra", f"{q[0]},{s[0]},x"]), match="header")
    _error(write_csv(tmp_path / "h4.csv", [f"{q[0]},{s[0]}"]), match="header")  # no header at all

    empty = tmp_path / "empty.csv"
    empty.write_text("")
    _error(empty)
    _error(write_csv(tmp_path / "only_header.csv", [header]), match="no puzzles")
    _error(write_csv(tmp_path / "only_header_blank.csv", [header, "", ""]), match="no puzzles")

    _error(write_csv(tmp_path / "fields.csv", [header, f"{q[0]},{s[0]}", q[1]]), line=3, match="expected 2 fields, got 1")
    _error(write_csv(tmp_path / "fields2.csv", ["quizzes", q[0], f"{q[1]},{s[1]}"]), line=3, match="expected 1 fields, got 2")
    _error(write_csv(tmp_path / "short.csv", [header, f"{q[0]},{s[0]}", f"{q[1]},{s[1]}", f"{q[2][:80]},{s[2]}"]),
           line=4, match="81 characters, got 80")
    _error(write_csv(tmp_path / "short_sol.csv", [header, f"{q[0]},{s[0][:80]}"]), line=2, match="got 80")
    _error(write_csv(tmp_path / "char.csv", [header, f"{q[0]},{s[0]}", f"{q[1][:5]}a{q[1][6:]},{s[1]}"]), line=3, match="'a'")
    _error(write_csv(tmp_path / "blank_sol.csv", [header, f"{q[0]},{s[0]}", f"{q[1]},{q[1]}"]), line=3, match="blanks")

    clash = QUIZZES[1].copy()
    clash[0] = clash[1] = 7  # two 7s in row 0
    _error(write_csv(tmp_path / "clash.csv", ["quizzes", q[0], grid_str(clash), q[2]]), line=3, match="repeat")

    # the solution is a valid grid but belongs to another puzzle
    _error(write_csv(tmp_path / "disagree.csv", [header, f"{q[0]},{s[0]}", f"{q[1]},{s[1]}", f"{q[2]},{s[3]}"]),
           line=4, match="solution")
    # the solution agrees with every given but is not a valid grid
    broken = SOLUTIONS[1].copy()
    r = next(r for r in range(9) if (QUIZZES[1][9 * r : 9 * r + 9] == 0).sum() >= 2)
    free = [9 * r + c for c in range(9) if QUIZZES[1][9 * r + c] == 0]
    broken[free[0]], broken[free[1]] = broken[free[1]], broken[free[0]]
    _error(write_csv(tmp_path / "invalid.csv", [header, f"{q[0]},{s[0]}", f"{q[1]},{grid_str(broken)}"]),
           line=3, match="solution")


def test_read_accepts_a_utf8_byte_order_mark(tmp_path):
    # Bug caught: a BOM (Excel's "CSV UTF-8") left on the header, so a valid file is refused.
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbf" + f"quizzes,solutions\n{grid_str(QUIZZES[0])},{grid_str(SOLUTIONS[0])}\n".encode())
    data = read_puzzles(path)
    assert np.array_equal(data.quizzes[0], QUIZZES[0]) and np.array_equal(data.solutions[0], SOLUTIONS[0])


def test_read_refuses_binary_and_non_utf8_in_one_line(tmp_path):
    # Bug caught: UnicodeDecodeError escaping as a traceback for a binary or Latin-1 file.
    binary = tmp_path / "binary.csv"
    binary.write_bytes(bytes(range(256)) * 4)
    assert "not UTF-8 text" in _error(binary)
    latin = tmp_path / "latin.csv"
    latin.write_bytes("quizzes\n\xe9t\xe9\n".encode("latin-1"))
    assert "not UTF-8 text (byte 0xe9 at offset 8)" in _error(latin)


def test_read_refuses_a_huge_field_in_one_line(tmp_path):
    # Bug caught: the csv module's "field larger than field limit" escaping as a traceback.
    path = tmp_path / "huge.csv"
    path.write_text("quizzes,solutions\n" + "1" * 200_000 + ",2\n")
    assert "huge.csv:2: not a puzzle CSV (field larger than field limit" in _error(path)


def test_clash_line_number_after_blank_line(tmp_path):
    clash = QUIZZES[1].copy()
    clash[0] = clash[1] = 7
    # line 1 header, line 2 a puzzle, line 3 blank, line 4 the clashing puzzle
    path = write_csv(tmp_path / "gap.csv", ["quizzes", grid_str(QUIZZES[0]), "", grid_str(clash)])
    _error(path, line=4, match="repeat")


def test_widen_command_writes_puzzles_with_several_solutions(tmp_path, cli):
    from unmask.tasks.sudoku.grid import count_solutions

    source = tmp_path / "p.csv"
    write_puzzles(source, SudokuSet(QUIZZES, SOLUTIONS))
    out = tmp_path / "wide.csv"
    code, _, err = cli(["sudoku", "widen", "--puzzles", str(source), "--n", "4", "--low", "3", "--high", "9", "--out", str(out)])
    assert code == 0 and "of 4 puzzles widened to" in err
    wide = read_puzzles(out)
    assert wide.solutions is None and 1 <= len(wide) <= 4
    for quiz in wide.quizzes:  # each has 3..9 completions, and keeps only givens of a source puzzle
        assert 3 <= count_solutions(quiz.tolist(), 10) <= 9
        assert any(((quiz == 0) | (quiz == q)).all() for q in QUIZZES[:4])
    # Bad input: one line, exit 2, nothing written; an existing file is never a default to overwrite.
    code, _, err = cli(["sudoku", "widen", "--puzzles", str(source), "--low", "5", "--high", "2",
                        "--out", str(tmp_path / "x.csv")])
    assert code == 2 and "--low" in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "x.csv").exists()
    code, _, err = cli(["sudoku", "widen", "--puzzles", str(tmp_path / "missing.csv"), "--out", str(tmp_path / "y.csv")])
    assert code == 2 and len(err.strip().splitlines()) == 1
    code, _, err = cli(["sudoku", "widen", "--puzzles", str(source), "--seed", "-1", "--out", str(tmp_path / "z.csv")])
    assert code == 2 and "seed" in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "z.csv").exists()
