"""EvolutionaryScale's ESM-C (ESM Team, 2024, "ESM Cambrian") from its own weights file, as transformers' ``EsmcForMaskedLM``.

transformers (5.16 and later) ships ESM-C natively, so a transformers-format ESM-C folder loads with
``--model hf:DIR`` like ESM-2 (:mod:`unmask.adapters.hf`). EvolutionaryScale's released file
(``esmc_300m_2024_12_v0.pth``, a plain state dict of their ``esm`` package's ``ESMC``) is in another key
layout, which transformers does not read: ``--model esmc:FILE`` renames its tensors here, in memory, and
splits the two packed projections (q/k/v and the SwiGLU gate/up), so neither the ``esm`` package nor a
conversion step on disk is needed. The shape (width, layers, FFN width; 64-wide heads) is read from the
tensors, so any size loads. Nothing is downloaded: the user brings the weights file.

The model keeps its own 64-token vocabulary; the protein task maps it onto the 20 residues
(:func:`unmask.tasks.proteins.plm.adapt`) exactly as for an ``hf:`` model.
"""

from __future__ import annotations

import os
import re

import torch

from unmask.errors import UnmaskError

HEAD_DIM = 64  # ESM-C's attention heads are 64 wide (300M: 960 / 15, 600M: 1152 / 18)

# EvolutionaryScale's key → transformers' EsmcForMaskedLM key; {i} is a block index. The packed tensors
# (SPLIT) become several; every other tensor is only renamed.
RENAME = {
    "embed.weight": "esmc.embed_tokens.weight",
    "transformer.norm.weight": "esmc.norm.weight",
    "transformer.blocks.{i}.attn.layernorm_qkv.0.weight": "esmc.layers.{i}.input_layernorm.weight",
    "transformer.blocks.{i}.attn.layernorm_qkv.0.bias": "esmc.layers.{i}.input_layernorm.bias",
    "transformer.blocks.{i}.attn.q_ln.weight": "esmc.layers.{i}.self_attn.q_norm.weight",
    "transformer.blocks.{i}.attn.k_ln.weight": "esmc.layers.{i}.self_attn.k_norm.weight",
    "transformer.blocks.{i}.attn.out_proj.weight": "esmc.layers.{i}.self_attn.o_proj.weight",
    "transformer.blocks.{i}.ffn.0.weight": "esmc.layers.{i}.post_attention_layernorm.weight",
    "transformer.blocks.{i}.ffn.0.bias": "esmc.layers.{i}.post_attention_layernorm.bias",
    "transformer.blocks.{i}.ffn.3.weight": "esmc.layers.{i}.mlp.down_proj.weight",
    "sequence_head.0.weight": "lm_head.dense.weight",  # Linear → GELU → LayerNorm → Linear
    "sequence_head.0.bias": "lm_head.dense.bias",
    "sequence_head.2.weight": "lm_head.layer_norm.weight",
    "sequence_head.2.bias": "lm_head.layer_norm.bias",
    "sequence_head.3.weight": "lm_head.decoder.weight",
    "sequence_head.3.bias": "lm_head.decoder.bias",
}
SPLIT = {  # packed along the output dimension, in this order (q, k, v = chunk(3); SwiGLU's silu(x1) * x2 = gate, up)
    "transformer.blocks.{i}.attn.layernorm_qkv.1.weight": ("esmc.layers.{i}.self_attn.q_proj.weight",
                                                           "esmc.layers.{i}.self_attn.k_proj.weight",
                                                           "esmc.layers.{i}.self_attn.v_proj.weight"),
    "transformer.blocks.{i}.ffn.1.weight": ("esmc.layers.{i}.mlp.gate_proj.weight", "esmc.layers.{i}.mlp.up_proj.weight"),
}
_BLOCK = re.compile(r"transformer\.blocks\.(\d+)\.")


def _transformers():
    try:
        from transformers import EsmcConfig, EsmcForMaskedLM, EsmcTokenizer
    except ImportError as e:
        raise UnmaskError(f"ESM-C needs transformers>=5.16 ({e}): pip install 'unmask[plm]'") from None
    return EsmcConfig, EsmcForMaskedLM, EsmcTokenizer


def esmc_shape(state: dict[str, torch.Tensor]) -> dict[str, int]:
    """The ``EsmcConfig`` sizes of an EvolutionaryScale ESM-C state dict: width, heads, layers, FFN width."""
    if "embed.weight" not in state:
        raise UnmaskError("not an ESM-C state dict (no embed.weight)")
    vocab, d_model = state["embed.weight"].shape  # (64, D)
    layers = {int(m.group(1)) for k in state if (m := _BLOCK.match(k))}
    ffn = state.get("transformer.blocks.0.ffn.1.weight")  # (2 F, D): gate and up, packed
    if not layers or d_model % HEAD_DIM or ffn is None or layers != set(range(len(layers))):
        raise UnmaskError(f"not an ESM-C state dict ({len(layers)} blocks, width {d_model})")
    return {"vocab_size": int(vocab), "hidden_size": int(d_model), "num_attention_heads": int(d_model) // HEAD_DIM,
            "num_hidden_layers": len(layers), "intermediate_size": int(ffn.shape[0]) // 2}


def convert_esmc_state(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """EvolutionaryScale's ESM-C keys → transformers' ``EsmcForMaskedLM`` keys, packed projections split.

    A key that is neither renamed nor split is an error: a file from another model must not half-load.
    """
    out: dict[str, torch.Tensor] = {}
    for key, tensor in state.items():
        m = _BLOCK.match(key)
        pattern = key.replace(m.group(0), "transformer.blocks.{i}.", 1) if m else key
        i = m.group(1) if m else ""
        if pattern in RENAME:
            out[RENAME[pattern].format(i=i)] = tensor
        elif pattern in SPLIT:
            names = SPLIT[pattern]
            for name, part in zip(names, tensor.chunk(len(names), dim=0), strict=True):
                out[name.format(i=i)] = part.clone()  # (out / k, in)
        else:
            raise UnmaskError(f"not an ESM-C state dict (unexpected tensor {key})")
    return out


def load_esmc(path: str | os.PathLike, device: str | torch.device = "cpu", dtype: torch.dtype | None = None):
    """``(EsmcForMaskedLM in eval mode, EsmcTokenizer)`` from EvolutionaryScale's weights file."""
    EsmcConfig, EsmcForMaskedLM, EsmcTokenizer = _transformers()
    if not os.path.isfile(path):
        raise UnmaskError(f"{path}: no ESM-C weights file (unmask never downloads weights)")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        raise UnmaskError(f"{path}: not a torch state dict ({str(e).strip().splitlines()[0][:120]})") from None
    if not isinstance(state, dict):
        raise UnmaskError(f"{path}: not a torch state dict (a {type(state).__name__})")
    config = EsmcConfig(**esmc_shape(state), architectures=["EsmcForMaskedLM"])  # 2,048 rotary positions, as trained
    model = EsmcForMaskedLM(config)
    try:
        model.load_state_dict(convert_esmc_state(state), strict=True)
    except RuntimeError as e:
        raise UnmaskError(f"{path}: does not fit ESM-C ({str(e).strip().splitlines()[0][:120]})") from None
    return model.to(device=device, dtype=dtype).eval(), EsmcTokenizer()
