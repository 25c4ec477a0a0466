"""Maths task: generator arithmetic, tokenizer, answer extraction, files, budgets, the task layout."""

from __future__ import annotations

import dataclasses
import re
from itertools import islice

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from unmask.decode import decode, parse_policy, with_budget
from unmask.decode.semi_ar import SemiAR
from unmask.errors import UnmaskError
from unmask.eval import evaluate
from unmask.model import TransformerDenoiser
from unmask.tasks.maths.answer import extract_answer, normalise_number
from unmask.tasks.maths.arith import ArithConfig, Problem, generate, max_value
from unmask.tasks.maths.data import read_problems, write_problems
from unmask.tasks.maths.task import TOKENIZER, MathsTask, MathsTraining, default_model_config

EQUATION = re.compile(r"(\d+)([+*-])(\d+)=(\d+)\.")


@pytest.mark.parametrize("cfg", [ArithConfig(), ArithConfig(digits=3, operations=4),
                                 ArithConfig(digits=1, operations=1, mul=False)])
def test_worked_solutions_are_right(cfg):
    for p in generate(cfg, 200, seed=7):
        eqs = EQUATION.findall(p.solution)
        assert len(eqs) == cfg.operations
        prev = None
        for a, op, b, c in eqs:
            a, b, c = int(a), int(b), int(c)
            assert c == {"+": a + b, "-": a - b, "*": a * b}[op] and c >= 0
            assert prev is None or a == prev  # chained: each step starts from the last result
            prev = c
        assert extract_answer(p.solution) == p.answer == str(prev)
        assert str(int(EQUATION.findall(p.solution)[0][0])) in p.question


@pytest.mark.parametrize("cfg", [ArithConfig(), ArithConfig(digits=3, operations=3, max_factor=12),
                                 ArithConfig(digits=1, mul=False)])
def test_zero_pad_fixes_every_digit_place(cfg):
    padded, plain = generate(cfg, 300, seed=8), generate(dataclasses.replace(cfg, zero_pad=False), 300, seed=8)
    assert [p.answer for p in padded] == [p.answer for p in plain]  # the same problems, other layout
    assert len({len(p.solution) for p in padded}) == 1  # fixed layout
    width = len(str(max_value(cfg)))
    assert all(len(n) == width for p in padded for n in re.findall(r"\d+", p.solution))
    assert max(int(n) for p in plain for n in re.findall(r"\d+", p.solution)) <= max_value(cfg)


def test_generator_is_seeded_and_varied():
    a, b = generate(ArithConfig(), 50, seed=1), generate(ArithConfig(), 50, seed=1)
    assert a == b and generate(ArithConfig(), 10, seed=1) == a[:10]
    assert len({p.question for p in a}) == 50
    assert a != generate(ArithConfig(), 50, seed=2)
    with pytest.raises(UnmaskError):
        ArithConfig(digits=0)


def test_carries_occur():
    sols = " ".join(p.solution for p in generate(ArithConfig(), 300, seed=3))
    carries = [(int(a), int(b)) for a, op, b, _ in EQUATION.findall(sols) if op == "+" and (int(a) % 10 + int(b) % 10) >= 10]
    assert len(carries) > 30


@pytest.mark.parametrize("text,want", [
    ("#### 1,234", "1234"), ("so #### -5.50 apples", "-5.5"), ("#### +7", "7"), ("#### 0.0", "0"),
    ("####-0", "0"), ("a #### 3 then #### 4", "3"), ("#### .5", "0.5"), ("#### 007", "7"),
    ("no marker 5", None), ("#### ", None), ("#### five", None), ("#### 1,000,000", "1000000"),
    ("#### −12", "-12"), ("#### $18.", "18"),
])
def test_answer_extraction(text, want):
    assert extract_answer(text) == want


@settings(max_examples=200, deadline=None)
@given(st.integers(-10**12, 10**12))
def test_normalise_round_trips_integers(n):
    assert normalise_number(f"{n:,}") == str(n)
    assert extract_answer(f"blah\n#### {n}") == str(n)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=60))
def test_tokenizer_round_trip(text):
    ids = TOKENIZER.encode(text)
    assert TOKENIZER.decode(ids) == text
    assert all(0 <= i < TOKENIZER.vocab_size - 2 for i in ids)


