"""The seq task as a library: layouts (marks, spans, generation), decoding length by length
(batch-invariant, never writing outside the positions to fill), scoring and pseudo-log-likelihood."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from unmask.adapters import Loaded, load_denoiser
from unmask.decode import TokenRule
from unmask.errors import UnmaskError
from unmask.oracle import SupportDenoiser
from unmask.policies import build_policy
from unmask.tasks import get_task, task_denoiser
from unmask.tasks.seq.buckets import fill_rows
from unmask.tasks.seq.data import Example
from unmask.tasks.seq.pll import pseudo_log_likelihood, transcode
from unmask.tasks.seq.task import SeqConfig, SeqTask, bind

DNA = "ACGT"


def oracle_loaded(seqs, weights=None) -> Loaded:
    """An exact denoiser over DNA strings ``seqs`` (ids = places in ACGT), uniform unless ``weights``."""
    ids = torch.tensor([[DNA.index(c) for c in s] for s in seqs])
    w = torch.full((len(seqs),), 1 / len(seqs), dtype=torch.float64) if weights is None else torch.tensor(weights).double()
    return Loaded(SupportDenoiser(ids, w / w.sum(), len(DNA)), Path("."), None)


def decode_examples(task, model, examples, spec="top_prob:steps=2", temperature=0.0, batch_size=8, seed=0, block=0):
    rows = task.rows(examples)
    return rows, fill_rows(model, rows, build_policy(spec, model), TokenRule(temperature), batch_size, seed, block)


def test_the_tokenizer_puts_its_special_tokens_around_each_sequence(seq_bert):
    task, model = bind(load_denoiser(f"hf:{seq_bert}"))
    tok = load_denoiser(f"hf:{seq_bert}").tokenizer
    row = task.rows([Example("the capital is [MASK]", "x")])[0]
    assert row.tokens.tolist() == tok("the capital is [MASK]")["input_ids"]  # the tokenizer's own convention
    assert row.tokens[0] == tok.cls_token_id and row.tokens[-1] == tok.sep_token_id
    assert row.fill.nonzero().squeeze(1).tolist() == [4]
    logits = model(row.tokens[None]).logits  # inside a sequence no special token may be written
    assert torch.isinf(logits[0, :, tok.all_special_ids]).all() and torch.isfinite(logits[0, :, 5:]).all()


def test_generate_appends_masks_before_the_closing_special_token(seq_bert):
    task, _ = bind(load_denoiser(f"hf:{seq_bert}"), SeqConfig(generate=4, block=2))
    row = task.rows([Example("a b", "x")])[0]
    assert row.fill.tolist() == [False, False, False, True, True, True, True, False]
    assert row.start == 3


@pytest.mark.parametrize("config, examples", [
    (SeqConfig(), [Example("a [MASK] c", "1"), Example("[MASK] [MASK] b c d", "2"), Example("e [MASK]", "3"),
                   Example("a [MASK] d", "4")]),
    (SeqConfig(mask_char="?"), [Example("a ? c ?", "1"), Example("? b", "2")]),
    (SeqConfig(spans="1:3"), [Example("a b c d", "1"), Example("a b c", "2"), Example("j i h g f", "3")]),
    (SeqConfig(generate=4, block=2), [Example("a", "1"), Example("the capital is", "2"), Example("b c", "3")]),
])
@pytest.mark.parametrize("spec, temperature", [("top_prob:steps=2", 1.0), ("random:steps=2", 1.0), ("sequential", 0.0)])
def test_fills_are_batch_invariant_and_stay_inside_the_positions_to_fill(seq_bert, config, examples, spec, temperature):
    task, model = bind(load_denoiser(f"hf:{seq_bert}"), config)
    runs = [decode_examples(task, model, examples, spec, temperature, batch_size=b, block=config.block) for b in (1, 2, 8)]
    rows, one = runs[0]
    for _, other in runs[1:]:
        assert all(torch.equal(a, b) for a, b in zip(one.tokens, other.tokens)) and torch.equal(one.nfe, other.nfe)
    for row, t in zip(rows, one.tokens):
        assert torch.equal(t[~row.fill], row.tokens[~row.fill])  # nothing outside the positions to fill changes
        assert (t[row.fill] != model.mask_id).all()  # and every one of them is filled
    if config.block:  # semi-autoregressive: 2 blocks of 2 positions, 2 passes each
        assert one.nfe.tolist() == [4] * len(examples)


def test_a_sequence_decodes_the_same_whatever_else_the_file_holds(seq_bert):
    task, model = bind(load_denoiser(f"hf:{seq_bert}"))
    many = [Example("a [MASK] c", "1"), Example("[MASK] [MASK] b c d e f", "2"), Example("e [MASK] [MASK] [MASK]", "3")]
    _, together = decode_examples(task, model, many, "sequential")
    for k, ex in enumerate(many):
        _, alone = decode_examples(task, model, [ex], "sequential")
        assert torch.equal(alone.tokens[0], together.tokens[k])  # no padding: lengths never share a batch


def test_alphabet_over_an_unmask_model_needs_its_length(seq_dna_model):
    loaded = load_denoiser(seq_dna_model)
    task, model = bind(loaded, SeqConfig(alphabet=DNA))
    row = task.rows([Example("AC__GT_A", "x")])[0]
    assert row.tokens.tolist() == [0, 1, 4, 4, 2, 3, 4, 0]
    with pytest.raises(UnmaskError, match="exactly 8"):
        task.rows([Example("AC_", "short")])
    with pytest.raises(UnmaskError, match="'N' is neither in the alphabet"):
        task.rows([Example("ACN_GTAA", "n")])
    with pytest.raises(UnmaskError, match="no tokenizer: give --alphabet"):
        bind(loaded)


@pytest.mark.parametrize("config, example, message", [
    (SeqConfig(alphabet=DNA), Example("ACGTACGT", "plain"), "no position to fill: no '_' in it"),
    (SeqConfig(alphabet=DNA, spans="6:9"), Example("ACGTACGT", "long"), r"span 6:9 is out of range"),
    (SeqConfig(alphabet=DNA, spans="1:2"), Example("AC_TACGT", "both"), "marks positions with '_' and has spans"),
    (SeqConfig(alphabet=DNA, generate=4), Example("A_GT", "both"), "and --generate"),
    (SeqConfig(alphabet=DNA, generate=4), Example("ACGT", "spans", spans=((0, 1),)), "spans to fill and --generate"),
])
def test_bad_layouts_are_one_line(config, example, message):
    task, _ = bind(oracle_loaded(["ACGTACGT"]), config)
    with pytest.raises(UnmaskError, match=message) as e:
        task.rows([example])
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("fields, message", [({"block": 2}, "needs --generate"), ({"generate": 5, "block": 2}, "a multiple"),
                                            ({"spans": "1:2", "generate": 2}, "give one"), ({"format": "csv"}, "--format"),
                                            ({"spans": "x"}, "--spans"), ({"generate": -1}, ">= 0")])
def test_configs_check_themselves(fields, message):
    with pytest.raises(UnmaskError, match=message):
        SeqConfig(**fields)


def test_an_oracle_fills_its_one_sequence_and_scores_a_planted_answer():
    task, model = bind(oracle_loaded(["ACGTTGCA"]), SeqConfig(alphabet=DNA))
    examples = [Example("AC__TGCA", "right", target="GT"), Example("ACGT____", "wrong", target="TGCC"),
                Example("ACGT____", "regex", target="xx TG yy")]
    rows, filled = decode_examples(task, model, examples, "sequential")
    tokens = torch.stack(filled.tokens)
    assert task.score(tokens, examples).tolist() == [True, False, False]
    # RE's first group: "TGCA" → "TG" equals the planted "TG" (and "TGCC" → "TG" too), the third target matches as text
    assert task.score(tokens, examples, regex="(TG)").tolist() == [False, True, True]
    assert task.score(tokens, examples, regex="^(..)").tolist() == [True, True, False]  # "xx TG yy" → "xx"
    assert torch.equal(task.targets(examples[:1]), torch.tensor([[0, 1, 2, 3, 3, 2, 1, 0]]))
    with pytest.raises(UnmaskError, match="target is 2 tokens and the input marks 4"):
        task.targets([Example("ACGT____", "short", target="TG")])
    with pytest.raises(UnmaskError, match="no target"):
        task.score(tokens[:1], [Example("AC__TGCA", "none")])


def test_encode_and_targets_for_the_mi_and_order_tools():
    task, _ = bind(oracle_loaded(["ACGTTGCA"]), SeqConfig(alphabet=DNA, spans="2:4"))
    examples = [Example("ACGTTGCA", "a"), Example("TTTTAAAA", "b")]
    assert task.encode(examples).tolist() == [[0, 1, 4, 4, 3, 2, 1, 0], [3, 3, 4, 4, 0, 0, 0, 0]]
    assert task.targets(examples).tolist() == [[0, 1, 2, 3, 3, 2, 1, 0], [3, 3, 3, 3, 0, 0, 0, 0]]
    with pytest.raises(UnmaskError, match="at one length"):
        task.encode([Example("ACGT", "four"), Example("ACGTTGCA", "eight")])
    assert get_task("seq").default_model is None and isinstance(get_task("seq"), SeqTask)


def test_generated_targets_end_with_the_tokenizers_end_token(seq_bert):
    loaded = load_denoiser(f"hf:{seq_bert}")
    task, model = bind(loaded, SeqConfig(generate=3))
    tok = loaded.tokenizer
    assert task.targets([Example("a b", "x", target="c")]).tolist() == \
        [tok("a b c")["input_ids"][:-1] + [tok.pad_token_id] * 2 + [tok.sep_token_id]]
    assert get_task("seq", task_denoiser("seq", loaded).cfg).codec.prefix == (tok.cls_token_id,)  # as mi/order build it


def test_pseudo_log_likelihood_equals_the_joints(make_joint):
    joint = make_joint(seq_len=4, vocab=4, seed=3, alpha=0.5)  # an exact oracle over ACGT strings of length 4
    loaded = Loaded(joint, Path("."), None)
    task, model = bind(loaded, SeqConfig(alphabet=DNA))
    examples = [Example("A__T", "a"), Example("_C_G", "b"), Example("GGG_", "c")]
    rows, filled = decode_examples(task, model, examples, "sequential", temperature=1.0)
    got = pseudo_log_likelihood(model.base, filled.tokens, [r.fill for r in rows], batch_size=2)
    for k, (row, x) in enumerate(zip(rows, filled.tokens)):
        terms = []
        for i in row.fill.nonzero().squeeze(1).tolist():
            others = [joint.prob(torch.cat([x[:i], torch.tensor([v]), x[i + 1 :]])) for v in range(4)]
            terms.append(math.log(joint.prob(x) / sum(others)))
        assert got[k].item() == pytest.approx(sum(terms) / len(terms), abs=1e-9)


def test_a_judge_reads_the_writers_characters_with_its_own_ids(seq_bert):
    writer, _ = bind(oracle_loaded(["ACGT"]), SeqConfig(alphabet="abcd"))  # the oracle's ids 0..3 written as a..d
    judge, _ = bind(load_denoiser(f"hf:{seq_bert}"), SeqConfig(alphabet="abcd"))  # its tokenizer's ids, [CLS] … [SEP]
    rows = writer.rows([Example("a_c_", "x")])
    tokens, fills = transcode(rows, [torch.tensor([0, 1, 2, 3])], writer.codec, judge.codec)
    tok = load_denoiser(f"hf:{seq_bert}").tokenizer
    assert tokens[0].tolist() == tok("a b c d")["input_ids"]
    assert fills[0].tolist() == [False, False, True, False, True, False]
