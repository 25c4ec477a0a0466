"""The seq task's readers: FASTA, JSONL and plain text read back what was written (property tests), and
every malformed file is one UnmaskError line."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unmask.errors import UnmaskError
from unmask.tasks.seq.data import Example, Fields, file_format, parse_fasta, parse_jsonl, parse_lines, read_examples
from unmask.tasks.seq.layout import parse_spans, prompt_row

PROPERTY = settings(max_examples=60, deadline=None, derandomize=True)
visible = st.characters(blacklist_categories=("Z", "C"))  # no whitespace, separators or control characters
names = st.text(visible, min_size=1, max_size=12)
sequences = st.text(visible, min_size=1, max_size=30).filter(lambda s: not s.startswith(">"))
line_text = st.text(st.characters(blacklist_characters="\n\r"), min_size=1, max_size=30).filter(lambda s: s.strip())


@PROPERTY
@given(st.lists(st.tuples(names, sequences, st.integers(1, 7)), min_size=1, max_size=5))
def test_fasta_reads_back_what_was_written(records):
    text = ""
    for name, seq, width in records:  # the sequence wrapped at any width, a blank line between records
        text += f">{name}\n" + "".join(seq[i : i + width] + "\n" for i in range(0, len(seq), width)) + "\n"
    assert parse_fasta(text) == [Example(seq, name) for name, seq, _ in records]


spans = st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=3)


@PROPERTY
@given(st.lists(st.tuples(st.text(max_size=20), st.none() | st.text(max_size=10) | st.integers(-99, 99),
                          st.none() | spans, st.booleans()), min_size=1, max_size=5))
def test_jsonl_reads_back_what_was_written(rows):
    lines, want = [], []
    for k, (text, target, sp, ascii_only) in enumerate(rows, start=1):
        obj = {"prompt": text, "answer": target, "other": [1, 2]}  # unknown fields are ignored
        if sp is not None:
            obj["spans"] = [list(s) for s in sp]
        lines.append(json.dumps(obj, ensure_ascii=ascii_only))  # raw U+2028 and friends stay inside a line
        want.append(Example(text, f"line {k}", None if target is None else str(target),
                            None if sp is None else tuple(sp)))
    assert parse_jsonl("\n".join(lines) + "\n", fields=Fields("prompt", "answer")) == want


@PROPERTY
@given(st.lists(line_text, min_size=1, max_size=6), st.sampled_from(["\n", "\r\n"]))
def test_plain_text_is_one_sequence_per_line(seqs, end):
    text = end.join(seqs[:1] + ["", "  "] + seqs[1:]) + end  # blank lines are skipped and not counted
    got = parse_lines(text)
    assert [ex.text for ex in got] == seqs
    assert got[0].name == "line 1" and (len(seqs) == 1 or got[1].name == "line 4")


def test_format_follows_the_suffix_unless_given(tmp_path):
    assert [file_format(p) for p in ("a.fasta", "a.FA", "a.jsonl", "a.txt", "a")] == ["fasta", "fasta", "jsonl", "text", "text"]
    assert file_format("a.txt", "jsonl") == "jsonl"
    path = tmp_path / "x.txt"
    path.write_text(">not a header here\nACGT\n")
    assert [ex.text for ex in read_examples(path)] == [">not a header here", "ACGT"]
    assert read_examples(path, "fasta") == [Example("ACGT", "not a header here")]


@pytest.mark.parametrize("fmt, text, message", [
    ("fasta", "ACGT\n", "before any '>' header"),
    ("fasta", ">a\n>b\nAC\n", "has no sequence"),
    ("fasta", ">\nAC\n", "empty header"),
    ("jsonl", "{\"text\": 1}\n", "needs a string field 'text'"),
    ("jsonl", "[1]\n", "expected a JSON object"),
    ("jsonl", "{oops\n", "not JSON"),
    ("jsonl", "{\"text\": \"a\", \"target\": [1]}\n", "must be a string or a number"),
    ("jsonl", "{\"text\": \"a\", \"spans\": [[1]]}\n", "spans"),
    ("text", "\n  \n", "no sequences"),
    ("fasta", "", "no sequences"),
])
def test_malformed_files_are_one_line(tmp_path, fmt, text, message):
    path = tmp_path / "in"
    path.write_text(text)
    with pytest.raises(UnmaskError, match=message) as e:
        read_examples(path, fmt)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("text", ["5", "5:5", "6:5", "-1:3", "a:b", "1:2,", ""])
def test_bad_spans_are_refused(text):
    with pytest.raises(UnmaskError, match="--spans"):
        parse_spans(text)


def test_spans_parse():
    assert parse_spans("5:10, 20:25") == ((5, 10), (20, 25))


@given(st.lists(st.integers(0, 9), max_size=12), st.integers(1, 8))
def test_prompt_row_fills_only_after_the_prompt(ids, n):
    """Bugs caught: generated positions laid before the prompt's end (a suffix after them), a fill mask
    that covers the prompt, or blocks starting anywhere but the first generated position."""
    mask = 10
    row = prompt_row(ids, mask, n)
    assert row.tokens.tolist() == ids + [mask] * n and row.start == len(ids) and row.offset == 0
    assert row.fill.tolist() == [False] * len(ids) + [True] * n


def test_prompt_row_refuses_a_mask_inside_the_prompt():
    """Bug caught: a prompt holding the mask token silently filled along with the answer."""
    with pytest.raises(UnmaskError, match="question 3 holds the mask token"):
        prompt_row([1, 10, 2], 10, 4, "question 3")