def test_tokenizer_special_ids_and_errors():
    t = TOKENIZER
    assert len({t.pad_id, t.eos_id, t.mask_id}) == 3 and t.vocab_size == t.mask_id
    with pytest.raises(UnmaskError, match=r"'é' at position 3"):
        t.encode("caf\u00e9")
    row = t.encode_pair("ab", "1+1=2. #### 2", q_len=4, a_len=16)
    assert row[:2].tolist() == [t.pad_id] * 2 and t.decode(row[2:4]) == "ab"
    assert t.decode(row[4:]) == "1+1=2. #### 2" and row[-1] == t.eos_id
    assert (t.encode_pair("ab", None, 4, 8)[4:] == t.mask_id).all()
    with pytest.raises(UnmaskError, match="does not fit"):
        t.encode_pair("abcde", None, 4, 8)
    with pytest.raises(UnmaskError, match="does not fit"):
        t.encode_pair("ab", "x" * 8, 4, 8)  # no room left for EOS


def test_files_round_trip_and_errors(tmp_path):
    probs = generate(ArithConfig(), 5, seed=0)
    write_problems(tmp_path / "p.jsonl", probs)
    assert read_problems(tmp_path / "p.jsonl") == probs
    cases = {"a.jsonl": ("{not json", "not JSON"), "b.jsonl": ('{"question": "q"}', "needs string fields"),
             "c.jsonl": ('{"question": "q", "answer": "42"}', "no '#### <number>'"), "d.jsonl": ("\n", "no problems")}
    for name, (text, msg) in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(UnmaskError, match=msg):
            read_problems(tmp_path / name)
    (tmp_path / "latin1.jsonl").write_bytes('{"question": "caf\u00e9", "answer": "#### 1"}'.encode("latin-1"))
    with pytest.raises(UnmaskError, match="latin1.jsonl: not UTF-8 text"):
        read_problems(tmp_path / "latin1.jsonl")


def tiny_maths_model() -> TransformerDenoiser:
    cfg = default_model_config(prompt_len=144, answer_len=48)
    cfg.d_model, cfg.n_layers, cfg.d_ff, cfg.n_heads = 16, 1, 32, 2
    torch.manual_seed(0)
    return TransformerDenoiser(cfg).eval()


@pytest.mark.parametrize("name", ["random", "top_prob", "margin"])
@pytest.mark.parametrize("steps", [1, 4, 5, 10, 15])
def test_budget_policies_never_exceed_T(name, steps):
    model = tiny_maths_model()
    probs = generate(ArithConfig(), 6, seed=1)
    policy = with_budget(parse_policy(name), steps)
    m = evaluate(MathsTask.for_model(model.cfg), model, probs, policy)
    assert m["max_nfe"] <= steps and m["mean_nfe"] == steps  # 48 masked ≥ T: exactly T
    with pytest.raises(UnmaskError, match="has no step budget"):  # never silently ignored
        with_budget(parse_policy("eb:gamma=0.1"), steps)
    assert with_budget(parse_policy("eb:gamma=0.1"), None) == parse_policy("eb:gamma=0.1")


def test_task_refuses_a_validation_problem_that_does_not_fit_before_training():
    model = tiny_maths_model()
    long = Problem("x" * 145, "#### 1", "1")
    with pytest.raises(UnmaskError, match="validation problem 2: question of 145 characters"):
        MathsTraining(generate(ArithConfig(), 4, seed=0), model.cfg, val=[generate(ArithConfig(), 1, seed=0)[0], long])


def test_task_masks_only_the_answer_region():
    model = tiny_maths_model()
    probs = generate(ArithConfig(), 20, seed=4)
    task = MathsTraining(probs, model.cfg)
    x, maskable = task.sample(torch.Generator().manual_seed(0), 8)
    assert not maskable[:, :144].any() and maskable[:, 144:].all()
    text = TOKENIZER.decode(x[0, 144:])  # the clean answer, up to its EOS
    assert re.fullmatch(r"(\d+[+*-]\d+=\d+\. )+#### \d+", text) and extract_answer(text) is not None
    prompts = MathsTask.for_model(model.cfg).encode(probs)
    assert (prompts[:, 144:] == TOKENIZER.mask_id).all()
    out = decode(model, prompts[:2], parse_policy("sequential")).tokens
    assert torch.equal(out[:, :144], prompts[:2, :144])


def test_problems_that_do_not_fit_are_named():
    cfg = default_model_config(prompt_len=144, answer_len=48)
    probs = generate(ArithConfig(), 3, seed=5)
    long = dataclasses.replace(probs[1], question="x" * 145)
    with pytest.raises(UnmaskError, match=r"^problem 2: question of 145 characters does not fit the model's 144;"):
        MathsTask.for_model(cfg).encode([probs[0], long, probs[2]])
    too_long = [dataclasses.replace(probs[0], solution="1" * 48)]
    with pytest.raises(UnmaskError, match=r"^problem 1: answer of 48 characters"):
        MathsTask.for_model(cfg).encode(too_long, with_answers=True)
    # Bug caught: only the question checked when the answer is masked — a 2-step model scored on
    # 3-step problems (longer worked solutions) got 0 % without a word.
    with pytest.raises(UnmaskError, match=r"^problem 1: answer of 48 characters .*made for these problems"):
        MathsTask.for_model(cfg).encode(too_long)
    fits = MathsTask.for_model(cfg).encode(probs)
    assert (fits[:, 144:] == TOKENIZER.mask_id).all()  # the answer region is masked, whatever the solution


