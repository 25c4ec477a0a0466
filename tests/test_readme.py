"""The result tables of the README and the docs against the committed results files (benchmarks/tools/check_readme.py):
no model runs."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def _load():
    spec = importlib.util.spec_from_file_location("check_readme", ROOT / "benchmarks" / "tools" / "check_readme.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


check_readme = _load()


def _pages() -> dict[Path, str]:
    """The README and every docs page, whose tables the check holds to their results files."""
    return {path: path.read_text(encoding="utf-8") for path in check_readme.pages()}


def test_every_marked_table_matches_its_results_file():
    # Bug caught: a table of the README or the docs edited by hand (or a results file regenerated) so that
    # the two disagree, or a new results table added without a marker naming its file.
    errors = [f"{path.relative_to(ROOT)}: {e}" for path, text in _pages().items()
              for e in check_readme.check(text, require=check_readme.requires_markers(path))]
    assert not errors, "tables disagree with their results files:\n" + "\n".join(errors)


def test_the_pages_mark_their_result_tables():
    # Bug caught: the markers dropped (or the docs left out of the check), leaving it with nothing to check.
    pages = _pages()
    assert any(p.parts[-3:-1] == ("docs", "results") for p in pages)
    marked = [t for text in pages.values() for t in check_readme.tables(text) if t.marker and not t.marker.startswith("none")]
    assert len(marked) >= 60


def _page_with(row: str) -> str:
    (text,) = [text for text in _pages().values() if row in text]
    assert text.count(row) == 1, f"planting needs {row!r} exactly once"
    return text


def _plant(old: str, new: str) -> list[str]:
    text = _page_with(old)
    return check_readme.check(text.replace(old, new))


@pytest.mark.parametrize(
    "old, new, table, cell",
    [
        # rows mode, the whole file table: one accuracy changed
        ("| test-kaggle | sequential:metric=entropy | 48 | 99.5 | 395 |",
         "| test-kaggle | sequential:metric=entropy | 48 | 99.6 | 395 |",
         "set | policy | mean_nfe | accuracy % | seconds", "accuracy %"),
        # rows mode, a subset of the file: one NFE changed
        ("| test-hard | mi:gamma=0.1,lam=2.0 | 28.4 |", "| test-hard | mi:gamma=0.1,lam=2.0 | 24.8 |",
         "set | policy | mean_nfe | accuracy % | extra_passes", "mean_nfe"),
        # pivot mode: one policy × budget cell changed
        ("| Top-Prob (`top_prob`) | 57.5 |", "| Top-Prob (`top_prob`) | 58.5 |",
         "policy | T = 4 | T = 5 | T = 10 | T = 15 | T = 72", "T = 4"),
        # numbers mode (JSON source): one metric changed
        ("| 94,640 | 0.0112 | 0.72 | 0.48 |", "| 94,640 | 0.0112 | 0.72 | 0.46 |", "held-out pairs | MSE", "Spearman"),
    ],
    ids=["rows", "subset", "pivot", "numbers"],
)
def test_the_check_catches_a_planted_mismatch(old, new, table, cell):
    # Bug caught: a checker that passes whatever the README says.
    errors = _plant(old, new)
    assert errors, "a planted mismatch went unnoticed"
    assert any(table in e and f"'{cell}'" in e for e in errors), "\n".join(errors)


def test_the_check_catches_a_dropped_row_and_an_unmarked_table():
    row = "| test-hard | threshold:tau=0.7 | 3.52 | 24.1 | 22.8 |\n"
    text = _page_with(row)
    errors = check_readme.check(text.replace(row, ""))
    assert any("21 rows" in e and "has 22" in e for e in errors), "\n".join(errors)
    assert any("threshold:tau=0.7 | 3.52 | 24.1 | 22.8' is missing" in e for e in errors), "\n".join(errors)
    marker = "<!-- results: benchmarks/results/sudoku/sudoku_policies.md -->\n"
    errors = check_readme.check(text.replace(marker, ""))
    assert any("no '<!-- results: FILE -->' marker" in e and "accuracy % | seconds" in e for e in errors), "\n".join(errors)


def test_the_check_on_a_small_readme(tmp_path):
    # Markdown and JSON sources, numbers compared at the README's precision, a missing file reported.
    (tmp_path / "r.md").write_text("| set | acc |\n|---|---|\n| a | 69 |\n| b | 0.0109 |\n")
    (tmp_path / "r.json").write_text('{"m": {"spearman": 0.49142, "cost": 0.02075, "pairs": 94640}}\n')
    good = ("<!-- results: r.md -->\n| set | acc |\n|---|---|\n| a | 69.0 |\n| b | 0.0109 |\n\n"
            "<!-- results: r.json numbers scale=100 -->\n\n| pairs | rho | cost |\n|---|---|---|\n| 94,640 | 0.49 | 2.1 % |\n")
    assert check_readme.check(good, tmp_path) == []
    assert check_readme.check(good.replace("| a | 69.0 |", "| a | 69.1 |"), tmp_path)
    assert check_readme.check(good.replace("0.49 |", "0.50 |"), tmp_path)
    missing = check_readme.check(good.replace("r.json", "gone.json"), tmp_path)
    assert any("gone.json does not exist" in e for e in missing)


NEW_RESULTS = ("| set | policy | eps | nfe | acc |\n|---|---|---|---|---|\n| a | seq | 0 | 48 | 96.4 |\n"
               "| a | mi | 0 | 5.1 | 90 |\n| a | mi | 0.1 | 4.2 | 71 |\n| b | seq | 0 | 56.6 | 42.9 |\n")


def test_refresh_rewrites_tables_from_their_files_and_leaves_the_rest(tmp_path):
    # Bugs caught: a row matched by its numbers instead of its names (the wrong row copied in), the
    # prose or a numbers table rewritten, an ambiguous row guessed at, formatting lost where the value held.
    (tmp_path / "r.md").write_text(NEW_RESULTS)
    (tmp_path / "j.json").write_text('{"acc": 0.964}\n')
    old = ("Sequential solves 94.8 %.\n\n<!-- results: r.md -->\n| set | policy | eps | nfe | acc |\n|---|---|---|---|---|\n"
           "| a | seq | 0 | **48** | 94.8 |\n| b | seq | 0 | 56.6 | 36.5 |\n\n"
           "<!-- results: r.md subset -->\n| set | policy | acc |\n|---|---|---|\n| b | seq | 36.5 |\n| a | mi | 88 |\n\n"
           "<!-- results: r.md subset key=set,policy,eps -->\n"
           "| set | policy | eps | acc |\n|---|---|---|---|\n| a | mi | 0.1 | 70 |\n\n"
           "<!-- results: j.json numbers scale=100 -->\n| acc |\n|---|\n| 94.8 % |\n")
    new, changes, left = check_readme.refresh(old, tmp_path)
    assert new.startswith("Sequential solves 94.8 %.")  # prose is a hand edit
    assert "| a | seq | 0 | **48** | 96.4 |\n| a | mi | 0 | 5.1 | 90 |\n| a | mi | 0.1 | 4.2 | 71 |\n" in new  # 48 kept bold
    assert "| b | seq | 42.9 |\n| a | mi | 88 |\n" in new  # by names; 'a | mi' is two file rows: left
    assert "| a | mi | 0.1 | 71 |\n" in new  # the key columns tell them apart
    assert "| 94.8 % |" in new
    assert len(changes) == 10 and any("gone 'b | seq | 0 | 56.6 | 36.5'" in c for c in changes)
    assert len(left) == 2
    assert "'a | mi | 88' matches 2 rows" in left[0] and "1 mismatches in a table rewritten by hand (numbers)" in left[1]
    assert len(check_readme.check(new, tmp_path)) == 2  # what is left, and nothing else
    again, changes, _ = check_readme.refresh(new, tmp_path)
    assert again == new and changes == []  # a second run changes nothing


def test_refresh_never_writes_one_row_under_another_rows_names(tmp_path):
    # Bugs caught (each once in --refresh): a cell kept because the file's value rounds to it
    # (an eps 0 kept over the file's 0.0001, so eps 0.0001's figures showed under eps 0; a 100 kept
    # over 99.6); numeric key columns compared at the README's precision; indentation dropped.
    (tmp_path / "r.md").write_text("| set | eps | acc |\n|---|---|---|\n| a | 0 | 99.6 |\n| a | 0.0001 | 71 |\n")
    rows_table = "<!-- results: r.md -->\n  | set | eps | acc |\n  |---|---|---|\n  | a | 0 | 100 |\n"
    new, changes, left = check_readme.refresh(rows_table, tmp_path)
    assert new.endswith("  | a | 0 | 99.6 |\n  | a | 0.0001 | 71 |\n") and left == []
    keyed = "<!-- results: r.md subset key=set,eps -->\n| set | eps | acc |\n|---|---|---|\n| a | 0 | 100 |\n"
    new, _, left = check_readme.refresh(keyed, tmp_path)
    assert new.endswith("| a | 0 | 99.6 |\n") and left == []
    by_names = keyed.replace(" key=set,eps", "")
    new, _, left = check_readme.refresh(by_names, tmp_path)  # 'a' names two rows: nothing guessed
    assert new == by_names and "matches 2 rows" in left[0]
    bad = keyed.replace("key=set,eps", "table=3")
    new, _, left = check_readme.refresh(bad, tmp_path)  # a table the file does not have: one line, no traceback
    assert new == bad and left == [next(iter(left))] and "no table in r.md" in left[0]


def test_refresh_command_writes_only_when_asked(tmp_path):
    import subprocess

    (tmp_path / "README.md").write_text("<!-- results: benchmarks/results/sudoku/sudoku_policies.md -->\n"
                                        "| set | policy | mean_nfe | accuracy % | seconds |\n"
                                        "|---|---|---|---|---|\n| x | y | 1 | 2 | 3 |\n")
    script = [sys.executable, str(ROOT / "benchmarks" / "tools" / "check_readme.py"), str(tmp_path / "README.md"), "--refresh"]
    before = (tmp_path / "README.md").read_text()
    r = subprocess.run(script, capture_output=True, text=True)
    assert r.returncode == 0 and "in 1 tables to write" in r.stderr and "now 'test-kaggle | sequential" in r.stdout
    assert (tmp_path / "README.md").read_text() == before
    r = subprocess.run([*script, "--write"], capture_output=True, text=True)
    assert r.returncode == 0 and "in 1 tables written" in r.stderr
    assert check_readme.check((tmp_path / "README.md").read_text()) == []
    (tmp_path / "README.md").write_text(before.replace("sudoku_policies.md", "gone.md"))
    r = subprocess.run(script, capture_output=True, text=True)  # something left for a hand edit
    assert r.returncode == 1 and "gone.md does not exist" in r.stdout
    r = subprocess.run([*script[:2], str(tmp_path / "gone.md"), "--refresh"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip() == f"check_readme.py: {tmp_path / 'gone.md'}: no such file"
