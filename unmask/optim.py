"""The one optimiser and learning-rate schedule every trainer uses (MDM, MI head, order policy).

AdamW (Loshchilov & Hutter 2019) with weight decay on the weight matrices of linear layers only,
chosen by module type as in nanoGPT: norms, biases, embeddings and free parameters (positions,
gates) are not decayed. The schedule is a linear warm-up then a cosine decay to a floor.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn

DECAYED = (nn.Linear,)  # modules whose ``weight`` is decayed


def param_groups(module: nn.Module, weight_decay: float) -> list[dict]:
    """Two AdamW groups, in ``named_parameters`` order: decayed linear weights, then the rest."""
    decayed = {id(m.weight) for m in module.modules() if isinstance(m, DECAYED)}
    params = [p for p in module.parameters() if p.requires_grad]
    return [
        {"params": [p for p in params if id(p) in decayed], "weight_decay": weight_decay},
        {"params": [p for p in params if id(p) not in decayed], "weight_decay": 0.0},
    ]


def adamw(module: nn.Module, lr: float, weight_decay: float = 0.0,
          betas: tuple[float, float] = (0.9, 0.999)) -> torch.optim.AdamW:
    """AdamW over ``module``'s trainable parameters with :func:`param_groups`."""
    return torch.optim.AdamW(param_groups(module, weight_decay), lr=lr, betas=betas)


def warmup_cosine(step: int, total: int, peak: float, warmup: int = 0, min_ratio: float = 0.1) -> float:
    """Learning rate at ``step`` (0-based): linear warm-up over ``warmup`` steps, then cosine from
    ``peak`` down to ``min_ratio · peak`` at ``total``."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def set_lr(opt: torch.optim.Optimizer, lr: float) -> None:
    """Set every parameter group's learning rate."""
    for group in opt.param_groups:
        group["lr"] = lr
