"""A fairseq RoBERTa masked LM as a Hugging Face ``RobertaForMaskedLM``, without fairseq.

fairseq (0.10-era ``RobertaModel``, e.g. the Sapiens antibody models of Prihoda et al., 2022) stores
``decoder.sentence_encoder.*`` and ``decoder.lm_head.*`` in a pickled checkpoint beside an
``argparse.Namespace`` of its settings. Its encoder is the same computation as Hugging Face's
RoBERTa: learned positions offset by the padding index, a LayerNorm on the embeddings, post-norm
blocks of biased q/k/v/out projections and a GELU MLP, then dense → GELU → LayerNorm → the tied
output projection. So conversion is a renaming of tensors plus a config; :func:`fairseq_to_roberta`
does it, and a test checks it against those equations written out on a tiny random checkpoint.

fairseq's dictionary puts ``<s> <pad> </s> <unk>`` first, then the ``dict.txt`` symbols in file order,
then ``<mask>`` (added by the masked-LM task): :func:`fairseq_symbols`.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import torch

from unmask.errors import UnmaskError
from unmask.io import read_text

SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")  # fairseq Dictionary's first four symbols (bos, pad, eos, unk)
MASK = "<mask>"  # appended last by fairseq's masked-LM task
PREFIX = "decoder.sentence_encoder."  # where a 0.10-era RobertaModel keeps its encoder


def load_fairseq_checkpoint(path: str | os.PathLike) -> tuple[dict[str, torch.Tensor], argparse.Namespace]:
    """The model tensors and the settings of a fairseq checkpoint (tensors and a Namespace only: no code runs)."""
    try:
        with torch.serialization.safe_globals([argparse.Namespace]):
            ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise UnmaskError(f"{path}: no such file") from None
    except Exception as e:  # an unpickling error names the first disallowed object
        raise UnmaskError(f"{path}: not a fairseq checkpoint ({str(e).strip().splitlines()[0][:120]})") from None
    if not isinstance(ckpt, dict) or "model" not in ckpt or not isinstance(ckpt.get("args"), argparse.Namespace):
        raise UnmaskError(f"{path}: not a fairseq checkpoint (no 'model' tensors and 'args' settings)")
    return ckpt["model"], ckpt["args"]


def fairseq_symbols(dict_txt: str | os.PathLike) -> list[str]:
    """The token of each id: fairseq's specials, the ``dict.txt`` symbols, then ``<mask>``."""
    lines = [ln.split()[0] for ln in read_text(dict_txt).splitlines() if ln.strip()]
    return [*SPECIALS, *lines, MASK]


def _layers(state: dict[str, torch.Tensor]) -> int:
    idx = {int(k[len(PREFIX) + 7 :].split(".")[0]) for k in state if k.startswith(PREFIX + "layers.")}
    if not idx or idx != set(range(len(idx))):
        raise UnmaskError("not a fairseq RoBERTa state dict (no decoder.sentence_encoder.layers.N)")
    return len(idx)


