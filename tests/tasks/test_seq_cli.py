"""``unmask seq generate|eval`` end to end on a tiny random BERT and a tiny unmask DNA model made in the tests."""

from __future__ import annotations

import json

import pytest


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


TEXTS = ["a [MASK] c", "[MASK] [MASK] b c d", "the capital is [MASK]", "e [MASK]", "a b [MASK] d e f g [MASK]"]


def test_generate_is_batch_invariant_on_a_hugging_face_mlm(cli, seq_bert, tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", [{"text": t} for t in TEXTS])
    outs = []
    for b in (1, 3, 8):
        out = tmp_path / f"out{b}.jsonl"
        code, _, err = cli(["seq", "generate", "--model", f"hf:{seq_bert}", "--input", src, "--out", out, "--batch-size", b,
                            "--policy", "top_prob", "--budget", "2", "--temperature", "1"])
        assert code == 0, err
        outs.append(read_jsonl(out))
    assert outs[0] == outs[1] == outs[2]
    recs = outs[0]
    assert [r["index"] for r in recs] == list(range(len(TEXTS)))
    for r, text in zip(recs, TEXTS):
        words = text.split()
        filled = r["text"].split()
        assert r["positions"] == [k for k, w in enumerate(words) if w == "[MASK]"]
        assert [w for k, w in enumerate(filled) if k not in r["positions"]] == [w for w in words if w != "[MASK]"]
        assert [filled[k] for k in r["positions"]] == r["filled"] and r["answer"] == " ".join(r["filled"])
        assert 1 <= r["nfe"] <= 2 and not any(f.startswith("[") for f in r["filled"])  # no special token inside


def test_generate_after_a_prompt_in_semi_autoregressive_blocks(cli, seq_bert, tmp_path):
    src = tmp_path / "prompts.txt"
    src.write_text("the capital is\n\na b c\n")
    out = tmp_path / "out.jsonl"
    code, stdout, err = cli(["seq", "generate", "--model", f"hf:{seq_bert}", "--input", src, "--out", out, "--generate", "6",
                             "--block", "3", "--policy", "top_prob", "--budget", "2", "--json"])
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["policy"].startswith("semi_ar(block=3") and summary["mean_nfe"] == 4  # 2 blocks × 2 passes
    recs = read_jsonl(out)
    assert [r["name"] for r in recs] == ["line 1", "line 3"]
    assert [r["positions"] for r in recs] == [[3, 4, 5, 6, 7, 8], [3, 4, 5, 6, 7, 8]]
    assert recs[0]["text"].startswith("the capital is") and recs[1]["text"].startswith("a b c")


def test_dna_by_alphabet_on_an_unmask_model(cli, seq_dna_model, tmp_path):
    src = tmp_path / "dna.fasta"
    src.write_text(">one\nAC__\nGT_A\n>two\n________\n>three\nTTTTGGG_\n")
    out = tmp_path / "out.jsonl"
    code, _, err = cli(["seq", "generate", "--model", seq_dna_model, "--alphabet", "ACGT", "--input", src, "--out", out])
    assert code == 0, err
    recs = read_jsonl(out)
    for r, given in zip(recs, ["AC__GT_A", "________", "TTTTGGG_"]):
        assert len(r["text"]) == 8 and set(r["text"]) <= set("ACGT")
        assert all(a == b for a, b in zip(r["text"], given) if b != "_")  # the given letters are kept
        assert r["positions"] == [k for k, c in enumerate(given) if c == "_"] and r["nfe"] == len(r["positions"])
    assert [r["name"] for r in recs] == ["one", "two", "three"]


def test_spans_of_a_fasta_are_scored_against_their_own_letters(cli, seq_dna_model, tmp_path):
    src = tmp_path / "dna.fa"
    src.write_text(">a\nACGTACGT\n>b\nTTTTAAAA\n")
    out = tmp_path / "scored.jsonl"
    code, stdout, err = cli(["seq", "eval", "--model", seq_dna_model, "--alphabet", "ACGT", "--input", src, "--spans", "2:4,6:7",
                             "--json", "--out", out])
    assert code == 0, err
    recs = read_jsonl(out)
    assert [r["target"] for r in recs] == ["GTG", "TTA"] and all(r["positions"] == [2, 3, 6] for r in recs)
    assert json.loads(stdout)["accuracy"] == sum(r["answer"] == r["target"] for r in recs) / 2


def test_eval_scores_planted_answers_exactly_and_by_regex(cli, seq_dna_model, tmp_path):
    inputs = ["AC____GT", "TTTT____", "A_______"]
    src = write_jsonl(tmp_path / "in.jsonl", [{"text": t} for t in inputs])
    out = tmp_path / "gen.jsonl"
    base = ["--model", seq_dna_model, "--alphabet", "ACGT", "--policy", "sequential"]
    assert cli(["seq", "generate", *base, "--input", src, "--out", out])[0] == 0
    answers = [r["answer"] for r in read_jsonl(out)]
    wrong = lambda a: "".join("A" if c != "A" else "C" for c in a)  # noqa: E731  (differs at every letter)
    planted = write_jsonl(tmp_path / "planted.jsonl", [
        {"text": inputs[0], "target": answers[0]},  # right
        {"text": inputs[1], "target": wrong(answers[1])},  # wrong
        {"text": inputs[2], "target": "first " + answers[2][:2] + " then"}])  # right by the regex only
    code, stdout, err = cli(["seq", "eval", *base, "--input", planted, "--json"])
    assert code == 0, err
    assert json.loads(stdout)["accuracy"] == pytest.approx(1 / 3)
    # by regex: the first two letters of the filled text against the two letters after "first" in the target
    # (a target the regex finds nothing in is compared whole): right, wrong, right
    regex = "first ([ACGT]{2})|^([ACGT]{2})"
    code, stdout, err = cli(["seq", "eval", *base, "--input", planted, "--json", "--answer-regex", regex])
    assert code == 0, err
    assert json.loads(stdout)["accuracy"] == pytest.approx(2 / 3)


def test_eval_without_targets_is_the_pseudo_log_likelihood_and_a_judges(cli, seq_bert, tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", [{"text": t} for t in TEXTS])
    out = tmp_path / "pll.jsonl"
    code, stdout, err = cli(["seq", "eval", "--model", f"hf:{seq_bert}", "--input", src, "--judge", f"hf:{seq_bert}",
                             "--json", "--out", out])
    assert code == 0, err
    m = json.loads(stdout)
    assert m["pll"] < 0 and m["judge_pll"] == pytest.approx(m["pll"])  # the same model judging: the same figure
    recs = read_jsonl(out)
    assert m["pll"] == pytest.approx(sum(r["pll"] for r in recs) / len(recs))
    code, stdout, err = cli(["seq", "eval", "--model", f"hf:{seq_bert}", "--input", src])
    header = stdout.splitlines()[0]
    assert code == 0 and "| pll |" in header and "accuracy" not in header and "judge" not in header


@pytest.mark.parametrize("content, flags, message", [
    ("", [], "no sequences"),
    ("ACGTACGT\n", [], "no position to fill: no '_' in it"),
    ("ACGTACGT\n", ["--mask-char", "N"], "no position to fill: no 'N' in it"),
    ("ACGTACGT\n", ["--spans", "6:9"], "span 6:9 is out of range"),
    ("AC_TACGT\n", ["--block", "2"], "--block 2 needs --generate"),
    ("ACGT\n", ["--generate", "3"], "exactly 8"),
    ("AC_TACGT\n", ["--answer-regex", "("], "not a regular expression"),
    ("AC_TACGT\n", ["--answer-regex", "A"], "no example has a target"),
    ('{"text": "AC_TACGT", "target": "G"}\n{"text": "AC_TACGT"}\n', ["--format", "jsonl"], "1 of 2 examples have a target"),
    ("AC_TACGT\n", ["--policy", "nope"], "nope"),
])
def test_bad_input_is_exit_2_and_one_line(cli, seq_dna_model, tmp_path, content, flags, message):
    src = tmp_path / "in.txt"
    src.write_text(content)
    code, _, err = cli(["seq", "eval", "--model", seq_dna_model, "--alphabet", "ACGT", "--input", src, *flags])
    lines = [line for line in err.splitlines() if line.startswith("unmask")]
    assert code == 2 and len(lines) == 1 and message in lines[0], err


def test_generate_refuses_writing_over_its_input_and_needs_out(cli, seq_dna_model, tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("AC_TACGT\n")
    before = src.read_bytes()
    code, _, err = cli(["seq", "generate", "--model", seq_dna_model, "--alphabet", "ACGT", "--input", src, "--out", src])
    assert code == 2 and "also an input" in err and src.read_bytes() == before
    code, _, err = cli(["seq", "generate", "--model", seq_dna_model, "--alphabet", "ACGT", "--input", src])
    assert code == 2 and "--out FILE is required" in err
    code, _, err = cli(["seq", "generate", "--input", src, "--out", tmp_path / "o.jsonl"])
    assert code == 2 and "--model" in err


def test_the_how_to_page_runs(cli, seq_bert, seq_dna_model, tmp_path, monkeypatch):
    # Bug caught: the page showing a flag, a file layout or a command that `unmask seq` no longer takes.
    import re
    import shlex
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "how-to" / "own-sequences.md").read_text(encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for name, text in re.findall(r'```text title="([^"]+)"\n(.*?)```', page, re.S):
        Path(name).write_text(text)
    models = {"hf:my-mlm": f"hf:{seq_bert}", "hf:other-mlm": f"hf:{seq_bert}", "my-dna-model": str(seq_dna_model)}
    commands = [c for block in re.findall(r"```bash\n(.*?)```", page, re.S) for c in block.replace("\\\n", " ").splitlines()]
    ran = 0
    for command in commands:
        if "--device cuda" in command:  # the GPU example names a model folder this machine has not
            continue
        argv = [models.get(a, a) for a in shlex.split(command)]
        assert argv[0] == "unmask" and argv[1] in ("seq", "mi")
        code, _, err = cli(argv[1:])
        assert code == 0, f"{command}\n{err}"
        ran += 1
    assert ran == 10 and Path("filled.jsonl").is_file() and Path("scored.jsonl").is_file()
    assert Path("mi-head/mi_head.json").is_file() and Path("order-run/order_policy.json").is_file()


def test_sequence_flags_are_refused_where_they_do_not_apply(cli, seq_dna_model, sudoku_files, tmp_path):
    # Bugs caught: --alphabet/--spans silently ignored by another task's MI data; --block (a decoding
    # scheme) silently dropped by the trainer and the MI data's trajectories.
    model_dir, puzzles = sudoku_files
    code, _, err = cli(["mi", "data", "--task", "sudoku", "--model", model_dir, "--examples", puzzles, "--alphabet", "ACGT",
                        "--out", tmp_path / "d"])
    assert code == 2 and "--alphabet: only for your own sequences" in err and not (tmp_path / "d").exists()
    src = tmp_path / "s.fasta"
    src.write_text(">a\nACGTACGT\n")
    for argv in (["seq", "train-order", "--data", src, "--out", tmp_path / "o"],
                 ["mi", "data", "--task", "seq", "--examples", src, "--out", tmp_path / "d"]):
        code, _, err = cli([*argv, "--model", seq_dna_model, "--alphabet", "ACGT", "--generate", "4", "--block", "2"])
        assert code == 2 and "--block" in err, argv