def test_semi_ar_goes_block_by_block():
    model = tiny_maths_model()
    prompts = MathsTask.for_model(model.cfg).encode(generate(ArithConfig(), 3, seed=2))
    res = decode(model, prompts, SemiAR(parse_policy("top_prob:steps=4"), block=16, start=144))
    assert (res.nfe == 12).all()  # 3 blocks × 4 steps
    steps = res.reveal_step[:, 144:].reshape(3, 3, 16)
    assert (steps.amax(-1)[:, :-1] < steps.amin(-1)[:, 1:]).all()  # block k finishes before k+1 starts
    with pytest.raises(UnmaskError, match="exceeds the block size"):
        SemiAR(parse_policy("top_prob:steps=20"), block=16)
    given = prompts.clone()
    given[1, 144 + 16 + 3] = 7  # a given token inside the second block would shorten its budget
    with pytest.raises(UnmaskError, match="block starts with given tokens"):
        decode(model, given, SemiAR(parse_policy("top_prob:steps=4"), block=16, start=144))
    free = decode(model, given, SemiAR(parse_policy("eb"), block=16, start=144))  # adaptive: fine
    assert free.tokens[1, 144 + 16 + 3] == 7


def test_gsm_symbolic_split_by_template():
    pytest.importorskip("reasoning_gym")
    from unmask.tasks.maths.data import gsm_entries, gsm_symbolic

    train, test = gsm_symbolic(12, seed=0, test=False), gsm_symbolic(4, seed=0, test=True)
    assert len(train) == 12 and len(test) == 4
    assert not {p.question for p in train} & {p.question for p in test}
    # the split is by template, not by position: no template of one split ever appears in the other
    seen = {split: {t for t, _ in islice(gsm_entries(0, split), 2500)} for split in (False, True)}
    assert seen[True] and seen[False] and not seen[True] & seen[False]
    assert all(t % 5 == 0 for t in seen[True])
    # 1500 train entries cross the first 1024-item dataset: the doubled one goes on where it ended
    import reasoning_gym

    ds = reasoning_gym.create_dataset("gsm_symbolic", size=4096, seed=0)
    direct = [ds[i]["question"] for i in range(4096) if ds.task_indices[i] % 5][:1500]
    assert [e["question"] for _, e in islice(gsm_entries(0, False), 1500)] == direct
    for p in train + test:
        assert p.question.isascii() and extract_answer(p.solution) == p.answer
        TOKENIZER.encode(p.question + p.solution)  # every character is in the vocabulary


@pytest.mark.parametrize("test_every", [0, 1, 21])
def test_gsm_split_needs_a_real_split(test_every):
    pytest.importorskip("reasoning_gym")
    from unmask.tasks.maths.data import gsm_entries

    with pytest.raises(UnmaskError, match="test_every"):
        next(gsm_entries(0, True, test_every))


def test_two_final_answers_are_ambiguous_never_read_as_the_first(tmp_path):
    # Bug caught: a target or an answer region "#### 3 #### 4" read as 3 (GSM8K's convention is one `####`):
    # a problems file with two is refused, and the task's model writing two is scored wrong, not right.
    assert extract_answer("#### 3 #### 4") == "3"  # free-running text (hf models): the first, as the harness reads it
    assert extract_answer("#### 3 #### 4", single=True) is None and extract_answer("#### 3", single=True) == "3"
    path = tmp_path / "two.jsonl"
    path.write_text('{"question": "1+2?", "answer": "#### 3"}\n{"question": "2+2?", "answer": "#### 3 #### 4"}\n')
    with pytest.raises(UnmaskError, match=r"two.jsonl:2: the answer has 2 '####' final answers"):
        read_problems(path)
    task = MathsTask(16, 16)
    problems = [Problem("1+2?", "#### 3", "3")]
    one, two = (task.encode([Problem("1+2?", text, "3")], with_answers=True) for text in ("#### 3", "#### 3 #### 4"))
    assert task.score(one, problems).tolist() == [True] and task.score(two, problems).tolist() == [False]
