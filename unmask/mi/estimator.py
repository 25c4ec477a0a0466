"""A light neural estimator of the pairwise MI matrix from frozen denoiser hidden states (seed 000).

Each position's hidden state h_i ``(D,)`` is mapped by a small MLP to an embedding e_i ``(r,)``;
Î_ij = softplus(Σ_k w_k e_ik e_jk / √r + b). The bilinear form is symmetric in (i, j) and the
softplus keeps it non-negative, as MI is. Cost per step: N·(D·d + d·r) + N²·r multiply-adds,
a few percent of one denoiser pass at most.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from unmask.errors import UnmaskError
from unmask.io import atomic_write

HEAD_WEIGHTS = "mi_head.safetensors"  # saved beside the base model's files
HEAD_CONFIG = "mi_head.json"


@dataclass
class HeadConfig:
    """Shape of an :class:`MIHead`."""

    d_in: int  # D: width of the denoiser's hidden states
    d_hidden: int = 128  # hidden width of the per-position MLP
    rank: int = 32  # r: embedding size of the symmetric bilinear form


class MIHead(nn.Module):
    """Hidden states ``(B, N, D)`` → symmetric non-negative MI estimates ``(B, N, N)``."""

    def __init__(self, cfg: HeadConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.mlp = nn.Sequential(nn.LayerNorm(cfg.d_in), nn.Linear(cfg.d_in, cfg.d_hidden), nn.GELU(), nn.Linear(cfg.d_hidden, cfg.rank))
        self.weight = nn.Parameter(torch.ones(cfg.rank))
        self.bias = nn.Parameter(torch.tensor(-4.0))  # softplus(-4) ≈ 0.018 nats: most pairs carry little MI

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        e = self.mlp(hidden)  # (B, N, r)
        s = torch.bmm(e * self.weight, e.transpose(1, 2)) / math.sqrt(self.cfg.rank)  # (B, N, N)
        return F.softplus(s + self.bias)

    def num_parameters(self) -> int:
        """Trainable parameter count."""
        return sum(p.numel() for p in self.parameters())


def save_head(head: MIHead, directory: str | os.PathLike, extra: dict | None = None) -> None:
    """Write ``mi_head.safetensors`` + ``mi_head.json`` (with ``extra`` metrics) atomically."""
    from safetensors.torch import save_file

    d = Path(directory)
    state = {k: v.detach().contiguous() for k, v in head.state_dict().items()}
    atomic_write(d / HEAD_WEIGHTS, lambda p: save_file(state, p))
    meta = {"config": asdict(head.cfg), **(extra or {})}
    atomic_write(d / HEAD_CONFIG, lambda p: Path(p).write_text(json.dumps(meta, indent=2) + "\n"))


def load_head(directory: str | os.PathLike, required: bool = True) -> MIHead | None:
    """Load the MI head saved in a model directory (None if absent and not ``required``)."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    d = Path(directory)
    if not (d / HEAD_CONFIG).is_file():
        if required:
            raise UnmaskError(f"{d}: no MI head ({HEAD_CONFIG}); train one with `unmask mi train`")
        return None
    try:
        cfg = HeadConfig(**json.loads((d / HEAD_CONFIG).read_text())["config"])
        head = MIHead(cfg)
        head.load_state_dict(load_file(d / HEAD_WEIGHTS))
    except (json.JSONDecodeError, KeyError, TypeError, SafetensorError, OSError, RuntimeError) as e:
        raise UnmaskError(f"{d}: unreadable MI head ({type(e).__name__}: {str(e)[:120]})") from None
    return head.eval()
