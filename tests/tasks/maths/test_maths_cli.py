"""``unmask maths generate|train|eval`` end to end on tiny settings (and the old spellings, still accepted)."""

from __future__ import annotations

import json

import pytest

from unmask.cli import main
from unmask.model import TransformerDenoiser, load_model, save_model
from unmask.tasks.maths.arith import ArithConfig, generate
from unmask.tasks.maths.data import STANDARD_SETS, read_problems, standard_sets, write_problems
from unmask.tasks.maths.task import default_model_config

TINY = ["--d-model", "16", "--n-layers", "1", "--n-heads", "2", "--d-ff", "32"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A 2-step maths run through the CLI: (run directory, problems file)."""
    d = tmp_path_factory.mktemp("maths")
    write_problems(d / "p.jsonl", generate(ArithConfig(), 8, seed=5))
    argv = ["maths", "train", "--data", str(d / "p.jsonl"), "--val", str(d / "p.jsonl"), "--val-n", "2", "--out", str(d / "run"),
            "--steps", "2", "--batch-size", "4", "--warmup", "1", "--eval-every", "2", "--ckpt-every", "1", *TINY]
    assert main(argv) == 0
    return d / "run", d / "p.jsonl"


def test_train_writes_a_loadable_model_and_log(trained):
    run, _ = trained
    model = load_model(run / "model", task="maths")
    assert model.cfg.seq_len == 144 + 48 and model.cfg.rope
    log = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    assert log[-1]["step"] == 2 and 0 <= log[-1]["val_acc"] <= 1


def test_old_train_spelling_still_works(tmp_path):
    write_problems(tmp_path / "p.jsonl", generate(ArithConfig(), 4, seed=5))
    argv = ["train", "maths", "--data", str(tmp_path / "p.jsonl"), "--out", str(tmp_path / "run"),
            "--steps", "1", "--batch-size", "2", "--warmup", "1", *TINY]
    assert main(argv) == 0
    assert load_model(tmp_path / "run" / "model", task="maths").cfg.seq_len == 144 + 48


def test_eval_on_a_file_and_on_the_standard_split(trained, capsys):
    run, problems = trained
    assert main(["maths", "eval", "--problems", str(problems), "--model", str(run / "model"),
                 "--policy", "top_prob", "--budget", "4", "--temperature", "0.5", "--seed", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 8 and out["mean_nfe"] == 4 and out["max_nfe"] == 4 and 0 <= out["accuracy"] <= 1
    assert out["policy"] == "top_prob:steps=4" and out["temperature"] == 0.5 and out["seed"] == 3
    assert out["model"].endswith("model")
    # The old flag --steps is still accepted on eval as --budget.
    assert main(["maths", "eval", "--problems", str(problems), "--model", str(run / "model"),
                 "--policy", "top_prob", "--steps", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mean_nfe"] == 3 and out["max_nfe"] == 3
    assert main(["maths", "eval", "--model", str(run / "model"), "--n", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 3 and out["problems"] == "standard test split" and out["mean_nfe"] == 48  # sequential


def test_eval_refuses_the_standard_split_for_a_model_of_another_shape(tmp_path, capsys):
    save_model(TransformerDenoiser(default_model_config(prompt_len=160, answer_len=64)), tmp_path / "m")
    assert main(["maths", "eval", "--model", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert "160 + 64 positions" in err and "--problems" in err and err.count("\n") == 1


def test_standard_sets_are_disjoint_and_match_generate(tmp_path, capsys):
    assert main(["maths", "generate", "--standard", "--out", str(tmp_path)]) == 0
    sets = standard_sets(ArithConfig())
    for name, (n, seed) in STANDARD_SETS.items():
        assert read_problems(tmp_path / f"{name}.jsonl") == sets[name]
        kept = {p.question for p in sets[name]}
        assert sets[name] == [p for p in generate(ArithConfig(), n, seed) if p.question in kept]  # order kept
    questions = [{p.question for p in sets[name]} for name in STANDARD_SETS]
    assert not questions[0] & questions[2] and not questions[1] & questions[2] and not questions[0] & questions[1]
    assert "test:" in capsys.readouterr().err


def test_generate_excludes_questions_of_other_files(tmp_path, capsys):
    held_out = generate(ArithConfig(), 30, seed=4)[::3]  # 10 questions that the set below also draws
    write_problems(tmp_path / "test.jsonl", held_out)
    argv = ["maths", "generate", "--n", "30", "--seed", "4", "--out", str(tmp_path / "train.jsonl")]
    assert main(argv + ["--exclude", str(tmp_path / "test.jsonl")]) == 0
    kept = read_problems(tmp_path / "train.jsonl")
    assert len(kept) == 20 and not {p.question for p in kept} & {p.question for p in held_out}
    assert "10 in --exclude files dropped" in capsys.readouterr().err


@pytest.mark.parametrize("argv,message", [
    (["maths", "generate", "--n", "3"], "--out FILE is required"),
    (["maths", "generate", "--standard", "--exclude", "x.jsonl"], "--exclude applies to a single set"),
    (["maths", "generate", "--n", "3", "--out", "o.jsonl", "--exclude", "missing.jsonl"], "missing.jsonl"),
    (["maths", "eval", "--problems", "missing.jsonl"], "missing.jsonl"),
    (["maths", "eval", "--model", "nowhere"], "nowhere"),
    (["maths", "generate", "--kind", "gsm", "--standard"], "--standard: not used with --kind gsm"),
    (["maths", "generate", "--kind", "gsm", "--operations", "3", "--out", "o.jsonl"], "--operations: not used with --kind gsm"),
    (["maths", "generate", "--split", "train", "--out", "o.jsonl"], "--split: only for --kind gsm"),
    (["maths", "generate", "--standard", "--n", "5"], "--n/--seed: the --standard sets"),
    (["maths", "eval", "--policy", "eb", "--budget", "4"], "has no step budget"),
    (["maths", "eval", "--policy", "top_prob:steps=3", "--budget", "4"], "give one"),
    (["maths", "eval", "--model", "hf:nowhere", "--problems", "p.jsonl", "--policy", "threshold", "--budget", "4"],
     "has no step budget"),  # found before any model load
    (["maths", "hf-eval", "--model-dir", "nowhere", "--problems", "p.jsonl", "--policy", "threshold", "--steps", "4"],
     "has no step budget"),  # the old spelling, still accepted
])
def test_bad_input_is_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if not line.startswith("unmask: note:")]  # an old spelling adds a note
    assert message in err and len(errors) == 1 and errors[0].startswith("unmask: error:")


def test_train_from_init_keeps_the_init_layout_and_refuses_layout_flags(trained, tmp_path, capsys):
    run, problems = trained
    argv = ["maths", "train", "--data", str(problems), "--steps", "1", "--batch-size", "2", "--warmup", "0",
            "--init", str(run / "model")]
    assert main(argv + ["--out", str(tmp_path / "a"), "--n-layers", "2"]) == 0
    model = load_model(tmp_path / "a" / "model", task="maths")
    assert model.cfg.n_layers == 2 and model.cfg.prompt_len == load_model(run / "model").cfg.prompt_len
    capsys.readouterr()
    assert main(argv + ["--out", str(tmp_path / "b"), "--prompt-len", "100"]) == 2
    assert "keeps that model's layout" in capsys.readouterr().err
