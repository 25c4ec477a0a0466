"""The maths Hugging Face harness against a recorded run: ``maths eval --model hf:DIR`` must keep its output.

The harness is a thin use of the seq task (prompt rows laid out and decoded by
:func:`unmask.tasks.seq.buckets.fill_rows`). ``tests/data/gsm8k_recorded.json`` holds what the harness
wrote before it was rebuilt that way, on the tiny random model of ``hf_model_dir``: the texts and NFE of
four decodes (plain and chat-templated prompts, whole and in blocks, greedy and sampled, a budgeted
policy) and the command's JSON and ``--out`` lines. Catches any change to the prompt layout (the masks
after the prompt's special tokens, not before a suffix), the seeds (question k gets seed + k), the
blocks' start, or how the answer text is decoded.

The recording names the weights it was made with; if the fixture's random model itself changes (another
torch or transformers initialises it differently), the test skips saying so rather than failing.
Re-record with ``UNMASK_RECORD=1 python -m pytest tests/tasks/maths/test_gsm8k_recorded.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from unmask import parse_policy  # noqa: E402
from unmask.adapters.hf import HFDenoiser  # noqa: E402
from unmask.artifacts import model_digest  # noqa: E402
from unmask.decode import TokenRule  # noqa: E402
from unmask.tasks.maths.arith import ArithConfig, generate  # noqa: E402
from unmask.tasks.maths.data import write_problems  # noqa: E402
from unmask.tasks.maths.gsm8k import generate_answers  # noqa: E402

RECORDED = Path(__file__).parents[2] / "data" / "gsm8k_recorded.json"
TEMPLATE = ("{% for m in messages %}[CLS] question : {{ m['content'] }} [SEP]{% endfor %}"
            "{% if add_generation_prompt %} answer :{% endif %}")
QUESTIONS = ["2+2?", "Ann has 3 apples. How many?", "how many 7+8?", "3*3?", "question 12-5 =", "9*9*9?"]
CASES = [  # (policy, gen_length, block, temperature, chat)
    ("top_prob:steps=4", 16, None, 0.0, False),
    ("eb", 16, 8, 1.0, False),
    ("mi:gamma=1.5,lam=0", 12, 4, 1.0, True),
    ("margin:steps=6", 12, None, 0.7, True),
]
TIMING = ("seconds", "examples_per_s")


def _run(hf_model_dir, tmp_path, cli) -> dict:
    den, tok = HFDenoiser.from_pretrained(hf_model_dir)
    tok.chat_template = TEMPLATE
    decodes = []
    for spec, gen_length, block, temperature, chat in CASES:
        gen = generate_answers(den, tok, QUESTIONS, parse_policy(spec), gen_length, block, TokenRule(temperature),
                               batch_size=4, seed=3, chat=chat)
        decodes.append({"policy": spec, "texts": gen.texts, "nfe": gen.nfe.tolist()})
    write_problems(tmp_path / "p.jsonl", generate(ArithConfig(), 5, seed=0))
    code, out, err = cli(["maths", "eval", "--model", f"hf:{hf_model_dir}", "--problems", tmp_path / "p.jsonl",
                          "--policy", "margin", "--budget", "4", "--gen-length", "16", "--block", "8",
                          "--temperature", "1", "--seed", "7", "--json", "--out", tmp_path / "out.jsonl"])
    assert code == 0, err
    record = {k: v for k, v in json.loads(out).items() if k not in TIMING and k not in ("model", "problems")}
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    return {"model_sha256": model_digest(hf_model_dir), "decodes": decodes, "eval": record, "out": lines}


def test_harness_output_is_unchanged(hf_model_dir, tmp_path, cli):
    got = _run(hf_model_dir, tmp_path, cli)
    if os.environ.get("UNMASK_RECORD") == "1":
        RECORDED.write_text(json.dumps(got, indent=1) + "\n", encoding="utf-8")
    want = json.loads(RECORDED.read_text(encoding="utf-8"))
    if got["model_sha256"] != want["model_sha256"]:
        pytest.skip(f"the fixture's random model is not the recorded one ({got['model_sha256']} vs "
                    f"{want['model_sha256']}): re-record (see the module docstring)")
    assert got["decodes"] == want["decodes"]
    assert got["eval"] == want["eval"]
    assert got["out"] == want["out"]
