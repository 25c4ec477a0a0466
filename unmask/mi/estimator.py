"""A light neural estimator of the pairwise MI matrix from frozen denoiser hidden states
(Sharma, Wang, Li 2026, arXiv 2605.20187).

Each position's hidden state h_i ``(D,)`` (optionally with the denoiser's own predicted distribution
P(X_i | C) ``(V,)`` and its entropy beside it: ``n_values``) is mapped by a small MLP to an embedding
e_i ``(r,)``; Î_ij = link(Σ_k w_k e_ik e_jk / √r + b). The bilinear form is symmetric in (i, j) and the link keeps
it non-negative, as MI is. ``relu`` (the default for new heads) can charge a pair exactly 0, so
independent pairs cost nothing; ``softplus`` (the first heads) never reaches 0 and charges every pair
a little (softplus(b)). Cost per step: N·(D'·d + d·r) + N²·r multiply-adds (D' = D, or D + V + 1 with values), a few percent of
one denoiser pass at most.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from unmask import artifacts
from unmask.decode.scores import entropy
from unmask.denoiser import never_mask
from unmask.errors import UnmaskError

HEAD_WEIGHTS = artifacts.MI_HEAD.weights  # saved beside the base model's files
HEAD_CONFIG = artifacts.MI_HEAD.meta


@dataclass
class HeadConfig:
    """Shape of an :class:`MIHead`."""

    d_in: int  # D: width of the denoiser's hidden states
    d_hidden: int = 128  # hidden width of the per-position MLP
    rank: int = 32  # r: embedding size of the symmetric bilinear form
    link: str = "softplus"  # "relu" (exact zeros) or "softplus" (heads saved before the link was a choice)
    n_values: int = 0  # V: width of P(X_i | C) read beside h_i with its entropy (the denoiser's logits); 0 reads h_i alone

    def __post_init__(self) -> None:
        if self.link not in LINKS:
            raise ValueError(f"link must be one of {', '.join(LINKS)}, got {self.link!r}")
        if type(self.n_values) is not int or self.n_values < 0:
            raise ValueError(f"n_values must be an integer >= 0, got {self.n_values!r}")


LINKS = {"relu": F.relu, "softplus": F.softplus}  # score → non-negative MI estimate
BIAS_INIT = {"relu": 0.0, "softplus": -4.0}  # softplus(-4) ≈ 0.018 nats: most pairs carry little MI


def position_mlp(width: int, d_hidden: int, out: int) -> nn.Sequential:
    """The per-position MLP of every MI head: ``(…, width)`` → ``(…, out)``."""
    return nn.Sequential(nn.LayerNorm(width), nn.Linear(width, d_hidden), nn.GELU(), nn.Linear(d_hidden, out))


def predicted_values(logits: torch.Tensor, mask_id: int) -> torch.Tensor:
    """``(…, V)`` logits → the float32 P(X_i | C) an MI head reads: the mask id excluded, as the decode
    loop's ``DecodeState.probs``."""
    return torch.softmax(never_mask(logits.float(), mask_id), dim=-1)


class MIHead(nn.Module):
    """Hidden states ``(B, N, D)`` (and, if ``cfg.n_values``, P(X | C) ``(B, N, V)``) → symmetric
    non-negative MI estimates ``(B, N, N)``."""

    def __init__(self, cfg: HeadConfig) -> None:
        super().__init__()
        self.cfg = cfg
        width = cfg.d_in + (cfg.n_values + 1 if cfg.n_values else 0)  # h_i, then P(X_i | C) and its entropy
        self.mlp = position_mlp(width, cfg.d_hidden, cfg.rank)
        self.weight = nn.Parameter(torch.ones(cfg.rank))
        self.bias = nn.Parameter(torch.tensor(BIAS_INIT[cfg.link]))
        self.link = LINKS[cfg.link]

    def forward(self, hidden: torch.Tensor, probs: torch.Tensor | None = None) -> torch.Tensor:
        """``hidden`` ``(B, N, D)``, ``probs`` ``(B, N, V)`` (:func:`predicted_values`; read only by a head
        with ``n_values``) → ``(B, N, N)``."""
        if hidden.shape[-1] != self.cfg.d_in:
            raise UnmaskError(f"this MI head reads hidden states of width {self.cfg.d_in}, the model gives {hidden.shape[-1]}: "
                              "it was trained for another model")
        x = hidden
        if self.cfg.n_values:
            if probs is None or probs.shape != (*hidden.shape[:-1], self.cfg.n_values):
                got = "none" if probs is None else f"shape {tuple(probs.shape)} for hidden states {tuple(hidden.shape)}"
                raise UnmaskError(f"this MI head reads P(X | C) over {self.cfg.n_values} values beside the hidden states, "
                                  f"got {got}")
            probs = probs.to(hidden)  # (its dtype and device)
            x = torch.cat([hidden, probs, entropy(probs)[..., None]], -1)  # (B, N, D + V + 1)
        e = self.mlp(x)  # (B, N, r)
        s = torch.bmm(e * self.weight, e.transpose(1, 2)) / math.sqrt(self.cfg.rank)  # (B, N, N)
        return self.link(s + self.bias)

    def num_parameters(self) -> int:
        """Trainable parameter count."""
        return sum(p.numel() for p in self.parameters())


def save_head(head: MIHead, directory: str | os.PathLike, extra: dict | None = None,
              base: str | os.PathLike | None = None) -> None:
    """Write ``mi_head.safetensors`` + ``mi_head.json`` (with ``extra`` metrics) atomically; ``base``: the
    weights (a model folder or file) it was trained for, recorded so that any other model is refused."""
    record = {} if base is None else {artifacts.BASE_SHA256: artifacts.model_digest(base)}
    artifacts.save(directory, artifacts.MI_HEAD, head.state_dict(), head.cfg, {**(extra or {}), **record})


def load_head(directory: str | os.PathLike, required: bool = True, base: str | os.PathLike | None = None,
              named: bool = False) -> MIHead | None:
    """Load the MI head saved in ``directory`` (None if absent and not ``required``).

    ``base``: the weights of the model it will read (a model folder or file); a head trained for
    another model is refused (:func:`unmask.artifacts.check_base`); ``named`` (a folder given on its own,
    away from its model): so is one that records no base model.
    """
    if not required and not artifacts.exists(directory, artifacts.MI_HEAD):
        return None
    meta = artifacts.read_meta(directory, artifacts.MI_HEAD)
    artifacts.check_base(meta, directory, artifacts.MI_HEAD, base, required=named)
    head = MIHead(artifacts.build_config(HeadConfig, meta["config"], Path(directory) / HEAD_CONFIG))
    artifacts.load_state(head, artifacts.load_tensors(directory, artifacts.MI_HEAD), Path(directory) / HEAD_WEIGHTS)
    return head.eval()
