"""Helpers every benchmark shares: Markdown tables and the paths its results record."""

from __future__ import annotations

from unmask.eval import markdown_table, shown_path


def test_markdown_table_rounds_floats_and_blanks_missing_cells():
    table = markdown_table([{"a": 0.123456, "b": 12345.6}, {"a": None}], ["a", "b"])
    assert table.splitlines() == ["| a | b |", "|---|---|", "| 0.123 | 12346 |", "|  |  |"]


def test_shown_path_is_relative_inside_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "models" / "m").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert shown_path(tmp_path / "models" / "m") == "models/m"
    assert shown_path("models/m") == "models/m"
    outside = tmp_path.parent / "elsewhere"
    assert shown_path(outside) == str(outside)  # outside: kept as given, never a '../' chain