def fairseq_to_roberta(state: dict[str, torch.Tensor], args: argparse.Namespace) -> tuple[dict, dict[str, torch.Tensor]]:
    """``(RobertaConfig keyword arguments, RobertaForMaskedLM state dict)`` of a fairseq RoBERTa."""
    n_layers = _layers(state)
    try:
        vocab, d = state[PREFIX + "embed_tokens.weight"].shape
        positions = state[PREFIX + "embed_positions.weight"].shape[0]
        d_ff = state[PREFIX + "layers.0.fc1.weight"].shape[0]
    except KeyError as e:
        raise UnmaskError(f"not a fairseq RoBERTa state dict (no {e.args[0]})") from None
    heads = int(getattr(args, "encoder_attention_heads", 0))
    if heads <= 0 or d % heads:
        raise UnmaskError(f"fairseq settings: encoder_attention_heads={heads} does not divide the width {d}")
    act = getattr(args, "activation_fn", "gelu")
    if act != "gelu":
        raise UnmaskError(f"fairseq settings: activation_fn={act!r}; only gelu RoBERTa models convert")
    if getattr(args, "encoder_normalize_before", False):
        raise UnmaskError("fairseq settings: encoder_normalize_before=True (pre-norm); only post-norm RoBERTa models convert")
    config = dict(vocab_size=int(vocab), hidden_size=int(d), num_hidden_layers=n_layers, num_attention_heads=heads,
                  intermediate_size=int(d_ff), hidden_act="gelu", max_position_embeddings=int(positions),
                  type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=SPECIALS.index("<pad>"),
                  bos_token_id=SPECIALS.index("<s>"), eos_token_id=SPECIALS.index("</s>"),
                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, tie_word_embeddings=False)
    names = {"embed_tokens.weight": "roberta.embeddings.word_embeddings.weight",
             "embed_positions.weight": "roberta.embeddings.position_embeddings.weight",
             "emb_layer_norm.weight": "roberta.embeddings.LayerNorm.weight",
             "emb_layer_norm.bias": "roberta.embeddings.LayerNorm.bias"}
    block = {"self_attn.q_proj": "attention.self.query", "self_attn.k_proj": "attention.self.key",
             "self_attn.v_proj": "attention.self.value", "self_attn.out_proj": "attention.output.dense",
             "self_attn_layer_norm": "attention.output.LayerNorm", "fc1": "intermediate.dense",
             "fc2": "output.dense", "final_layer_norm": "output.LayerNorm"}
    for i in range(n_layers):
        for ours, theirs in block.items():
            for p in ("weight", "bias"):
                names[f"layers.{i}.{ours}.{p}"] = f"roberta.encoder.layer.{i}.{theirs}.{p}"
    out = {}
    for src, dst in names.items():
        if PREFIX + src not in state:
            raise UnmaskError(f"not a fairseq RoBERTa state dict (no {PREFIX + src})")
        out[dst] = state[PREFIX + src].float().clone()
    head = {"dense.weight": "lm_head.dense.weight", "dense.bias": "lm_head.dense.bias",
            "layer_norm.weight": "lm_head.layer_norm.weight", "layer_norm.bias": "lm_head.layer_norm.bias",
            "weight": "lm_head.decoder.weight", "bias": "lm_head.bias"}
    for src, dst in head.items():
        key = "decoder.lm_head." + src
        if key not in state:
            raise UnmaskError(f"not a fairseq RoBERTa state dict (no {key})")
        out[dst] = state[key].float().clone()
    used = {PREFIX + k for k in names} | {"decoder.lm_head." + k for k in head}
    unused = sorted(k for k in state if k not in used and not k.endswith("version"))
    if unused:  # e.g. a final layer norm of another architecture: converting without it would be wrong
        raise UnmaskError(f"fairseq state dict has tensors this conversion does not know: {unused[:3]}")
    out["lm_head.decoder.bias"] = out["lm_head.bias"]
    out["roberta.embeddings.token_type_embeddings.weight"] = torch.zeros(1, d)  # fairseq has no segment embedding
    return config, out


def roberta_model(config: dict, state: dict[str, torch.Tensor]):
    """A ``RobertaForMaskedLM`` built from :func:`fairseq_to_roberta`'s output (every tensor loaded, none left over)."""
    from unmask.adapters.hf import _transformers

    tf = _transformers()
    model = tf.RobertaForMaskedLM(tf.RobertaConfig(**config))
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]
    if missing or unexpected:
        raise UnmaskError(f"fairseq conversion left tensors unmatched: missing {missing[:3]}, unexpected {unexpected[:3]}")
    return model.eval()


def convert_fairseq_roberta(checkpoint: str | os.PathLike, dict_txt: str | os.PathLike):
    """``(RobertaForMaskedLM, symbols)`` of a fairseq RoBERTa checkpoint and its ``dict.txt``."""
    state, args = load_fairseq_checkpoint(checkpoint)
    config, hf_state = fairseq_to_roberta(state, args)
    symbols = fairseq_symbols(dict_txt)
    if len(symbols) != config["vocab_size"]:
        raise UnmaskError(f"{Path(dict_txt).name}: {len(symbols)} symbols with specials, the model has {config['vocab_size']}")
    return roberta_model(config, hf_state), symbols
