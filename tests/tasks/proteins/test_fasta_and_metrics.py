"""FASTA reading and writing, the protein layout, and the generation metrics.

Each test names the planted bug it is there to catch.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from unmask.errors import UnmaskError
from unmask.tasks.proteins.fasta import AMINO_ACIDS, Record, format_fasta, parse_fasta, read_fasta, write_fasta
from unmask.tasks.proteins.metrics import compare_sets, dipeptide_counts, jsd, residue_counts
from unmask.tasks.proteins.task import EOS_ID, MASK_ID, ProteinTask, decode_residues, encode_residues, length_prompts

names = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=20).filter(lambda s: s.strip())
records = st.lists(st.builds(Record, names.map(str.strip), st.text(AMINO_ACIDS, min_size=1, max_size=150)),
                   min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(records)
def test_round_trip(recs):
    # Bug caught: sequences wrapped or joined wrongly at LINE_WIDTH, headers mangled.
    assert parse_fasta(format_fasta(recs)) == recs


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_parses_or_gives_one_line(text):
    # Bug caught: an exception other than UnmaskError (a traceback) on odd input.
    try:
        parse_fasta(text)
    except UnmaskError as e:
        assert "\n" not in str(e)


@pytest.mark.parametrize("text,message", [
    ("ACDE\n", "sequence line before any '>' header"),
    (">a\nACDX\n", "'X', not one of the 20 standard amino acids"),
    (">a\nACD*\n", "stop codon"),
    (">a\n>b\nACD\n", "record 'a' has no sequence"),
    (">\nACD\n", "empty header"),
    ("", "no FASTA records"),
])
def test_errors_name_the_problem_and_line(text, message):
    with pytest.raises(UnmaskError, match=message.replace("*", r"\*").replace("(", r"\(")):
        parse_fasta(text, "f.fasta")


def test_lower_case_blank_lines_and_crlf_are_read(tmp_path):
    path = tmp_path / "a.fasta"
    path.write_bytes(b">p1 some protein\r\nacde\r\n\r\nFGH\r\n>p2\nKLM\n")
    assert read_fasta(path) == [Record("p1 some protein", "ACDEFGH"), Record("p2", "KLM")]
    write_fasta(tmp_path / "b.fasta", read_fasta(path))
    assert read_fasta(tmp_path / "b.fasta") == read_fasta(path)


def test_writer_refuses_what_the_reader_would():
    for bad in (Record("", "ACD"), Record("a\nb", "ACD"), Record("a", ""), Record("a", "ACDX")):
        with pytest.raises(UnmaskError):
            format_fasta([bad])


def test_layout_never_puts_a_residue_outside_the_length():
    # Bugs caught: EOS inside the length, residues (or masks) past it, a wrong residue order.
    prompts = length_prompts([3, 5, 1], 6)
    assert prompts.tolist() == [[MASK_ID] * 3 + [EOS_ID] * 3, [MASK_ID] * 5 + [EOS_ID], [MASK_ID] + [EOS_ID] * 5]
    tokens = encode_residues(["ACD", "WYVTS", "M"], 6)
    assert ((tokens == EOS_ID) == (prompts == EOS_ID)).all()
    assert decode_residues(tokens) == ["ACD", "WYVTS", "M"]
    with pytest.raises(UnmaskError, match="7 residues; the model holds 6"):
        encode_residues(["ACDEFGH"], 6)
    with pytest.raises(UnmaskError, match="lengths must be in 1..6"):
        length_prompts([0], 6)


def test_task_scores_recovery_and_parses_residue_numbers():
    task = ProteinTask(6)
    recs = [Record("a", "ACD"), Record("b", "WY")]
    assert task.score(task.targets(recs), recs).all()
    assert not task.score(encode_residues(["ACE", "WY"], 6), recs)[0]
    assert task.parse_position("2", task.encode(recs)[0]) == 1
    with pytest.raises(UnmaskError, match="residues 1..3"):
        task.parse_position("4", task.encode(recs)[0])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 10), min_size=20, max_size=20), st.lists(st.floats(0, 10), min_size=20, max_size=20))
def test_jsd_properties(a, b):
    # Bugs caught: log base 2 (bound 1 instead of ln 2), asymmetry (a KL instead of the JSD), no normalisation.
    p, q = torch.tensor(a) + 1e-3, torch.tensor(b) + 1e-3
    assert jsd(p, p) == pytest.approx(0.0, abs=1e-12) and jsd(p, 3 * p) == pytest.approx(0.0, abs=1e-12)
    assert jsd(p, q) == pytest.approx(jsd(q, p), abs=1e-12)
    assert 0 <= jsd(p, q) <= math.log(2)


def test_jsd_of_disjoint_supports_is_ln2_and_a_known_value():
    assert jsd(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])) == pytest.approx(math.log(2))
    # p = (1, 0), q = (1/2, 1/2): m = (3/4, 1/4); JSD = ½·ln(4/3) + ½·(½·ln(2/3) + ½·ln 2)
    want = 0.5 * math.log(4 / 3) + 0.25 * math.log(2 / 3) + 0.25 * math.log(2)
    assert jsd(torch.tensor([1.0, 0.0]), torch.tensor([1.0, 1.0])) == pytest.approx(want)


def test_counts_and_compare_sets():
    # Bugs caught: dipeptides counted across sequence boundaries, or unordered.
    assert residue_counts(["AAC"])[AMINO_ACIDS.index("A")] == 2
    d = dipeptide_counts(["AC", "CA"])
    a, c = AMINO_ACIDS.index("A"), AMINO_ACIDS.index("C")
    assert d[a * 20 + c] == 1 and d[c * 20 + a] == 1 and d.sum() == 2  # no "CC" from joining "AC"+"CA"
    m = compare_sets(["ACD", "ACD", "KLM"], ["ACD", "KLM"])
    assert m["distinct"] == pytest.approx(2 / 3) and m["mean_length"] == 3 and m["jsd_aa"] > 0
