"""A light neural estimator of the pairwise MI matrix from frozen denoiser hidden states (seed 000).

Each position's hidden state h_i ``(D,)`` is mapped by a small MLP to an embedding e_i ``(r,)``;
Î_ij = link(Σ_k w_k e_ik e_jk / √r + b). The bilinear form is symmetric in (i, j) and the link keeps
it non-negative, as MI is. ``relu`` (the default for new heads) can charge a pair exactly 0, so
independent pairs cost nothing; ``softplus`` (the first heads) never reaches 0 and charges every pair
a little (softplus(b)). Cost per step: N·(D·d + d·r) + N²·r multiply-adds, a few percent of one
denoiser pass at most.
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

HEAD_WEIGHTS = artifacts.MI_HEAD.weights  # saved beside the base model's files
HEAD_CONFIG = artifacts.MI_HEAD.meta


@dataclass
class HeadConfig:
    """Shape of an :class:`MIHead`."""

    d_in: int  # D: width of the denoiser's hidden states
    d_hidden: int = 128  # hidden width of the per-position MLP
    rank: int = 32  # r: embedding size of the symmetric bilinear form
    link: str = "softplus"  # "relu" (exact zeros) or "softplus" (heads saved before the link was a choice)

    def __post_init__(self) -> None:
        if self.link not in LINKS:
            raise ValueError(f"link must be one of {', '.join(LINKS)}, got {self.link!r}")


LINKS = {"relu": F.relu, "softplus": F.softplus}  # score → non-negative MI estimate
BIAS_INIT = {"relu": 0.0, "softplus": -4.0}  # softplus(-4) ≈ 0.018 nats: most pairs carry little MI


def position_mlp(width: int, d_hidden: int, out: int) -> nn.Sequential:
    """The per-position MLP of every MI head: ``(…, width)`` → ``(…, out)``."""
    return nn.Sequential(nn.LayerNorm(width), nn.Linear(width, d_hidden), nn.GELU(), nn.Linear(d_hidden, out))


class MIHead(nn.Module):
    """Hidden states ``(B, N, D)`` → symmetric non-negative MI estimates ``(B, N, N)``."""

    def __init__(self, cfg: HeadConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.mlp = position_mlp(cfg.d_in, cfg.d_hidden, cfg.rank)
        self.weight = nn.Parameter(torch.ones(cfg.rank))
        self.bias = nn.Parameter(torch.tensor(BIAS_INIT[cfg.link]))
        self.link = LINKS[cfg.link]

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        e = self.mlp(hidden)  # (B, N, r)
        s = torch.bmm(e * self.weight, e.transpose(1, 2)) / math.sqrt(self.cfg.rank)  # (B, N, N)
        return self.link(s + self.bias)

    def num_parameters(self) -> int:
        """Trainable parameter count."""
        return sum(p.numel() for p in self.parameters())


def save_head(head: MIHead, directory: str | os.PathLike, extra: dict | None = None) -> None:
    """Write ``mi_head.safetensors`` + ``mi_head.json`` (with ``extra`` metrics) atomically."""
    artifacts.save(directory, artifacts.MI_HEAD, head.state_dict(), head.cfg, extra)


def load_head(directory: str | os.PathLike, required: bool = True) -> MIHead | None:
    """Load the MI head saved in a model directory (None if absent and not ``required``)."""
    if not required and not artifacts.exists(directory, artifacts.MI_HEAD):
        return None
    meta = artifacts.read_meta(directory, artifacts.MI_HEAD)
    head = MIHead(artifacts.build_config(HeadConfig, meta["config"], Path(directory) / HEAD_CONFIG))
    artifacts.load_state(head, artifacts.load_tensors(directory, artifacts.MI_HEAD), Path(directory) / HEAD_WEIGHTS)
    return head.eval()
