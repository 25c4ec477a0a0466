"""fairseq RoBERTa → Hugging Face RobertaForMaskedLM, checked against fairseq's equations written out here
on a tiny random fairseq-shaped checkpoint (no fairseq needed), and on the real Sapiens models where installed."""

from __future__ import annotations

import argparse
import math

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("transformers")

from unmask.adapters.fairseq import (  # noqa: E402
    convert_fairseq_roberta,
    fairseq_symbols,
    fairseq_to_roberta,
    load_fairseq_checkpoint,
    roberta_model,
)
from unmask.errors import UnmaskError  # noqa: E402

D, FF, HEADS, LAYERS, VOCAB, POSITIONS, PAD = 16, 24, 2, 2, 25, 20, 1
P = "decoder.sentence_encoder."


def tiny_state(seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)

    def r(*shape):
        return torch.randn(*shape, generator=g) * 0.3

    s = {P + "embed_tokens.weight": r(VOCAB, D), P + "embed_positions.weight": r(POSITIONS, D),
         P + "emb_layer_norm.weight": 1 + r(D), P + "emb_layer_norm.bias": r(D)}
    for i in range(LAYERS):
        q = f"{P}layers.{i}."
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            s[q + f"self_attn.{name}.weight"], s[q + f"self_attn.{name}.bias"] = r(D, D), r(D)
        s[q + "fc1.weight"], s[q + "fc1.bias"], s[q + "fc2.weight"], s[q + "fc2.bias"] = r(FF, D), r(FF), r(D, FF), r(D)
        for ln in ("self_attn_layer_norm", "final_layer_norm"):
            s[q + f"{ln}.weight"], s[q + f"{ln}.bias"] = 1 + r(D), r(D)
    s |= {"decoder.lm_head.dense.weight": r(D, D), "decoder.lm_head.dense.bias": r(D),
          "decoder.lm_head.layer_norm.weight": 1 + r(D), "decoder.lm_head.layer_norm.bias": r(D),
          "decoder.lm_head.weight": r(VOCAB, D), "decoder.lm_head.bias": r(VOCAB)}  # untied: a swap would show
    return s


ARGS = argparse.Namespace(encoder_attention_heads=HEADS, activation_fn="gelu", encoder_layers=LAYERS)


def fairseq_forward(s: dict[str, torch.Tensor], tokens: torch.Tensor) -> torch.Tensor:
    """fairseq 0.10 RobertaModel's masked-LM logits, from its equations (post-norm encoder)."""
    pad = tokens.eq(PAD)
    positions = torch.cumsum(~pad, dim=1) * ~pad + PAD  # make_positions: first real token at PAD + 1
    x = s[P + "embed_tokens.weight"][tokens] + s[P + "embed_positions.weight"][positions]
    x = F.layer_norm(x, (D,), s[P + "emb_layer_norm.weight"], s[P + "emb_layer_norm.bias"], eps=1e-5)
    B, T, _ = x.shape
    hd = D // HEADS
    for i in range(LAYERS):
        q = f"{P}layers.{i}."

        def lin(name, h, q=q):
            return h @ s[q + name + ".weight"].T + s[q + name + ".bias"]

        Q = lin("self_attn.q_proj", x) * hd ** -0.5
        K, Vv = lin("self_attn.k_proj", x), lin("self_attn.v_proj", x)
        split = lambda t: t.view(B, T, HEADS, hd).transpose(1, 2)  # noqa: E731
        w = split(Q) @ split(K).transpose(-1, -2)  # (B, H, T, T)
        w = w.masked_fill(pad[:, None, None, :], -math.inf).softmax(-1)
        a = (w @ split(Vv)).transpose(1, 2).reshape(B, T, D)
        x = F.layer_norm(x + lin("self_attn.out_proj", a), (D,), s[q + "self_attn_layer_norm.weight"],
                         s[q + "self_attn_layer_norm.bias"], eps=1e-5)
        h = lin("fc2", F.gelu(lin("fc1", x)))
        x = F.layer_norm(x + h, (D,), s[q + "final_layer_norm.weight"], s[q + "final_layer_norm.bias"], eps=1e-5)
    h = F.gelu(x @ s["decoder.lm_head.dense.weight"].T + s["decoder.lm_head.dense.bias"])
    h = F.layer_norm(h, (D,), s["decoder.lm_head.layer_norm.weight"], s["decoder.lm_head.layer_norm.bias"], eps=1e-5)
    return h @ s["decoder.lm_head.weight"].T + s["decoder.lm_head.bias"]


