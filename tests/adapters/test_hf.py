"""The Hugging Face adapter end to end on a tiny randomly initialised model built here (no downloads)."""

from __future__ import annotations

import json

import pytest
import torch

transformers = pytest.importorskip("transformers")

from unmask.adapters import load_denoiser  # noqa: E402
from unmask.adapters.hf import HFDenoiser  # noqa: E402
from unmask.cli import main  # noqa: E402
from unmask.decode import TokenRule, decode, parse_policy  # noqa: E402
from unmask.decode.semi_ar import SemiAR  # noqa: E402
from unmask.errors import UnmaskError  # noqa: E402
from unmask.tasks.maths.arith import ArithConfig, generate  # noqa: E402
from unmask.tasks.maths.data import write_problems  # noqa: E402
from unmask.tasks.maths.gsm8k import answer_from_text, generate_answers, group_prompts, gsm8k_prompt_ids  # noqa: E402


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny-mdm")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list("0123456789+-*=.#:?") + ["question", "answer", "has", "how", "many"]
    from tokenizers import Tokenizer, models, pre_tokenizers

    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace(), pre_tokenizers.Digits(individual_digits=True)])
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=core, pad_token="[PAD]", unk_token="[UNK]",
                                               mask_token="[MASK]", eos_token="[SEP]")
    tok.save_pretrained(d)
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=len(words), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                  intermediate_size=32, max_position_embeddings=512)
    transformers.BertForMaskedLM(cfg).save_pretrained(d)
    return d


def test_adapter_meets_the_interface(model_dir):
    den, tok = HFDenoiser.from_pretrained(model_dir)
    assert den.mask_id == tok.mask_token_id and den.vocab_size == len(tok)
    assert den.device == torch.device("cpu")  # a torch.device, where the decode loop keeps its tensors
    ids = gsm8k_prompt_ids(["Ann has 3 apples. How many?", "2+2?", "Bob has 4 apples. How many?"], tok, chat=False)
    groups = group_prompts(ids, den.mask_id, gen_length=16)
    assert sorted(k for g in groups for k in g.index.tolist()) == [0, 1, 2]  # every prompt, once
    for g in groups:  # one length per group: nothing is padded
        assert all(len(ids[k]) == g.prompt_len for k in g.index.tolist())
        assert g.tokens.shape == (len(g.index), g.prompt_len + 16)
        assert (g.tokens[:, g.prompt_len :] == den.mask_id).all()
    g = max(groups, key=lambda g: len(g.index))
    out = den(g.tokens)
    assert out.logits.shape == (*g.tokens.shape, len(tok)) and out.hidden.shape[-1] == 16
    res = decode(den, g.tokens, SemiAR(parse_policy("top_prob:steps=2"), block=8, start=g.prompt_len))
    assert (res.nfe == 4).all() and not (res.tokens == den.mask_id).any()
    assert torch.equal(res.tokens[:, : g.prompt_len], g.tokens[:, : g.prompt_len])


@pytest.mark.parametrize("block,temperature", [(None, 0.0), (8, 0.0), (8, 1.0)])
def test_answers_do_not_depend_on_the_rest_of_the_set(model_dir, block, temperature):
    den, tok = HFDenoiser.from_pretrained(model_dir)
    questions = ["2+2?", "Ann has 3 apples. How many?", "how many 7+8?", "3*3?"]
    policy = parse_policy("top_prob:steps=4")
    every = generate_answers(den, tok, questions, policy, 16, block, TokenRule(temperature), batch_size=3, chat=False)
    assert len(every.texts) == 4 and (every.nfe == (8 if block else 4)).all()
    for k, q in enumerate(questions):  # alone, with its own seed, in a batch of one
        alone = generate_answers(den, tok, [q], policy, 16, block, TokenRule(temperature), batch_size=1, seed=k, chat=False)
        assert alone.texts == [every.texts[k]] and alone.nfe.tolist() == [every.nfe[k]]
    with pytest.raises(UnmaskError, match="not a multiple"):
        generate_answers(den, tok, questions, policy, 16, 5)


def test_unloadable_directory_is_one_error(tmp_path):
    with pytest.raises(UnmaskError, match="cannot load"):
        HFDenoiser.from_pretrained(tmp_path)


def test_shifted_logits(model_dir):
    plain, _ = HFDenoiser.from_pretrained(model_dir)
    shifted, _ = HFDenoiser.from_pretrained(model_dir, shift_logits=True)
    x = torch.randint(5, 20, (1, 10))
    assert torch.equal(shifted(x).logits[:, 1:], plain(x).logits[:, :-1])


def test_refuses_non_local_paths():
    with pytest.raises(UnmaskError, match="never downloads"):
        HFDenoiser.from_pretrained("GSAI-ML/LLaDA-8B-Instruct")


def test_load_denoiser_reads_an_hf_directory(model_dir):
    loaded = load_denoiser(f"hf:{model_dir}")
    assert isinstance(loaded.denoiser, HFDenoiser) and loaded.is_hf and loaded.directory == model_dir
    x = torch.randint(5, 20, (1, 10))
    plain, _ = HFDenoiser.from_pretrained(model_dir)
    assert torch.equal(loaded.denoiser(x).logits, plain(x).logits)


def test_hf_eval_command(model_dir, tmp_path, capsys):
    write_problems(tmp_path / "p.jsonl", generate(ArithConfig(), 3, seed=0))
    argv = ["maths", "eval", "--model", f"hf:{model_dir}", "--problems", str(tmp_path / "p.jsonl"),
            "--policy", "top_prob", "--budget", "4", "--gen-length", "16", "--block", "8", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 3 and out["mean_nfe"] == 8 and 0 <= out["accuracy"] <= 1
    assert out["model"] == f"hf:{model_dir}" and out["temperature"] == 0.0 and out["seed"] == 0
    assert main(argv[:-3] + ["--block", "5"]) == 2
    assert "not a multiple" in capsys.readouterr().err
    # The old spelling, `maths hf-eval --model-dir DIR --steps S`, still works and gives the same result.
    old = ["maths", "hf-eval", "--model-dir", str(model_dir), "--problems", str(tmp_path / "p.jsonl"),
           "--policy", "top_prob", "--steps", "4", "--gen-length", "16", "--block", "8", "--json"]
    assert main(old) == 0
    again = json.loads(capsys.readouterr().out)
    assert {k: v for k, v in again.items() if k != "seconds"} == {k: v for k, v in out.items() if k != "seconds"}


@pytest.mark.parametrize("text,want", [("so 5+5=10. #### 10", "10"), ("The answer is 1,200 apples", "1200"),
                                       ("costs $18.", "18"), ("nothing here", None),
                                       ("She has 5*3=15 apples", "15"), ("-4 degrees, then 12, 13,", "13")])
def test_answer_fallback(text, want):
    assert answer_from_text(text) == want
