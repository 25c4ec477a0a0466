"""MappedMLM: a model with its own vocabulary behind a task's ids (what it feeds the model, what it returns)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
import torch

from unmask.adapters.mapped import MappedConfig, MappedMLM, VocabMap
from unmask.errors import UnmaskError

V, MASK, END = 3, 4, 3  # task: tokens 0..2 predicted, END input-only (3), MASK (4)
VOCAB = VocabMap(predict=(7, 5, 9), mask=2, bos=0, eos=1, pad=3, task_mask=MASK, task_end=END)


@dataclass
class Recorder:
    """A fake model: logits[b, s, v] = 100·s + v (so the returned columns and positions are checkable)."""

    module: torch.nn.Module = field(default_factory=lambda: torch.nn.Linear(2, 2))
    calls: list = field(default_factory=list)

    def __call__(self, ids, attention):
        self.calls.append((ids.clone(), attention.clone()))
        B, S = ids.shape
        logits = 100.0 * torch.arange(S)[None, :, None] + torch.arange(12)[None, None, :]  # (1, S, 12)
        hidden = ids[:, :, None].float().expand(B, S, 2)  # the model id, to see what was fed
        return logits.expand(B, S, 12), hidden


def mapped(vocab=VOCAB):
    rec = Recorder()
    return MappedMLM(rec, vocab, MappedConfig(seq_len=6, source="x", family="hf")), rec


def test_inputs_are_bos_mapped_tokens_eos_then_attention_masked_pads():
    m, rec = mapped()
    tokens = torch.tensor([[0, MASK, 2, END, END, END], [2, 1, 0, 1, MASK, END]])
    m(tokens)
    ids, attention = rec.calls[0]
    # width = longest sequence (5) + BOS + EOS
    assert ids.tolist() == [[0, 7, 2, 9, 1, 3, 3], [0, 9, 5, 7, 5, 2, 1]]
    assert attention.tolist() == [[True] * 5 + [False] * 2, [True] * 7]


def test_outputs_keep_the_sequence_positions_and_the_predicted_columns():
    m, _ = mapped()
    tokens = torch.tensor([[0, MASK, 2, END, END, END]])
    out = m(tokens)
    assert out.logits.shape == (1, 6, V) and out.hidden.shape == (1, 6, 2)
    # position k of the task sits at model position k + 1 (after BOS); columns are the model ids 7, 5, 9
    assert out.logits[0, :3].tolist() == [[100 * (k + 1) + c for c in (7, 5, 9)] for k in range(3)]
    assert (out.logits[0, 3:] == 0).all() and (out.hidden[0, 3:] == 0).all()  # past every sequence: flat, zero
    assert out.hidden[0, :3, 0].tolist() == [7, 2, 9]  # residue, model mask, residue


def test_without_bos_or_eos():
    m, rec = mapped(VocabMap((7, 5, 9), mask=2, bos=None, eos=None, pad=3, task_mask=MASK, task_end=END))
    out = m(torch.tensor([[1, MASK, END, END, END, END]]))
    ids, attention = rec.calls[0]
    assert ids.tolist() == [[5, 2]] and attention.tolist() == [[True, True]]
    assert out.logits[0, 0].tolist() == [7, 5, 9]  # position 0 is model position 0


def test_a_rows_output_does_not_depend_on_its_batch():
    torch.manual_seed(0)
    emb = torch.nn.Embedding(12, 8)
    attn = torch.nn.MultiheadAttention(8, 2, batch_first=True)

    @dataclass
    class Tiny:
        module: torch.nn.Module = emb

        def __call__(self, ids, attention):
            x = emb(ids)
            h, _ = attn(x, x, x, key_padding_mask=~attention)
            return h @ emb.weight.T, h

    m = MappedMLM(Tiny(), VOCAB, MappedConfig(6, "x", "hf"))
    short = torch.tensor([[0, MASK, END, END, END, END]])
    long = torch.tensor([[2, 1, 0, 1, MASK, 2]])
    alone = m(short).logits
    together = m(torch.cat([short, long])).logits[:1]
    assert torch.allclose(alone[:, :2], together[:, :2], atol=1e-5)


def test_vocabulary_map_refuses_collisions():
    with pytest.raises(UnmaskError, match="same model token"):
        VocabMap((7, 7, 9), mask=2, bos=0, eos=1, pad=3, task_mask=MASK, task_end=END)
    with pytest.raises(UnmaskError, match="mask token"):
        VocabMap((7, 2, 9), mask=2, bos=0, eos=1, pad=3, task_mask=MASK, task_end=END)


def test_out_of_range_ids_are_refused():
    m, _ = mapped()
    with pytest.raises(UnmaskError, match="token ids"):
        m(torch.tensor([[0, 9, END, END, END, END]]))


def test_positions_past_a_rows_end_are_zero_and_a_broken_layout_is_refused():
    m, _ = mapped()
    out = m(torch.tensor([[0, END, END, END, END, END], [2, 1, 0, 1, MASK, END]]))
    assert (out.logits[0, 1:] == 0).all() and (out.hidden[0, 1:] == 0).all()  # row 0 ends at 1, the batch at 5
    with pytest.raises(UnmaskError, match="continues after its end"):
        m(torch.tensor([[0, END, 2, END, END, END]]))
    long = MappedMLM(Recorder(), VOCAB, MappedConfig(seq_len=3, source="x", family="hf"))
    with pytest.raises(UnmaskError, match="holds 3"):
        long(torch.tensor([[0, 1, 2, 0, END, END]]))
    assert m(torch.zeros(0, 6, dtype=torch.long)).logits.shape == (0, 6, V)