def test_converted_model_computes_what_fairseq_computes():
    state = tiny_state()
    model = roberta_model(*fairseq_to_roberta(state, ARGS))
    tokens = torch.tensor([[0, 5, 9, 24, 7, 2, PAD, PAD], [0, 4, 4, 23, 11, 12, 13, 2]])
    with torch.no_grad():
        ours = model(input_ids=tokens, attention_mask=tokens.ne(PAD).long()).logits
    ref = fairseq_forward(state, tokens)
    real = tokens.ne(PAD)
    assert torch.allclose(ours[real], ref[real], atol=1e-4)


def test_a_swapped_projection_would_show():
    """The check above is sharp: swapping q and k in the source changes the logits."""
    state = tiny_state()
    swapped = dict(state)
    swapped[P + "layers.0.self_attn.q_proj.weight"] = state[P + "layers.0.self_attn.k_proj.weight"]
    swapped[P + "layers.0.self_attn.k_proj.weight"] = state[P + "layers.0.self_attn.q_proj.weight"]
    model = roberta_model(*fairseq_to_roberta(swapped, ARGS))
    tokens = torch.tensor([[0, 5, 9, 24, 7, 2]])
    with torch.no_grad():
        ours = model(input_ids=tokens).logits
    assert not torch.allclose(ours, fairseq_forward(state, tokens), atol=1e-3)


def test_checkpoint_file_and_dictionary(tmp_path):
    path = tmp_path / "checkpoint.pt"
    torch.save({"args": ARGS, "model": tiny_state(), "extra_state": {}}, path)
    state, args = load_fairseq_checkpoint(path)
    assert args.encoder_attention_heads == HEADS and P + "embed_tokens.weight" in state
    (tmp_path / "dict.txt").write_text("".join(f"{c} 1\n" for c in "ACDEFGHIKLMNPQRSTVWY"))
    symbols = fairseq_symbols(tmp_path / "dict.txt")
    assert symbols[:5] == ["<s>", "<pad>", "</s>", "<unk>", "A"] and symbols[-1] == "<mask>" and len(symbols) == 25
    model, symbols2 = convert_fairseq_roberta(path, tmp_path / "dict.txt")
    assert symbols2 == symbols and model.config.vocab_size == 25


def test_bad_checkpoints_are_one_line(tmp_path):
    with pytest.raises(UnmaskError, match="no such file"):
        load_fairseq_checkpoint(tmp_path / "missing.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a pickle")
    with pytest.raises(UnmaskError, match="not a fairseq checkpoint"):
        load_fairseq_checkpoint(tmp_path / "junk.pt")
    torch.save({"model": {}}, tmp_path / "noargs.pt")
    with pytest.raises(UnmaskError, match="not a fairseq checkpoint"):
        load_fairseq_checkpoint(tmp_path / "noargs.pt")
    state = tiny_state()
    del state[P + "layers.1.fc2.bias"]
    with pytest.raises(UnmaskError, match="fc2.bias"):
        fairseq_to_roberta(state, ARGS)
    with pytest.raises(UnmaskError, match="does not divide"):
        fairseq_to_roberta(tiny_state(), argparse.Namespace(encoder_attention_heads=3, activation_fn="gelu"))
    with pytest.raises(UnmaskError, match="activation_fn"):
        fairseq_to_roberta(tiny_state(), argparse.Namespace(encoder_attention_heads=2, activation_fn="relu"))
    with pytest.raises(UnmaskError, match="pre-norm"):
        fairseq_to_roberta(tiny_state(), argparse.Namespace(encoder_attention_heads=2, encoder_normalize_before=True))
    extra = tiny_state() | {P + "layer_norm.weight": torch.ones(D)}  # another architecture's final norm
    with pytest.raises(UnmaskError, match="does not know"):
        fairseq_to_roberta(extra, ARGS)
