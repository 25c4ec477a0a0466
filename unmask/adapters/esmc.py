"""EvolutionaryScale's ESM-C (ESM Team, 2024) from a local weights file, behind the Denoiser interface.

``--model esmc:FILE`` loads ``FILE`` (e.g. ``esmc_300m_2024_12_v0.pth``, a plain state dict) into the
``esm`` package's ``ESMC``; the shape (width, layers; 64-dimensional heads) is read from the tensors,
so any size loads. ``esm`` pins an old transformers and pulls a CUDA torch, so install it with
``pip install --no-deps esm`` plus its real needs (``pip install 'unmask[esmc]'`` lists them).
Nothing is downloaded: the user brings the weights file.

:class:`ESMCDenoiser` runs the model over its own 64-token vocabulary; the protein task maps it
onto the 20 residues (:func:`unmask.tasks.proteins.plm.adapt`) through :class:`ESMCForward`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import torch

from unmask.denoiser import DenoiserOutput
from unmask.errors import UnmaskError

HEAD_DIM = 64  # ESM-C's attention heads are 64 wide (300M: 960 / 15, 600M: 1152 / 18)


def _esm():
    try:
        from esm.models.esmc import ESMC
        from esm.tokenization import get_esmc_model_tokenizers
    except ImportError as e:
        raise UnmaskError(f"ESM-C needs the esm package ({e}): pip install --no-deps esm, "
                          "then pip install 'unmask[esmc]'") from None
    return ESMC, get_esmc_model_tokenizers


def esmc_shape(state: dict[str, torch.Tensor]) -> dict[str, int]:
    """``d_model``, ``n_heads``, ``n_layers`` of an ESM-C state dict."""
    if "embed.weight" not in state:
        raise UnmaskError("not an ESM-C state dict (no embed.weight)")
    d_model = int(state["embed.weight"].shape[1])
    layers = {int(m.group(1)) for k in state if (m := re.match(r"transformer\.blocks\.(\d+)\.", k))}
    if not layers or d_model % HEAD_DIM:
        raise UnmaskError(f"not an ESM-C state dict ({len(layers)} blocks, width {d_model})")
    return {"d_model": d_model, "n_heads": d_model // HEAD_DIM, "n_layers": len(layers)}


def build_esmc(d_model: int, n_heads: int, n_layers: int):
    """A randomly initialised ESM-C of this shape (tests; the real weights are loaded into it)."""
    ESMC, tokenizers = _esm()
    return ESMC(d_model=d_model, n_heads=n_heads, n_layers=n_layers, tokenizer=tokenizers(), use_flash_attn=False)


def load_esmc(path: str | os.PathLike, device: str | torch.device = "cpu"):
    """``(ESMC model in eval mode, its sequence tokenizer)`` from a weights file."""
    if not os.path.isfile(path):
        raise UnmaskError(f"{path}: no ESM-C weights file (unmask never downloads weights)")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        raise UnmaskError(f"{path}: not a torch state dict ({str(e).strip().splitlines()[0][:120]})") from None
    model = build_esmc(**esmc_shape(state))
    try:
        model.load_state_dict(state)
    except RuntimeError as e:
        raise UnmaskError(f"{path}: does not fit ESM-C ({str(e).strip().splitlines()[0][:120]})") from None
    return model.to(device).eval(), model.tokenizer


@dataclass(frozen=True)
class ESMCForward:
    """ESM-C's forward pass: sequence logits and the final embeddings; pads excluded through ``sequence_id``."""

    module: torch.nn.Module  # the ESMC model

    def __call__(self, ids: torch.Tensor, attention: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.module(sequence_tokens=ids, sequence_id=attention)
        return out.sequence_logits, out.embeddings


class ESMCDenoiser:
    """ESM-C over its own vocabulary (BOS / EOS are the caller's); :func:`unmask.tasks.proteins.plm.adapt`
    puts it behind the protein task's ids."""

    def __init__(self, model, tokenizer, device: str | torch.device = "cpu") -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.vocab_size = int(model.embed.num_embeddings)  # 64 (tokens and padding slots)
        self.mask_id = int(tokenizer.mask_token_id)
        self.device = torch.device(device)

    @torch.no_grad()
    def __call__(self, tokens: torch.Tensor) -> DenoiserOutput:
        tokens = tokens.to(self.device)
        logits, hidden = ESMCForward(self.model)(tokens, tokens != self.tokenizer.pad_token_id)
        return DenoiserOutput(logits.float(), hidden.float())  # (B, L, 64), (B, L, D)
