"""GSM8K with a Hugging Face masked LM (unmask.tasks.maths.gsm8k) on a tiny random model built in conftest."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers")

from unmask.adapters.hf import HFDenoiser  # noqa: E402
from unmask.cli import main  # noqa: E402
from unmask.decode import TokenRule, parse_policy  # noqa: E402
from unmask.errors import UnmaskError  # noqa: E402
from unmask.tasks.maths.arith import ArithConfig, generate  # noqa: E402
from unmask.tasks.maths.data import write_problems  # noqa: E402
from unmask.tasks.maths.gsm8k import answer_from_text, generate_answers  # noqa: E402


@pytest.mark.parametrize("block,temperature", [(None, 0.0), (8, 0.0), (8, 1.0)])
def test_answers_do_not_depend_on_the_rest_of_the_set(hf_model_dir, block, temperature):
    den, tok = HFDenoiser.from_pretrained(hf_model_dir)
    questions = ["2+2?", "Ann has 3 apples. How many?", "how many 7+8?", "3*3?"]
    policy = parse_policy("top_prob:steps=4")
    every = generate_answers(den, tok, questions, policy, 16, block, TokenRule(temperature), batch_size=3, chat=False)
    assert len(every.texts) == 4 and (every.nfe == (8 if block else 4)).all()
    for k, q in enumerate(questions):  # alone, with its own seed, in a batch of one
        alone = generate_answers(den, tok, [q], policy, 16, block, TokenRule(temperature), batch_size=1, seed=k, chat=False)
        assert alone.texts == [every.texts[k]] and alone.nfe.tolist() == [every.nfe[k]]
    with pytest.raises(UnmaskError, match="not a multiple"):
        generate_answers(den, tok, questions, policy, 16, 5)


def test_hf_eval_command(hf_model_dir, tmp_path, capsys):
    write_problems(tmp_path / "p.jsonl", generate(ArithConfig(), 3, seed=0))
    argv = ["maths", "eval", "--model", f"hf:{hf_model_dir}", "--problems", str(tmp_path / "p.jsonl"),
            "--policy", "top_prob", "--budget", "4", "--gen-length", "16", "--block", "8", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 3 and out["mean_nfe"] == 8 and 0 <= out["accuracy"] <= 1
    assert out["model"] == f"hf:{hf_model_dir}" and out["temperature"] == 0.0 and out["seed"] == 0
    assert main(argv[:-3] + ["--block", "5"]) == 2
    assert "not a multiple" in capsys.readouterr().err
    # The old spelling, `maths hf-eval --model-dir DIR --steps S`, still works and gives the same result.
    old = ["maths", "hf-eval", "--model-dir", str(hf_model_dir), "--problems", str(tmp_path / "p.jsonl"),
           "--policy", "top_prob", "--steps", "4", "--gen-length", "16", "--block", "8", "--json"]
    assert main(old) == 0
    again = json.loads(capsys.readouterr().out)
    timing = ("seconds", "examples_per_s")
    assert {k: v for k, v in again.items() if k not in timing} == {k: v for k, v in out.items() if k not in timing}


@pytest.mark.parametrize("text,want", [("so 5+5=10. #### 10", "10"), ("The answer is 1,200 apples", "1200"),
                                       ("costs $18.", "18"), ("nothing here", None),
                                       ("She has 5*3=15 apples", "15"), ("-4 degrees, then 12, 13,", "13")])
def test_answer_fallback(text, want):
    assert answer_from_text(text) == want
